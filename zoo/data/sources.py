"""Which bytes a run reads: files' sha256 digests, kept once per process for an unchanged size and modification
time, and `Sources`, the files a token-cache entry's rows come from, checked again after the tokenizing pass so
that an entry holds the rows of the bytes its key names (zoo.data.cache)."""

import hashlib
import os

from zoo.data.datasets import DatasetError

READ_BYTES = 1 << 22  # files are hashed this much at a time


def file_hash(path):
    """sha256 of a file's bytes, read now."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(READ_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


_FILE_STATES = {}


def _state(path, fresh=False):
    """(size, mtime in ns, sha256) of a file; hashed once per process for an unchanged size and mtime, or
    always when `fresh`. A file that changes while it is hashed is given its size and time from before, so
    that a later look finds it changed."""
    before = os.stat(path)
    stamp = (before.st_size, before.st_mtime_ns)
    known = _FILE_STATES.get(path)
    if known and known[:2] == stamp and not fresh:
        return known
    state = (*stamp, file_hash(path))
    after = os.stat(path)
    if (after.st_size, after.st_mtime_ns) == stamp:
        _FILE_STATES[path] = state
    return state


def files_digest(paths, states=None):
    """One hash of several files' names and contents: the data's part of a cache key (and of a run's record,
    so that a resumed run sees a changed file); `states`: the files' `_state`s where they were read already."""
    digest = hashlib.sha256()
    for path, state in zip(paths, states or [_state(path) for path in paths]):
        digest.update(f"{os.path.abspath(path)}\0{state[2]}\n".encode())
    return digest.hexdigest()


class Sources:
    """The files a cache entry's rows are read from, as they were when its key was made: `find()` lists them,
    each is recorded by size, modification time and sha256. `digest` (`files_digest` of them) is the data's
    part of the key; `check()`, after the tokenizing pass, refuses a file that was added, removed or changed
    meanwhile, so that an entry holds the rows of the bytes its key names."""

    def __init__(self, find):
        self.find = find
        self.paths = tuple(find())
        self.states = tuple(_state(path) for path in self.paths)
        self.digest = files_digest(self.paths, self.states)  # the bytes `states` describe

    def check(self):
        paths = tuple(self.find())
        for path in sorted(set(paths) ^ set(self.paths)):
            raise self._changed(path, "appeared" if path in paths else "went away")
        for path, before in zip(self.paths, self.states):
            try:
                now = _state(path, fresh=True)
            except FileNotFoundError:
                raise self._changed(path, "went away") from None
            if now != before:
                sizes = f" (from {before[0]:,} to {now[0]:,} bytes)" if now[0] != before[0] else ""
                raise self._changed(path, f"changed{sizes}")

    @staticmethod
    def _changed(path, what):
        return DatasetError(f"{path} {what} while it was tokenized: its tokens were not kept in the cache. Run "
                            "again once the files stay as they are.")


def folder_files_digest(directory, names):
    """One hash of the contents of those of the files `names` that `directory` holds (a run's tokenizer files),
    in order, whatever their names: a tokenizer's part of a cache key, the same for it in any run folder."""
    paths = [p for p in (os.path.join(directory, n) for n in names) if os.path.exists(p)]
    return hashlib.sha256("".join(_state(path)[2] for path in paths).encode()).hexdigest()
