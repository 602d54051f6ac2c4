"""A study journal (Optuna's JournalFileBackend: one JSON record a line, appended under its lock file) checked
before Optuna reads it, so that damage is one line naming the file instead of Optuna's own words. A folder, a path
in no folder, or a file whose complete lines are not all journal records (random bytes, a CSV ...) is refused,
naming the line. A last line cut short (what a kill during a write leaves: Optuna writes each batch of records in
one write) is set aside into `<journal>.damaged-N`, under Optuna's own lock, so that a line another worker is
writing at that moment is not taken for a cut one; the journal goes on from the records before it.
"""

import itertools
import json
import os

from zoo.sweeps.folder import FolderError

DAMAGED = ".damaged-"
LOCK_SUFFIX = ".lock"  # JournalFileSymlinkLock's lock file: <journal>.lock


def check(path, flag):
    """Checks the journal file `path` (given by `flag`, e.g. "--storage"), repairing a cut last line."""
    if os.path.isdir(path):
        raise FolderError(f"{flag}={path} is a folder: name the study's journal file (made if missing), or an RDB "
                          "URL such as sqlite:///sweeps/a.db.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FolderError(f"{flag}={path} is in {folder}, which is not a folder: name a journal file in a folder "
                          "that exists.")
    if not os.path.isfile(path):
        if os.path.exists(path):
            raise FolderError(f"{flag}={path} is not a file: name the study's journal file.")
        return
    with open(path, "rb") as f:
        data = f.read()
    _check_lines(path, flag, data)
    if data and not data.endswith(b"\n"):
        _set_aside_cut_line(path)


def _check_lines(path, flag, data):
    """Refuses `data` (the file's bytes) unless each complete line is a journal record, and a cut last line the
    beginning of one."""
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    for number, line in enumerate(complete, 1):
        why = _not_a_record(line)
        if why:
            _refuse(path, flag, number, why)
    if tail and not tail.startswith(b"{"):
        _refuse(path, flag, len(complete) + 1, "not the beginning of a JSON record")


def _not_a_record(line):
    try:
        record = json.loads(line)
    except UnicodeDecodeError:
        return "not text"
    except ValueError:
        return "not a JSON record"
    if not isinstance(record, dict) or "op_code" not in record:
        return "not one of Optuna's journal records"
    return None


def _refuse(path, flag, number, why):
    if number == 1:
        raise FolderError(f"{path} is not an Optuna study journal (line 1 is {why}): name a journal file the sweep "
                          f"wrote, or a new one, with {flag} (or give another --sweep_dir).")
    raise FolderError(f"{path} is damaged at line {number} ({why}): it is the sweep's study. Restore it from a copy, "
                      "or start the sweep again in a new --sweep_dir.")


def _set_aside_cut_line(path):
    """Moves the journal's last line, cut short, into `<path>.damaged-N`, under Optuna's lock of the journal."""
    lock = optuna_module().storages.journal.JournalFileSymlinkLock(path)  # JournalFileBackend's default lock
    if os.path.lexists(path + LOCK_SUFFIX):
        print(f"{path} ends in a line cut short: waiting for its lock {path}{LOCK_SUFFIX} (one left by a killed "
              "worker is taken back after 30 s) ...", flush=True)
    lock.acquire()
    try:
        with open(path, "rb") as f:
            data = f.read()
        if not data or data.endswith(b"\n"):
            return  # another worker was writing that line, and has finished it
        keep = data.rfind(b"\n") + 1
        aside = next(f"{path}{DAMAGED}{n}" for n in itertools.count(1) if not os.path.exists(f"{path}{DAMAGED}{n}"))
        with open(aside, "xb") as f:
            f.write(data[keep:])
        os.truncate(path, keep)
        records = data.count(b"\n")
        print(f"{path} ended in a line cut short ({len(data) - keep} bytes, what a kill during a write leaves): "
              f"set aside in {aside}; the study goes on from the {records} records before it (a trial whose end "
              "that line recorded is taken up again in its folder).", flush=True)
    finally:
        lock.release()


def optuna_module():
    try:
        import optuna
    except ImportError:
        raise ValueError("A sweep needs Optuna: pip install 'transformer-zoo[sweep]' (or pip install optuna).") \
            from None
    return optuna
