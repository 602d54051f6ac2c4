"""TensorFlow's own log lines out of the terminal of a multi-worker run.

When a worker of a multi-worker job stops, TensorFlow's C++ runtime writes dozens of lines (the
coordination service's missed heartbeats, aborted collectives, gRPC errors) to standard error, and
the one `error:` line that says what happened and what to do drowns in them. A multi-worker run
therefore points file descriptor 2, where that C++ code writes, at a log file of its own, while
Python's `sys.stderr` (the recipes' `error:` lines, warnings) keeps the terminal. Python log records
(absl's handler holds the stream it started with) go to the file too: they are TensorFlow's. The file
is kept and named when the run fails, and removed when it ends well. (A run of one process shows fatal
C++ lines alone, `recipes/__init__.py`; a multi-worker job keeps them all, for the failure they may explain.)
"""

import os
import re
import sys
import tempfile


class NativeLog:
    """File descriptor 2 diverted to `path` (made if missing) until `close`."""

    def __init__(self, path):
        self.path = path
        sys.stdout.flush()
        sys.stderr.flush()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.terminal = os.dup(2)
        os.dup2(descriptor, 2)
        os.close(descriptor)
        self.python_stderr = sys.stderr
        sys.stderr = os.fdopen(os.dup(self.terminal), "w", buffering=1, errors="backslashreplace")
        self.open = True

    def close(self, keep):
        """Points descriptor 2 back at the terminal; removes the file unless `keep`. Returns the path
        when the file was kept and holds anything, else None."""
        sys.stderr.flush()
        os.dup2(self.terminal, 2)
        os.close(self.terminal)
        sys.stderr.close()
        sys.stderr = self.python_stderr
        self.open = False
        if keep and os.path.exists(self.path) and os.path.getsize(self.path):
            return self.path
        try:
            os.remove(self.path)
        except OSError:
            pass
        return None


def worker_log_path(recipe, task):
    """The log file of this worker: in the temporary folder (only the chief writes in the model folder),
    named by recipe, task ("/job:worker/task:1" -> worker-1) and process id."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", (task or "").replace("/job:", "").replace("/task:", "-")).strip("-")
    return os.path.join(tempfile.gettempdir(), f"zoo-{recipe}-{name or 'task'}-{os.getpid()}.log")
