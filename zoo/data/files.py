"""The rows of the user's own files: a zoo.data.spec.DatasetSpec's files (`FORM:PATTERN`: csv:, tsv:, jsonl:,
folder:, text:), a split's matched by zoo.data.spec, read row by row, streaming, never a whole file:

- csv: Python's `csv` module (RFC 4180: quoted commas, doubled quotes, newlines inside quoted fields),
  a header row naming the columns, UTF-8 with or without a BOM, CRLF or LF line ends;
- tsv: the same reader with TAB as the delimiter and no quoting (GLUE's files hold bare quotes);
- jsonl: one JSON object per line (`json`);
- folder: one sub-folder per class, one text per file (keras.utils.text_dataset_from_directory's layout);
  an empty class folder, or an entry that is not a readable file (a symlink loop, a socket), is refused;
- text: one row per line.

Every row carries where it came from (`file:line`), so a bad one is named; `BadRows` gathers them.
"""

import codecs
import contextlib
import csv
import dataclasses
import functools
import json
import os
import stat
import zlib

from zoo.data.datasets import DatasetError, lines_of, open_binary, open_text
from zoo.data.spec import in_split, paths

SHOWN_BAD_ROWS = 5
BAD_ROWS = ("error", "skip")
DIALECTS = {"csv": {"delimiter": ","}, "tsv": {"delimiter": "\t", "quoting": csv.QUOTE_NONE}}

csv.field_size_limit(2**31 - 1)  # a long review is one field; the module's default stops at 128 KiB


class BadRows:
    """Rows that do not parse: the first few named, all counted. With policy "error" (the default)
    `check` refuses them, with "skip" they are left out and counted."""

    def __init__(self, policy="error"):
        if policy not in BAD_ROWS:
            raise ValueError(f"--bad_rows={policy!r} is not one of {BAD_ROWS}.")
        self.policy, self.count, self.shown = policy, 0, []

    def add(self, where, why):
        self.count += 1
        if len(self.shown) < SHOWN_BAD_ROWS:
            self.shown.append(f"{where}: {why}")

    def check(self, what):
        """Refuses the bad rows (policy "error"), or says how many were skipped."""
        if self.count and self.policy == "skip":
            print(f"Skipped {self.count} bad row(s) of {what} (--bad_rows=skip), the first: {self.shown[0]}.",
                  flush=True)
        if self.count and self.policy == "error":
            more = f" (and {self.count - len(self.shown)} more)" if self.count > len(self.shown) else ""
            raise DatasetError(f"{self.count} bad row(s) in {what}: " + "; ".join(self.shown) + more
                               + ". Fix them, or pass --bad_rows=skip to leave them out.")


def first_invalid_utf8(path):
    """The byte offset (of the decompressed data) where `path` stops being UTF-8, or None."""
    decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
    with open_binary(path) as f:
        while True:
            chunk = f.read(1 << 20)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as error:
                return offset + error.start
            if not chunk:
                return None
            offset += len(chunk)


@contextlib.contextmanager
def reading(path):
    """Turns a file's decoding or reading failure into one DatasetError naming it."""
    try:
        yield
    except UnicodeDecodeError:
        raise DatasetError(f"{path} is not UTF-8 (an invalid byte at offset {first_invalid_utf8(path)}): convert "
                           "it, e.g. iconv -f latin1 -t utf-8.") from None
    except (OSError, EOFError, zlib.error, csv.Error) as error:
        raise DatasetError(f"{path} cannot be read ({type(error).__name__}: {error}).") from None


@dataclasses.dataclass(frozen=True)
class Row:
    values: dict  # column -> value (str, or a JSON value for jsonl)
    where: str  # "file:line"


def rows(spec, split, bad_rows, whole=False, classes=None, **fields):
    """Every row of `split`'s files as a Row, in file order; rows that do not parse go to `bad_rows`. With
    `whole`, every row of the files, the held-out share too (pretraining holds out its own); with `classes`,
    only those class folders are read (folder:)."""
    read = {"csv": _table_rows, "tsv": _table_rows, "jsonl": _jsonl_rows,
            "folder": functools.partial(_folder_rows, classes=classes), "text": _line_rows}[spec.form]
    keep = (lambda index: True) if whole else in_split(spec, split, **fields)
    index = 0
    for path in paths(spec, split, **fields):
        with reading(path):
            for row in read(spec, path, bad_rows):
                if keep(index):
                    yield row
                index += 1


def _table_rows(spec, path, bad_rows):
    with open_text(path) as f:
        reader = csv.reader(f, **DIALECTS[spec.form])
        header = next(reader, None)
        if header is None:
            return
        check_header(path, header)
        last_line = reader.line_num
        for values in reader:
            where = f"{path}:{last_line + 1}"
            last_line = reader.line_num
            if values == [] or values == [""] and len(header) > 1:
                continue  # a blank line
            if len(values) != len(header):
                bad_rows.add(where, f"{len(values)} fields where the header has {len(header)} ({header})")
                continue
            yield Row(dict(zip(header, values)), where)


