"""SIGTERM (a scheduler taking the machine back) and SIGINT (Ctrl-C) stop a run cleanly, as tf.distribute's
PreemptionCheckpointHandler promises: while the loop trains they are noted (`noting_stop_signals`), and once
the call of the loop under way ends every worker saves a checkpoint of the step reached and raises `Stopped`;
elsewhere they raise `Stopped` at once (`stop_on_signals`)."""

import contextlib
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(BaseException):
    """SIGTERM or SIGINT stopped the run. A BaseException, as KeyboardInterrupt is, so that no `except Exception`
    on its way out takes it for an error of its own. `step`: the step the training loop stopped at, its
    checkpoint saved (None: stopped outside the loop); `peer`: the signal came to another worker of the job."""

    def __init__(self, signum, step=None, peer=False):
        self.signum, self.step, self.peer = signum, step, peer
        name = signal.Signals(signum).name
        if step is None:
            message = f"stopped by {name}; run again to continue (training resumes from its last checkpoint)"
        else:
            by = f"another worker's {name}" if peer else name
            message = f"stopped at step {step} by {by}; the checkpoint is saved; run again to resume"
        super().__init__(message)

    @property
    def status(self):
        """The exit status a shell gives a process this signal ended (143, 130): a stopped run has not finished."""
        return 128 + self.signum


@contextlib.contextmanager
def _handling_stop_signals(handler):
    """`handler` for SIGTERM and SIGINT inside the `with` block, the handlers before it after it; off the main
    thread (where Python cannot set them) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, previous in before.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)  # None: set outside Python


def _raise_stopped(signum, frame):
    raise Stopped(signum)


def stop_on_signals():
    """A context in which SIGTERM and SIGINT raise `Stopped` wherever the run is, as Ctrl-C raises
    KeyboardInterrupt: the run ends through its `finally` blocks and context managers (its folder's lock
    released) instead of dying at once. While `Trainer.train` trains, they are noted instead."""
    return _handling_stop_signals(_raise_stopped)


@contextlib.contextmanager
def noting_stop_signals():
    """A context in which SIGTERM and SIGINT are noted in the list it yields, for the training loop to stop
    at the end of its call; a second SIGINT raises `Stopped` at once (Ctrl-C twice: without waiting for the
    checkpoint). One noted and not acted on by the end of the block raises `Stopped` then."""
    noted = []

    def note(signum, frame):
        if noted and signum == signal.SIGINT:
            raise Stopped(signum)
        noted.append(signum)

    with _handling_stop_signals(note):
        yield noted
    if noted:
        raise Stopped(noted[0])
