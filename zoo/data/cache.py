"""Token ids on disk, tokenized once and memory-mapped (fairseq's and Megatron-LM's indexed datasets).

A cache entry is a folder under $ZOO_CACHE_DIR (default ~/.cache/transformer_zoo/tokens), named by a hash of its key:
the data (each file's contents, or a built-in dataset's name), the split, and the tokenizer's bytes and settings. A
second run on the same files and tokenizer reuses it; a changed file has another key and is tokenized again. Clear it
with `rm -r ~/.cache/transformer_zoo/tokens`.

An entry holds `ids.bin` (every row's int32 ids, one after another), `offsets.bin` (int64, where each row ends),
`labels.bin` (int32, one per row; empty for unlabelled text) and `meta.json`: the entry's format, its row and token
counts, the range of its ids, and each file's size and sha256 (hashed as it is written). It is written into a
dot-folder and renamed into place, so no reader sees half an entry; the dot-folder of a writer that died is removed by
the next run (zoo.data.staging: its lock tells). Tokenizing streams: a chunk of texts at a time, so memory does not
grow with the corpus.

The cache never lies: the files an entry is read from (`zoo.data.sources.Sources`) are checked again after the pass,
and a file that changed keeps the entry out; every opening checks the entry's sizes and checksums, and a damaged,
incomplete or older entry is named on stderr, moved aside and removed, and made again.
"""

import contextlib
import hashlib
import itertools
import json
import os
import sys
import uuid

import numpy as np

from zoo.core import disk
from zoo.core.progress import ByteMeter
from zoo.data import staging
from zoo.data.datasets import DatasetError
from zoo.data.sources import file_hash

CACHE_ENV = "ZOO_CACHE_DIR"
IDS_FILE, OFFSETS_FILE, LABELS_FILE, META_FILE = "ids.bin", "offsets.bin", "labels.bin", "meta.json"
FILES = (IDS_FILE, OFFSETS_FILE, LABELS_FILE)
FORMAT = 2  # of an entry's files and meta.json; an entry of another format is made again
CHUNK_BYTES = 4 << 20  # texts tokenized per call: large enough for TF's per-call cost to vanish


def cache_root():
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "transformer_zoo", "tokens")


class CacheWriteError(disk.WriteError):
    """The cache's folder refused a write; the message names ZOO_CACHE_DIR and what to do."""


def write_error(error):
    """The one error for an OSError raised while writing into the cache."""
    root = cache_root()
    code = disk.cause(error)
    if os.path.exists(root) and not os.path.isdir(root):
        happened = f"{root} is a file, not a folder"
    elif code is not None:
        happened = f"{disk.CAUSES[code][0].format(path=root)} ({os.strerror(code)})"
    else:
        happened = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}"
    return CacheWriteError(f"The token cache cannot be written: {happened}. Nothing was kept there. Set {CACHE_ENV} "
                           f"to a folder this user can write with room for the tokens (now {root}), or free space "
                           "there, and run again.")


@contextlib.contextmanager
def writing():
    """Turns an OSError of a write into the cache's one error (`write_error`)."""
    try:
        yield
    except OSError as error:
        raise write_error(error) from None


def check_writable():
    """Refuses a cache folder that cannot be written (read-only, a file, full), before a run writes anything:
    makes the folder, then writes and removes a probe file."""
    probe = os.path.join(cache_root(), f".probe.{uuid.uuid4().hex}")
    with writing():
        try:
            os.makedirs(cache_root(), exist_ok=True)
            with open(probe, "wb") as f:
                f.write(b"\0" * 4096)
        finally:
            with contextlib.suppress(OSError):
                os.remove(probe)


def key_name(key):
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


class DamagedEntry(DatasetError):
    """A cache entry that is incomplete, damaged or of another format: it is made again."""


