"""The token cache's staging folders (zoo.data.cache), each held by a lock for as long as its writer lives, so that the
next run removes those of writers that died (kill -9, a crash, a reboot) and leaves those of writers still at work: a
folder's writer is known dead by its lock, not guessed from the folder's age.

A writer takes an exclusive flock(2) on `<folder>.lock` before it makes `<folder>`, and removes the folder before it
lets the lock go. The kernel lets go of a dead process's locks (over NFS, the server, once the client is gone), so a
staging folder whose lock can be taken has no writer. A folder left by a zoo from before these locks has no lock file:
it is removed once nothing in it has changed for STALE_SECONDS (a writer adds to its files every few seconds).
"""

import contextlib
import fcntl
import os
import re
import shutil
import sys
import time
import uuid

LOCK = ".lock"
NAME = re.compile(r"\.[0-9a-f]{32}\.(damaged-)?[0-9a-f]{32}")  # `.<entry>.<writer>`: nothing else is touched
STALE_SECONDS = 3600


class Staging:
    """A new folder `.<name>.<unique>` in `root` for one writer, held by its lock until `release`."""

    def __init__(self, root, name):
        self.path = os.path.join(root, f".{name}.{uuid.uuid4().hex}")
        self.lock = open(self.path + LOCK, "xb")
        with contextlib.suppress(OSError):  # a file system without locks: the folder is then never taken as dead
            fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            os.makedirs(self.path)
        except OSError:
            self.release()
            raise

    def release(self):
        """Removes the folder (unless it was renamed into place), then its lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.remove(self.path + LOCK)
        self.lock.close()


def remove_dead(root):
    """Removes the staging folders in `root` that no living writer holds (and lock files left alone), each with a
    line on stderr."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        path = os.path.join(root, name.removesuffix(LOCK))
        if NAME.fullmatch(os.path.basename(path)) and (name.endswith(LOCK) or not os.path.exists(path + LOCK)):
            _remove_if_dead(path)


def _remove_if_dead(path):
    try:
        lock = open(path + LOCK, "rb")
    except FileNotFoundError:  # a folder of an older zoo (or its writer ended just now)
        if os.path.isdir(path) and time.time() - _last_change(path) > STALE_SECONDS:
            _remove(path, f"unchanged for {STALE_SECONDS // 60} minutes")
        return
    except OSError:
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its writer is at work (or this file system has no locks: no telling)
            return
        if os.path.isdir(path):
            _remove(path, "its writer ended before finishing it")
        with contextlib.suppress(OSError):
            os.remove(path + LOCK)


def _remove(path, why):
    print(f"token cache: removed {path}, a half-written entry ({why}).", file=sys.stderr, flush=True)
    shutil.rmtree(path, ignore_errors=True)


def _last_change(path):
    """The newest modification time of a folder and the files in it (now, if they change as it looks)."""
    try:
        return max(os.path.getmtime(os.path.join(folder, name)) for folder, _, names in os.walk(path)
                   for name in [".", *names])
    except (OSError, ValueError):
        return time.time()
