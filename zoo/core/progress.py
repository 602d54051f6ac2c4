"""Progress for long-running work: Keras's bar on a terminal, plain lines in logs; `ByteMeter` for passes over text."""

import sys
import time

import keras


class Progress:
    """`update(current, values)` shows progress towards `target`: on a terminal keras.utils.Progbar; when output goes
    to a file or a CI log, a line at most every `min_interval` seconds (and at the end), so logs stay readable."""

    def __init__(self, target, unit="step", min_interval=5.0):
        self.target, self.unit, self.min_interval = target, unit, min_interval
        self.bar = None
        if sys.stdout.isatty():
            self.bar = keras.utils.Progbar(target, unit_name=unit, stateful_metrics=["loss", "lr", "tokens/s"])
        self.start = self.last = time.time()

    def update(self, current, values=()):
        if self.bar is not None:
            self.bar.update(current, list(values))
            return
        now = time.time()
        if now - self.last < self.min_interval and current != self.target:
            return
        self.last = now
        shown = " - ".join(f"{name}: {value:.4g}" for name, value in values)
        total = f"/{self.target}" if self.target else ""
        print(f"{self.unit} {current}{total} ({now - self.start:.0f}s) {shown}".rstrip(), flush=True)


class ByteMeter:
    """A pass over text's progress (the token cache's tokenizing): MB done, MB/s and time left, every few seconds."""

    def __init__(self, description, total_bytes=None, every=5.0):
        self.description, self.total, self.every = description, total_bytes, every
        self.bytes, self.start = 0, time.time()
        self.last = self.start

    def seconds(self):
        return time.time() - self.start

    def add(self, size):
        self.bytes += size
        now = time.time()
        if now - self.last >= self.every:
            self.last = now
            print(self.line(), file=sys.stderr, flush=True)

    def line(self):
        seconds = max(self.seconds(), 1e-9)
        rate = self.bytes / seconds / 1e6
        done = f"{self.bytes / 1e6:.1f}"
        if self.total:
            left = max(self.total - self.bytes, 0) / max(self.bytes / seconds, 1)
            done += f"/{self.total / 1e6:.1f} MB, {rate:.1f} MB/s, {left:.0f}s left"
        else:
            done += f" MB, {rate:.1f} MB/s"
        return f"{self.description}: {done}"

    def done(self):
        if self.seconds() >= self.every:
            print(self.line().split(",")[0] + f" in {self.seconds():.0f}s", file=sys.stderr, flush=True)