class TokenRows:
    """The rows of one cache entry, checked as it opens (`check_entry`). `lengths` and `labels` are in
    memory (4 bytes a row); the ids stay on disk and are read per batch by `gather`."""

    def __init__(self, directory, written=None):
        self.directory = directory
        self.meta = check_entry(directory, written)
        ends = np.fromfile(os.path.join(directory, OFFSETS_FILE), np.int64)
        self.starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
        self.lengths = (ends - self.starts).astype(np.int32)
        labels = np.fromfile(os.path.join(directory, LABELS_FILE), np.int32)
        self.labels = labels if len(labels) == len(ends) and len(ends) else None

    def __len__(self):
        return len(self.lengths)

    @property
    def num_tokens(self):
        return int(self.lengths.sum())

    def check_ids(self, vocab_size):
        """Refuses ids outside [0, vocab_size): rows a model with `vocab_size` embeddings cannot read (a
        tokenizer larger than the model's vocabulary)."""
        if self.meta["id_range"] is None:
            return
        low, high = self.meta["id_range"]
        if low < 0 or high >= vocab_size:
            raise DatasetError(f"The token cache entry {self.directory} holds id {low if low < 0 else high}, outside "
                               f"the model's vocabulary (0 to {vocab_size - 1}): its tokenizer does not match the "
                               f"model's vocab_size={vocab_size}. Train with a tokenizer of at most that many ids, "
                               "or a model with a larger vocab_size.")

    def ids(self):
        """The memory map of every id. Made anew by each caller and dropped after use: the pages of a map
        that lives on count towards the process's resident memory as it reads through the corpus
        (nanoGPT re-opens its memmap every batch for the same reason)."""
        if not self.num_tokens:
            return np.zeros((0,), np.int32)
        return np.memmap(os.path.join(self.directory, IDS_FILE), np.int32, mode="r")

    def gather(self, indices):
        """(flat int32 ids, int64 lengths) of rows `indices`, in that order."""
        indices = np.asarray(indices, np.int64)
        ids = self.ids()
        lengths = self.lengths[indices].astype(np.int64)
        if not len(indices):
            return np.zeros((0,), np.int32), lengths
        values = np.concatenate([ids[s : s + n] for s, n in zip(self.starts[indices], lengths)])
        return np.asarray(values, np.int32), lengths

    def row(self, index):
        return np.asarray(self.ids()[self.starts[index] : self.starts[index] + self.lengths[index]], np.int32)

    def span(self, begin, end):
        """Ids [begin, end) of all rows laid end to end (a language model's stream)."""
        return np.asarray(self.ids()[begin:end], np.int32)


