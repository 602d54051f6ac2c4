"""One run per folder: the lock file a run holds in its model folder for as long as it writes there.

The lock is `run.lock`, created with O_CREAT | O_EXCL (atomic on a local disk and on NFS 3 or later, so two runs started
together cannot both get it) and holding {host, pid, started, command}. A lock whose holder no longer runs is stale and
is taken over with a note:

- a holder on this host is gone when its pid no longer exists, is a zombie, or is another process than the one recorded
  (the pid was reused, or the machine rebooted);
- a holder on another host (a shared file system) cannot be asked: while it runs it touches the lock every
  HEARTBEAT_SECONDS, and a lock untouched for STALE_SECONDS (10 heartbeats) is stale. That compares the file's time with
  this host's clock, so the hosts' clocks must agree within a few minutes.

A lock file without a readable record (its writer died between creating and filling it) is stale once HEARTBEAT_SECONDS
old. A run removes its lock when it ends, normally, by an error or by a stop (SIGTERM, Ctrl-C: one that comes while the
lock is made or removed waits until that is done, `signals_held`). The run that takes the folder removes the checkpoints
a dead run left half-written there.
"""

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sys
import threading
import time

LOCK_FILE = "run.lock"
HEARTBEAT_SECONDS = 30
STALE_SECONDS = 10 * HEARTBEAT_SECONDS
PID_MAX = 2**31 - 1  # the largest pid_t
UNFINISHED_CHECKPOINT = re.compile(r"ckpt-\d+_temp$")  # zoo.runs.checkpoints' names, as TensorFlow writes them


class RunLockError(ValueError):
    """The folder's lock cannot be taken: another run that still runs holds it (named in the message),
    or the folder cannot be written."""


def _proc_stat(pid):
    """(state, start time in clock ticks after boot) of process `pid` from /proc, or None without /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "pid (command)", which may hold spaces
        return fields[0], int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _boot_id():
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()
    return None


def pid_runs(pid):
    """Whether this host has a process `pid` that is not a zombie (it may be a later one with a reused pid)."""
    if not 0 < pid <= PID_MAX:
        return False  # no process has it (os.kill would overflow past PID_MAX)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    stat = _proc_stat(pid)
    return stat is None or stat[0] != "Z"


def _runs(record):
    """Whether the process `record` names (one of this host's) still runs."""
    if record.get("boot") != _boot_id() or not pid_runs(record["pid"]):
        return False  # the machine rebooted since, or the process is gone
    stat = _proc_stat(record["pid"])
    return stat is None or record.get("process_start") in (None, stat[1])


def _record(content):
    """The holder's record in a lock file's content, or None where it holds none."""
    try:
        record = json.loads(content)
    except ValueError:
        return None
    valid = isinstance(record, dict) and isinstance(record.get("host"), str) and isinstance(record.get("pid"), int)
    return record if valid and record["pid"] > 0 else None


def _process(record):
    return f"process {record['pid']} on {record['host']}"


def own_record():
    """What this process's lock holds: who, since when, and how to tell it from a later process."""
    pid = os.getpid()
    stat = _proc_stat(pid)
    return {"host": socket.gethostname(), "pid": pid, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv]), "boot": _boot_id(),
            "process_start": stat[1] if stat else None}