def _jsonl_rows(spec, path, bad_rows):
    with open_text(path) as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                values = json.loads(line)
            except json.JSONDecodeError as error:
                bad_rows.add(f"{path}:{number}", f"not JSON ({error.msg})")
                continue
            if not isinstance(values, dict):
                bad_rows.add(f"{path}:{number}", f"a JSON {type(values).__name__}, not an object")
                continue
            yield Row(values, f"{path}:{number}")


def text_of(row, column, bad_rows):
    """`row`'s text in `column`, or None with the row added to `bad_rows` where it holds none or holds no string."""
    text = row.values.get(column)
    if isinstance(text, str):
        return text
    bad_rows.add(row.where, f"no text in {column!r}" if text is None else f"{column!r} is not text")
    return None


def check_header(path, header):
    """A header naming a column twice is refused: which of the two is the text (or the label) is unclear."""
    repeated = sorted({name for name in header if name and header.count(name) > 1})
    if repeated:
        raise DatasetError(f"{path}: its header names {', '.join(repr(name) for name in repeated)} more than once "
                           f"({header}): rename the columns so that each name is used once.")


def class_folders(path, classes=None):
    """The class folders' names in a folder: split folder, sorted, or `classes` (--classes) in their order,
    each of which must be there."""
    found = sorted(name for name in os.listdir(path)
                   if not name.startswith(".") and os.path.isdir(os.path.join(path, name)))
    if classes is None:
        return found
    missing = [name for name in classes if name not in found]
    if missing:
        raise DatasetError(f"{path} has no class folder {', '.join(repr(name) for name in missing)}: its class "
                           f"folders are {found}. Name them in --classes.")
    return list(classes)


def class_files(folder):
    """The text files of one class folder, sorted. An entry that cannot be read as a file (a symlink loop or
    a broken link, a socket, a fifo, a device) is refused naming them all; an empty class folder too."""
    found, unreadable = [], []
    for name in sorted(name for name in os.listdir(folder) if not name.startswith(".")):
        path = os.path.join(folder, name)
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            unreadable.append(f"{name} ({(error.strerror or type(error).__name__).lower()})")
            continue
        if stat.S_ISREG(mode):
            found.append(path)
        elif not stat.S_ISDIR(mode):
            kind = "a fifo" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            unreadable.append(f"{name} ({kind})")
    if unreadable:
        more = " ..." if len(unreadable) > SHOWN_BAD_ROWS else ""
        raise DatasetError(f"{folder} holds {len(unreadable)} {'entry' if len(unreadable) == 1 else 'entries'} "
                           f"that cannot be read as texts: {', '.join(unreadable[:SHOWN_BAD_ROWS])}{more}. "
                           "Remove them from the class folder.")
    if not found:
        raise DatasetError(f"The class folder {folder} holds no texts: remove it, or name the classes to use "
                           "with --classes (e.g. --classes=neg,pos).")
    return found


def _folder_rows(spec, path, bad_rows, classes=None):
    for label in class_folders(path, classes):
        for file in class_files(os.path.join(path, label)):
            with reading(file), open_text(file) as f:
                yield Row({"text": f.read(), "label": label}, file)


def _line_rows(spec, path, bad_rows):
    with open_text(path, bom=False) as f:
        for number, line in enumerate(lines_of(f), start=1):
            yield Row({"text": line}, f"{path}:{number}")


def _first_columns(spec, path):
    """The column names of `path`'s header (csv, tsv) or first object (jsonl); None for an empty file, ... for a first
    line that is not a JSON object's (the reader reports that row)."""
    with reading(path), open_text(path) as f:
        if spec.form == "jsonl":
            first = next((line for line in f if line.strip()), None)
            try:
                return None if first is None else list(json.loads(first))
            except (json.JSONDecodeError, TypeError):
                return ...
        have = next(csv.reader(f, **DIALECTS[spec.form]), [])
        check_header(path, have)
        return None if not have and not any(line.strip() for line in f) else have


def check_columns(spec, split, names, **fields):
    """The columns `names` (text, label and, for text pairs, the second text's; None: no such column) exist in the first
    file's header (csv, tsv) or first object (jsonl) that is not empty; a missing one is refused naming those the file
    has. Empty files are skipped, as the reader skips them; only files that are all empty are refused."""
    if spec.form not in ("csv", "tsv", "jsonl"):
        return
    found = paths(spec, split, **fields)
    for path in found:
        have = _first_columns(spec, path)
        if have is not None:
            break
    else:
        if len(found) == 1:
            raise DatasetError(f"{found[0]} is empty: it holds no rows. Give a file with rows in it.")
        raise DatasetError(f"{spec}: all {len(found)} of its files are empty ({found[0]}, ...): they hold no rows. "
                           "Give files with rows in them.")
    if have is ...:
        return  # the row itself is reported as bad
    if not have and spec.form != "jsonl":  # rows below a blank first line, which the reader takes as the header
        raise DatasetError(f"{path}: its first line, the header, is blank. Put the column names on the first line.")
    missing = [name for name in names if name is not None and name not in have]
    if missing:
        flag = {n: f for f, n in zip(("--text_column", "--label_column", "--text_pair_column"), names)}
        raise DatasetError(f"{path} has no column {', '.join(repr(m) for m in missing)}: its columns are {have}. "
                           f"Name the right ones with {' and '.join(flag[m] for m in missing)}.")