def check_entry(directory, written=None):
    """The entry's meta.json, once its files are checked against it: the format, each file's size (its row and
    token counts) and its sha256, hashed again unless they are the files this process has just `written`.
    Anything else is a DamagedEntry saying what is wrong."""
    try:
        with open(os.path.join(directory, META_FILE)) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise DamagedEntry(f"is incomplete (no {META_FILE})") from None
    except (OSError, ValueError) as error:
        raise DamagedEntry(f"has a {META_FILE} that does not read ({type(error).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DamagedEntry(f"is of an older format (not {FORMAT})")
    try:
        recorded = {name: (int(meta["files"][name]["bytes"]), str(meta["files"][name]["sha256"])) for name in FILES}
        expected = {IDS_FILE: 4 * int(meta["tokens"]), OFFSETS_FILE: 8 * int(meta["rows"])}
    except (KeyError, TypeError, ValueError):
        raise DamagedEntry(f"has a {META_FILE} without its files' sizes and checksums") from None
    for name, (size, digest) in recorded.items():
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            raise DamagedEntry(f"is incomplete ({name} is missing)")
        if os.path.getsize(path) != size or expected.get(name, size) != size:
            raise DamagedEntry(f"is damaged ({name} holds {os.path.getsize(path):,} bytes where {META_FILE} says "
                               f"{expected.get(name, size):,})")
        if meta["files"] != written and file_hash(path) != digest:
            raise DamagedEntry(f"is damaged ({name} does not match its checksum)")
    return meta


def open_entry(directory):
    """The entry at `directory`, or None when there is none: one that `check_entry` refuses is named on stderr
    and moved aside (then removed), never read."""
    if not os.path.lexists(directory):
        return None
    try:
        return TokenRows(directory)
    except DamagedEntry as damage:
        print(f"token cache: {directory} {damage}: moved aside, tokenizing again.", file=sys.stderr, flush=True)
    with writing():
        aside = staging.Staging(os.path.dirname(directory), os.path.basename(directory))
        try:  # into a staging folder, removed with it (by the next run, if this one dies first)
            os.rename(directory, os.path.join(aside.path, "damaged"))
        except FileNotFoundError:  # another process moved it first
            pass
        finally:
            aside.release()
    return None


def token_rows(key, examples, encode, description, total_bytes=None, in_graph=True, sources=None):
    """The cache entry of `key`, made now if missing (or refused by `check_entry`): `examples` (an iterable of
    (text, label or None), a text a string or a tuple of them: a text pair) tokenized by `encode` a chunk at a
    time: a batch of strings ((batch, 2) for pairs) -> ragged ids, run as a tf.function, or with in_graph=False
    a Python function of a list of strings -> a list of id lists. Shows progress (MB done, MB/s, time left
    against `total_bytes`). `sources` (a zoo.data.sources.Sources, the files the examples are read from) are
    checked after the pass: one that changed keeps the new entry out of the cache."""
    directory = os.path.join(cache_root(), key_name(key))
    staging.remove_dead(cache_root())
    rows = open_entry(directory)
    if rows is not None:
        return rows
    with writing():  # one staging folder per writer, also across machines sharing the cache
        os.makedirs(cache_root(), exist_ok=True)
        folder = staging.Staging(cache_root(), key_name(key))
    try:
        meta = _write_entry(folder.path, key, examples, _batch_encoder(encode, in_graph), description, total_bytes)
        if sources is not None:
            sources.check()
        try:
            os.rename(folder.path, directory)
        except OSError as error:  # another process made the same entry first: use its
            if not os.path.exists(os.path.join(directory, META_FILE)):
                raise write_error(error) from None
    finally:
        folder.release()
    return TokenRows(directory, written=meta["files"])


def _batch_encoder(encode, in_graph):
    """`encode` as a function of a list of strings -> (flat int32 ids, int64 row lengths)."""
    if not in_graph:
        def lists(texts):
            rows = encode(texts)
            lengths = np.fromiter(map(len, rows), np.int64, len(rows))
            return np.fromiter(itertools.chain.from_iterable(rows), np.int32, int(lengths.sum())), lengths

        return lists
    import tensorflow as tf

    graphs = {}  # by the shape of a row: () for texts, (2,) for text pairs

    def ragged(texts):
        texts = tf.constant(texts, tf.string)
        row = tuple(texts.shape[1:])
        if row not in graphs:
            graphs[row] = tf.function(encode, input_signature=[tf.TensorSpec([None, *row], tf.string)])
        ids = graphs[row](texts)
        return ids.flat_values.numpy().astype(np.int32), ids.row_lengths().numpy().astype(np.int64)

    return ragged


class _EntryFile:
    """One of a new entry's files, its size and sha256 kept as it is written (no second read)."""

    def __init__(self, path):
        with writing():
            self.file = open(path, "wb")
        self.sha256, self.size = hashlib.sha256(), 0

    def write(self, array):
        data = memoryview(np.ascontiguousarray(array)).cast("B")
        with writing():
            self.file.write(data)
        self.sha256.update(data)
        self.size += len(data)

    def close(self):
        with writing():
            self.file.close()
        return {"bytes": self.size, "sha256": self.sha256.hexdigest()}


def _write_entry(staging, key, examples, encode, description, total_bytes):
    texts, labels, id_ranges, chunk_bytes, rows, end = [], [], [], 0, 0, np.int64(0)
    meter = ByteMeter(description, total_bytes)
    written = {name: _EntryFile(os.path.join(staging, name)) for name in FILES}

    def flush():
        nonlocal end
        values, lengths = encode(texts)
        ends = end + np.cumsum(lengths, dtype=np.int64)
        written[IDS_FILE].write(np.asarray(values, np.int32))
        written[OFFSETS_FILE].write(ends)
        written[LABELS_FILE].write(np.asarray(labels, np.int32))
        texts.clear()
        labels.clear()
        if len(values):
            id_ranges.append((int(values.min()), int(values.max())))
        end = ends[-1] if len(ends) else end

    try:
        for text, label in examples:
            texts.append(text)
            rows += 1
            if label is not None:
                labels.append(label)
            size = sum(len(part.encode("utf-8")) if isinstance(part, str) else len(part)
                       for part in (text if isinstance(text, tuple) else (text,)))
            chunk_bytes += size
            meter.add(size)
            if chunk_bytes >= CHUNK_BYTES:
                flush()
                chunk_bytes = 0
        if texts:
            flush()
    finally:
        records = {name: entry_file.close() for name, entry_file in written.items()}
    meter.done()
    id_range = [min(low for low, _ in id_ranges), max(high for _, high in id_ranges)] if id_ranges else None
    meta = {"format": FORMAT, "key": key, "rows": rows, "tokens": int(end), "id_range": id_range, "files": records,
            "bytes": meter.bytes, "seconds": round(meter.seconds(), 3)}
    with writing(), open(os.path.join(staging, META_FILE), "w") as f:
        json.dump(meta, f, indent=1)
    return meta
