"""Token ids on disk, tokenized once and memory-mapped (fairseq's and Megatron-LM's indexed datasets).

A cache entry is a folder under $ZOO_CACHE_DIR (default ~/.cache/transformer_zoo/tokens), named by a hash
of its key: the data (each file's contents, or a built-in dataset's name), the split, and the tokenizer's
bytes and settings. A second run on the same files and tokenizer reuses it; a changed file has another
key and is tokenized again. Clear it with `rm -r ~/.cache/transformer_zoo/tokens`.

An entry holds `ids.bin` (every row's int32 ids, one after another), `offsets.bin` (int64, where each
row ends), `labels.bin` (int32, one per row; empty for unlabelled text) and `meta.json`. It is written into a
dot-folder and renamed into place, so no reader sees half an entry. Tokenizing streams: a chunk of texts
at a time, so memory does not grow with the corpus.
"""

import hashlib
import itertools
import json
import os
import shutil
import sys
import time
import uuid

import numpy as np

CACHE_ENV = "ZOO_CACHE_DIR"
IDS_FILE, OFFSETS_FILE, LABELS_FILE, META_FILE = "ids.bin", "offsets.bin", "labels.bin", "meta.json"
CHUNK_BYTES = 4 << 20  # texts tokenized per call: large enough for TF's per-call cost to vanish


def cache_root():
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "transformer_zoo", "tokens")


_FILE_HASHES = {}


def file_digest(path):
    """sha256 of a file's bytes, once per process for an unchanged (size, mtime)."""
    stat = os.stat(path)
    known = _FILE_HASHES.get(path)
    if known and known[0] == (stat.st_size, stat.st_mtime_ns):
        return known[1]
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    _FILE_HASHES[path] = ((stat.st_size, stat.st_mtime_ns), digest.hexdigest())
    return digest.hexdigest()


def files_digest(paths):
    """One hash of several files' names and contents: the data's part of a cache key (and of a run's record,
    so that a resumed run sees a changed file)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(f"{os.path.abspath(path)}\0{file_digest(path)}\n".encode())
    return digest.hexdigest()


def contents_digest(paths):
    """One hash of several files' contents in order, whatever their names: a tokenizer's part of a cache key,
    the same for the same tokenizer in any run folder."""
    return hashlib.sha256("".join(file_digest(path) for path in paths).encode()).hexdigest()


def folder_files_digest(directory, names):
    """`contents_digest` of those of the files `names` that `directory` holds (a run's tokenizer files)."""
    return contents_digest([p for p in (os.path.join(directory, n) for n in names) if os.path.exists(p)])


def key_name(key):
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


class TokenRows:
    """The rows of one cache entry. `lengths` and `labels` are in memory (4 bytes a row); the ids stay on
    disk and are read per batch by `gather`."""

    def __init__(self, directory):
        self.directory = directory
        with open(os.path.join(directory, META_FILE)) as f:
            self.meta = json.load(f)
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


def token_rows(key, examples, encode, description, total_bytes=None, in_graph=True, verify=None):
    """The cache entry of `key`, made now if missing: `examples` (an iterable of (text, label or None))
    tokenized by `encode` a chunk at a time: a batch of strings -> ragged ids, run as a tf.function, or with
    in_graph=False a Python function of a list of strings -> a list of id lists. Shows progress (MB done,
    MB/s, time left against `total_bytes`). `verify(meta)`, if given, runs on a new entry's record (its
    "rows" among them) before the entry is put in place, and may raise to keep it out of the cache."""
    directory = os.path.join(cache_root(), key_name(key))
    if os.path.exists(os.path.join(directory, META_FILE)):
        return TokenRows(directory)
    os.makedirs(cache_root(), exist_ok=True)
    # One staging folder per writer, also across machines sharing the cache (equal process ids are common there).
    staging = os.path.join(cache_root(), f".{key_name(key)}.{uuid.uuid4().hex}")
    os.makedirs(staging)
    try:
        meta = _write_entry(staging, key, examples, _batch_encoder(encode, in_graph), description, total_bytes)
        if verify is not None:
            verify(meta)
        try:
            os.rename(staging, directory)
        except OSError:  # another process made the same entry first: use its
            if not os.path.exists(os.path.join(directory, META_FILE)):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return TokenRows(directory)


def _batch_encoder(encode, in_graph):
    """`encode` as a function of a list of strings -> (flat int32 ids, int64 row lengths)."""
    if not in_graph:
        def lists(texts):
            rows = encode(texts)
            lengths = np.fromiter(map(len, rows), np.int64, len(rows))
            return np.fromiter(itertools.chain.from_iterable(rows), np.int32, int(lengths.sum())), lengths

        return lists
    import tensorflow as tf

    graph = tf.function(encode, input_signature=[tf.TensorSpec([None], tf.string)])

    def ragged(texts):
        ids = graph(tf.constant(texts, tf.string))
        return ids.flat_values.numpy().astype(np.int32), ids.row_lengths().numpy().astype(np.int64)

    return ragged


def _write_entry(staging, key, examples, encode, description, total_bytes):
    texts, labels, chunk_bytes, end = [], [], 0, np.int64(0)
    meter = Meter(description, total_bytes)
    files = [open(os.path.join(staging, name), "wb") for name in (IDS_FILE, OFFSETS_FILE, LABELS_FILE)]
    ids_file, offsets_file, labels_file = files
    with ids_file, offsets_file, labels_file:

        def flush(end):
            values, lengths = encode(texts)
            values.tofile(ids_file)
            ends = end + np.cumsum(lengths)
            ends.tofile(offsets_file)
            np.asarray(labels, np.int32).tofile(labels_file)
            texts.clear()
            labels.clear()
            return ends[-1] if len(ends) else end

        rows = 0
        for text, label in examples:
            texts.append(text)
            rows += 1
            if label is not None:
                labels.append(label)
            size = len(text.encode("utf-8")) if isinstance(text, str) else len(text)
            chunk_bytes += size
            meter.add(size)
            if chunk_bytes >= CHUNK_BYTES:
                end = flush(end)
                chunk_bytes = 0
        if texts:
            end = flush(end)
    meter.done()
    meta = {"key": key, "rows": rows, "tokens": int(end), "bytes": meter.bytes,
            "seconds": round(meter.seconds(), 3)}
    with open(os.path.join(staging, META_FILE), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


class Meter:
    """Progress of a pass over text: MB done, MB/s and time left, a line every few seconds."""

    def __init__(self, description, total_bytes=None, every=5.0):
        self.description, self.total, self.every = description, total_bytes, every
        self.bytes, self.start = 0, time.time()
        self.last = self.start

    def seconds(self):
        return time.time() - self.start

    def add(self, size):
        self.bytes += size
        now = time.time()
        if now - self.last >= self.every:
            self.last = now
            print(self.line(), file=sys.stderr, flush=True)

    def line(self):
        seconds = max(self.seconds(), 1e-9)
        rate = self.bytes / seconds / 1e6
        done = f"{self.bytes / 1e6:.1f}"
        if self.total:
            left = max(self.total - self.bytes, 0) / max(self.bytes / seconds, 1)
            done += f"/{self.total / 1e6:.1f} MB, {rate:.1f} MB/s, {left:.0f}s left"
        else:
            done += f" MB, {rate:.1f} MB/s"
        return f"{self.description}: {done}"

    def done(self):
        if self.seconds() >= self.every:
            print(self.line().split(",")[0] + f" in {self.seconds():.0f}s", file=sys.stderr, flush=True)
