"""Progress for long-running work: Keras's bar on a terminal, plain lines in logs."""

import sys
import time

import keras


class Progress:
    """`update(current, values)` shows progress towards `target`.

    On a terminal this is keras.utils.Progbar; when output goes to a file or a
    CI log, a line per update at most every `min_interval` seconds (and at the
    end), so logs stay readable.
    """

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
