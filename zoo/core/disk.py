"""What the zoo says when the file system refuses a write, or a run's file cannot be read back.

A write refused by the file system (full, over a quota or a file size limit, read-only, not this user's, a path through
a file or with too long a name) is one `WriteError`: the path, the cause, that nothing was lost (the writer removes what
it half wrote; the earlier files stay as they were) and what to do. A run's file that no longer reads is one
`DamagedFileError` naming it. Both are ValueErrors, which a recipe prints as its one `error:` line.
"""

import contextlib
import errno
import os

import tensorflow as tf


class WriteError(ValueError):
    """The file system refused a write; nothing was lost. The message names the path and the cause."""


class DamagedFileError(ValueError):
    """A run's file cannot be read back; the message names it and says what to do."""


# errno -> (what happened at {path}, what to do)
CAUSES = {
    errno.ENOSPC: ("the disk is full at {path}", "Free space and run again."),
    errno.EDQUOT: ("the disk quota is used up at {path}", "Free space (or have the quota raised) and run again."),
    errno.EFBIG: ("a file grew to the largest size allowed at {path}",
                  "Raise the file size limit (ulimit -f), or write to a file system that takes larger files, and "
                  "run again."),
    errno.EROFS: ("{path} is on a read-only file system", "Choose a folder on a writable disk."),
    errno.EACCES: ("this user may not write {path}", "Choose a folder this user can write to, or change its "
                   "permissions."),
    errno.ENAMETOOLONG: ("a name in {path} is longer than the file system allows", "Choose shorter folder names."),
    errno.ENOTDIR: ("{path} is a file, not a folder", "Choose a path whose folders are folders (or do not exist "
                    "yet)."),
}
CAUSES[errno.EPERM] = CAUSES[errno.EACCES]


def cause(error):
    """The errno of `error` when it is one of CAUSES: an OSError's own, or the one whose text
    ends a TensorFlow error's message ("...; File too large"); else None."""
    if isinstance(error, OSError):
        return error.errno if error.errno in CAUSES else None
    if isinstance(error, tf.errors.OpError):
        return next((code for code in CAUSES if os.strerror(code) in str(error)), None)
    return None


def write_error(error, what, path, kept):
    """The WriteError for `error`, raised while writing `what` (e.g. "the tokenizer") at `path`,
    or None when the file system did not refuse the write; `kept` says what is still there."""
    code = cause(error)
    if code is None:
        return None
    if code == errno.ENOTDIR:
        path = _file_on(path)
    happened, advice = CAUSES[code]
    return WriteError(f"Could not write {what}: {happened.format(path=path)} ({os.strerror(code)}). Nothing was "
                      f"lost: {kept}. {advice}")


def _file_on(path):
    """The file that stands where `path` needs a folder (else `path`)."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent != os.path.dirname(parent):
        if os.path.exists(parent) and not os.path.isdir(parent):
            return parent
        parent = os.path.dirname(parent)
    return path


def write_atomically(path, data, what):
    """Writes the bytes `data` (or an iterable of bytes, written as it comes) to `path` through a temporary
    file renamed into place: a crash or a refused write leaves the old file (or none), never half of one; a
    refused write is a WriteError."""
    temporary = path + ".tmp"
    try:
        with open(temporary, "wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            else:
                f.writelines(data)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        refused = write_error(error, what, path, "the folder's files are as they were")
        if refused is None:
            raise
        raise refused from None
    return path


@contextlib.contextmanager
def reading(path, role, errors=(ValueError, KeyError, TypeError), reason=None):
    """Turns `errors` raised while reading the run's file `path` (which is `role`, e.g. "the run's
    tokenizer") back into one DamagedFileError naming it, and why (`reason`, else the error's first line)."""
    try:
        yield
    except errors as error:
        if reason is None and isinstance(error, KeyError):
            reason = f"it has no {error.args[0]!r} entry"
        reason = reason or (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise DamagedFileError(f"{path} is damaged ({reason}): it is {role}. Restore it from a backup, or train "
                               "again in a new --model_dir.") from None
