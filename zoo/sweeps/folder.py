"""A sweep folder's own files and locks. Its record, `sweep.json`, written first when the sweep is made, names the
study the folder holds (`a-3f9c01d2e4b5`: the folder's name and a unique id), so a copied folder continues its own
study, and two sweeps of the same folder name on one storage hold two names. A folder without the record is taken
only when it is new or empty, or a sweep folder of the zoo's earlier form (zoo.sweeps.study.find): any other file
in it (the user's results.csv, notes ...) refuses it before anything is written.
"""

import contextlib
import fcntl
import json
import os
import re
import uuid

from zoo.core import disk

RECORD = "sweep.json"
JOURNAL = "study.journal"
LOCK = "sweep.lock"  # held while the study is made, while a trial is taken and while the results are written
CLAIMS = "claims"
SPACE_FILE = "space.yaml"
RESULTS = ("results.csv", "results.md", "plot.png", "best")
# What a sweep writes in its folder, by name: its record, journal (with Optuna's lock file and a cut line set
# aside, zoo.sweeps.journal), space, results, locks and trial folders, and zoo.core.disk's temporary `name.tmp`.
OWN = frozenset({RECORD, JOURNAL, LOCK, CLAIMS, SPACE_FILE, *RESULTS})
OWN_PATTERN = re.compile(r"(trial-\d{3,}|study\.journal\.(lock.*|damaged-\d+)|.+\.tmp)\Z")


class FolderError(ValueError):
    """A sweep folder that cannot be used: the message names it and says what to do."""


def ours(name):
    return name in OWN or bool(OWN_PATTERN.match(name))


def entries(sweep_dir):
    """The folder's entries (none when it does not exist yet)."""
    return sorted(os.listdir(sweep_dir)) if os.path.isdir(sweep_dir) else []


def refuse_foreign(sweep_dir, names):
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise FolderError(f"--sweep_dir={sweep_dir} holds files this sweep did not write ({shown}): a sweep writes "
                      "results.csv, results.md, best, space.yaml and trial folders there and would replace them. "
                      "Give a new or empty folder.")


def read_record(sweep_dir):
    """The folder's record ({"study": name, ...}), None when it has none; a damaged one is a FolderError."""
    path = os.path.join(sweep_dir, RECORD)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        if not isinstance(record, dict) or not isinstance(record.get("study"), str) or not record["study"]:
            raise ValueError("it names no study")
    except (OSError, ValueError) as error:
        reason = (str(error).splitlines() or [type(error).__name__])[0][:200]
        raise FolderError(f"{path} is damaged ({reason}): it names the sweep's study. Restore it from a copy of the "
                          "folder, or start the sweep again in a new --sweep_dir.") from None
    return record


def new_name(sweep_dir):
    return f"{os.path.basename(os.path.realpath(sweep_dir))}-{uuid.uuid4().hex[:12]}"


def write_record(sweep_dir, name):
    data = json.dumps({"study": name, "written_by": "zoo.sweeps"}, indent=2) + "\n"
    disk.write_atomically(os.path.join(sweep_dir, RECORD), data.encode(), "the sweep's record")


@contextlib.contextmanager
def locked(sweep_dir):
    """The sweep folder's lock, waited for (the folder made if missing): one worker at a time makes the study,
    takes a trial or writes the results. A folder the file system refuses is a disk.WriteError."""
    path = os.path.join(sweep_dir, LOCK)
    try:
        os.makedirs(sweep_dir, exist_ok=True)
        handle = open(path, "a")
    except OSError as error:
        raise disk.write_error(error, "the sweep's lock", path, "nothing was written") or error from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def hold(sweep_dir, name):
    """An open file holding the exclusive flock of the trial `name`'s claim (claims/<name>.lock), or None while
    another process holds it (its worker runs the trial)."""
    folder = os.path.join(sweep_dir, CLAIMS)
    os.makedirs(folder, exist_ok=True)
    handle = open(os.path.join(folder, f"{name}.lock"), "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def trial_folders(sweep_dir):
    return [name for name in entries(sweep_dir) if re.fullmatch(r"trial-\d{3,}", name)]