@contextlib.contextmanager
def signals_held(signums=(signal.SIGTERM, signal.SIGINT)):
    """SIGTERM and SIGINT wait for the end of the block, then come as they would have (to the handlers before it:
    zoo.training.stopping's `Stopped`, KeyboardInterrupt, or the end of the process), so that a lock file is made
    or removed whole. Off the main thread, where Python cannot set handlers, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came = []
    before = {signum: signal.signal(signum, lambda signum, frame: came.append(signum)) for signum in signums}
    try:
        yield
    finally:
        for signum, previous in before.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)  # None: set outside Python
        for signum in dict.fromkeys(came):
            signal.raise_signal(signum)


class RunLock:
    """The lock of `folder` (which must exist): `acquire()` takes it or raises RunLockError, and
    keeps it fresh from a daemon thread until `release()`; also a context manager."""

    def __init__(self, folder, heartbeat_seconds=HEARTBEAT_SECONDS, stale_seconds=STALE_SECONDS, log=print):
        self.folder, self.path = folder, os.path.join(folder, LOCK_FILE)
        self.heartbeat_seconds, self.stale_seconds, self.log = heartbeat_seconds, stale_seconds, log
        self.written, self.stop, self.thread = None, threading.Event(), None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *error):
        self.release()

    def acquire(self):
        for _ in range(3):  # a stale lock is removed, then created afresh: another run may win that race
            created = False
            try:
                with signals_held():  # a stop (SIGTERM, Ctrl-C) comes once the lock file is whole, and removes it
                    descriptor = self._create()
                    if descriptor is None:
                        continue
                    created = True
                    self._fill(descriptor)
                self._remove_unfinished_checkpoints()
            except BaseException:  # a stop or an error before the `with` block holds the lock: nothing will release it
                if created:
                    self._abandon()
                raise
            return
        raise RunLockError(f"{self.folder} is being taken by other runs just now: use another --model_dir, "
                           "or run again once they have started.")

    def release(self):
        """Stops the heartbeat and removes the lock, if it is still this run's."""
        with signals_held():
            self._stop_heartbeat()
            with contextlib.suppress(FileNotFoundError):
                with open(self.path, "rb") as f:
                    ours = f.read() == self.written
                if ours:
                    os.remove(self.path)

    def _create(self):
        """The descriptor of the lock file, created new; None where one was there (and taken over if stale)."""
        try:
            return os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            self._take_over_if_stale()
            return None
        except OSError as error:
            raise RunLockError(f"Cannot create {self.path} ({error.strerror}): give a --model_dir this user can write "
                               "to.") from None

    def _fill(self, descriptor):
        """Writes this run's record into the new lock file `descriptor` and starts the heartbeat."""
        with os.fdopen(descriptor, "wb") as f:
            self.written = json.dumps(own_record()).encode()
            f.write(self.written)
            f.flush()
            os.fsync(f.fileno())
        self.thread = threading.Thread(target=self._beat, name="run-lock-heartbeat", daemon=True)
        self.thread.start()

    def _abandon(self):
        """Removes the lock this run created but did not finish taking, whatever it holds so far."""
        with signals_held():
            with contextlib.suppress(OSError):
                os.remove(self.path)
            self._stop_heartbeat()

    def _stop_heartbeat(self):
        self.stop.set()
        if self.thread is not None and self.thread.ident is not None:  # started (a thread that could not start: no)
            self.thread.join()

    def _remove_unfinished_checkpoints(self):
        """Removes the `ckpt-N_temp/` folders TensorFlow writes a checkpoint into (and removes once it is
        complete): with the lock taken no other run writes here, so those are of a run that died writing. A
        `ckpt-N.index` beside such a folder that does not read through is that same cut write (TensorFlow writes
        the index last, not atomically): its files are set aside (zoo.runs.checkpoints.set_aside, never deleted),
        so the run continues from the checkpoint before it, or from the start, instead of refusing a folder whose
        only fault is a stop mid-write."""
        for name in sorted(os.listdir(self.folder)):
            path = os.path.join(self.folder, name)
            if UNFINISHED_CHECKPOINT.match(name) and os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
                self.log(f"Note: removed {path}, a checkpoint that a run which ended did not finish writing.")
                prefix = path[: -len("_temp")]
                if os.path.exists(f"{prefix}.index"):
                    from zoo.runs import checkpoints  # TensorFlow's reader: only when a cut write is found

                    if checkpoints.unreadable_reason(prefix) is not None:
                        checkpoints.set_aside([prefix], self.folder, log=self.log)

    def _beat(self):
        while not self.stop.wait(self.heartbeat_seconds):
            with contextlib.suppress(OSError):  # the folder is gone or unreachable: the run's own writes will say so
                os.utime(self.path)

    def _take_over_if_stale(self):
        """Removes the lock if its holder no longer runs (with a note), else raises RunLockError."""
        try:
            with open(self.path, "rb") as f:
                content = f.read()
            age = time.time() - os.stat(self.path).st_mtime
        except FileNotFoundError:
            return  # released meanwhile
        except IsADirectoryError:
            raise RunLockError(f"{self.path} is a folder, not a lock file (no run makes one): remove it, or move it "
                               "away, then run again.") from None
        except OSError as error:
            raise RunLockError(f"Cannot read {self.path}, another run's lock ({error.strerror}): give this user read "
                               "access to it, or use another --model_dir.") from None
        record = _record(content)
        why = self._stale(record, age)
        if why is None:
            raise RunLockError(self._in_use(record))
        try:
            with open(self.path, "rb") as f:  # still the lock judged stale, not one created since
                if f.read() != content:
                    return
            os.remove(self.path)
        except FileNotFoundError:
            return  # another run took it over first
        since = f" (since {record['started']})" if record and record.get("started") else ""
        holder = f"{_process(record)}{since}" if record else "a run"
        self.log(f"Note: took over {self.folder} from {holder}, {why}.")

    def _stale(self, record, age):
        """Why the lock is stale, or None while its holder may still run."""
        if record is None:  # its writer fills it within moments of creating it
            return f"whose lock file was left unreadable {age:.0f} s ago" if age > self.heartbeat_seconds else None
        if record["host"] == socket.gethostname():
            return None if _runs(record) else "which no longer runs"
        if age > self.stale_seconds:
            return f"whose lock has not been refreshed for {age:.0f} s"
        return None

    def _in_use(self, record):
        if record is None:
            return (f"{self.folder} is being taken by another run just now ({self.path} is being written): use "
                    "another --model_dir, or run again in a minute.")
        command = " ".join(str(record.get("command") or "").split())  # one line, whatever the flags held
        command = command if len(command) <= 160 else command[:157] + "..."
        since = f", since {record['started']}" if record.get("started") else ""
        return (f"{self.folder} is in use by another run: {_process(record)}{since}{f' ({command})' if command else ''}"
                ". Let it finish (or stop it), or use another --model_dir.")
