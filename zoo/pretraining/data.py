"""Pretraining text: unlabeled documents from named corpora, a held-out slice, and packing into full sequences.

Corpus names (`--corpus`, comma-separated, mixed):
  imdb_unsup        the 50,000 unlabeled IMDB reviews
  imdb, sst2        the training split's texts (labels unused; IMDB's held-out validation excluded)
  text:<glob>       UTF-8 files: one document per non-empty line, or per file (document_per_file)
  csv:, jsonl:      a document per row, its --text_column (zoo.data.files reads all three forms)
  tfds:<name>       the text feature of a TensorFlow Datasets set's train split
No test split is ever read. A run's config parses each name once (PretrainRunConfig.corpus_specs, zoo.data.spec)."""

import dataclasses
import functools
import hashlib
import re
import tarfile

import numpy as np

from zoo.data import cache, datasets, files, spec as dataset_spec
from zoo.data.sources import Sources
from zoo.data.datasets import DatasetError, Source

# The official archive holds train/unsup too; ../shared/data has it as a tarball of its own.
IMDB_UNSUP = Source("imdb", "aclImdb_v1_unsup.tar.gz",
                    "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz")
NAMED = ("imdb_unsup", "imdb", "sst2")
FORMS = ("text", "csv", "jsonl")
# That copy lost its <br /> tags, joining sentences ("streets.But"): a space goes back
# after a sentence end (a lower-case letter or a closing bracket or quote before it) followed by a capital.
JOINED_SENTENCES = re.compile(r"([a-z)\"'][.!?]+)([A-Z])")


def _imdb_unsup():
    documents = {}
    path = datasets.fetch(IMDB_UNSUP)
    with datasets.reading(path), tarfile.open(path, "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 4 and parts[1:3] == ["train", "unsup"] and parts[3].endswith(".txt"):
                text = archive.extractfile(member).read().decode("utf-8").replace("<br />", " ")
                documents[int(parts[3].split("_")[0])] = JOINED_SENTENCES.sub(r"\1 \2", text)
    if not documents:
        raise DatasetError(f"{path} holds no aclImdb/train/unsup/*.txt review.")
    return [documents[i] for i in sorted(documents)]


def _tfds_texts(name):
    import tensorflow as tf
    import tensorflow_datasets as tfds

    builder = datasets.tfds_builder(name)
    if builder.info.splits and "train" not in builder.info.splits:
        raise DatasetError(f"TFDS dataset {name!r} has no 'train' split (pretraining never reads test): "
                           f"it has {sorted(builder.info.splits)}.")
    features, keys = builder.info.features, builder.info.supervised_keys
    texts = [k for k in features.keys() if getattr(features[k], "dtype", None) == tf.string]
    key = keys[0] if keys and keys[0] in texts else (texts[0] if texts else None)
    if key is None:
        raise DatasetError(f"TFDS dataset {name!r} has no text feature.")
    builder.download_and_prepare()
    return [example[key].decode("utf-8") for example in tfds.as_numpy(builder.as_dataset(split="train"))]


def load_documents(name):
    """The documents (strings) of a named corpus, in memory: imdb_unsup, imdb, sst2 or tfds:<name>."""
    if name == "imdb_unsup":
        return _imdb_unsup()
    if name in ("imdb", "sst2"):
        return list(datasets.load_classification(name, "train").texts)
    if name.startswith("tfds:"):
        return _tfds_texts(name[len("tfds:") :])
    raise DatasetError(f"Unknown pretraining corpus {name!r}: use {', '.join(NAMED)}, tfds:<name>, or your own files "
                       "(text:, csv:, jsonl:), comma-separated.")


class Documents:
    """The documents of one or more corpora, in order, readable more than once without holding those read
    from files: iterate for strings; `count`, `size` (characters), `key` (for the token cache), `sources` (the
    files read, zoo.data.sources.Sources; None without files) and `digest` (of those files)."""

    def __init__(self, parts, key, sources=None, skipped=0):
        self.parts, self.key, self.sources = parts, key, sources
        self.digest = sources.digest if sources is not None else None
        self.count = sum(count for _, count, _ in parts)
        self.skipped = skipped  # bad rows left out (--bad_rows=skip)
        self.size = sum(size for _, _, size in parts)

    def __iter__(self):
        for read, _, _ in self.parts:
            yield from read()

    def sample(self, keep, max_characters, seed):
        """A seeded sample of the documents whose index `keep` accepts, with about `max_characters` in all."""
        return datasets.sample_share((d for i, d in enumerate(self) if keep[i]), self.size, max_characters, seed)


def load_corpora(corpora, document_per_file=False, text_column="text", bad_rows="error"):
    """The documents of `corpora` (zoo.data.spec.DatasetSpecs, a run's, each its columns.text the text's column;
    or corpus names, read with `text_column`), corpus after corpus, each in its own order. Files are read once
    here (a bad row is refused before any work) and again whenever the documents are iterated."""
    if not corpora:
        raise DatasetError("--corpus is empty: name at least one corpus (e.g. imdb_unsup,imdb).")
    columns = dataset_spec.Columns(text=text_column)
    corpora = [dataset_spec.given(corpus, FORMS, columns) for corpus in corpora]
    parts, specs, skipped = [], [], 0
    for spec in corpora:
        if not spec.files:
            found = load_documents(spec.name)
            read = functools.partial(iter, found)
            count, size = len(found), sum(map(len, found))
        else:
            if spec.form != "text":
                files.check_columns(spec, "train", (spec.columns.text,))
            bad = files.BadRows(bad_rows)
            read = (lambda spec: lambda: _file_documents(spec, document_per_file,  # noqa: E731
                                                         files.BadRows("skip")))(spec)
            count = size = 0
            for document in _file_documents(spec, document_per_file, bad):
                count, size = count + 1, size + len(document)
            bad.check(str(spec))
            skipped += bad.count if bad_rows == "skip" else 0
            specs.append(spec)
        if not count:
            raise DatasetError(f"{spec.name!r} holds no text (its files are empty, or every row is blank): give "
                               "files with text in them.")
        parts.append((read, count, size))
    sources = Sources(lambda: [p for spec in specs for p in dataset_spec.paths(spec, "train")]) if specs else None
    key = {"corpus": [spec.name for spec in corpora], "document_per_file": document_per_file,
           "text_column": corpora[0].columns.text, "files": sources.digest if sources is not None else None}
    return Documents(parts, key, sources, skipped)


def _file_documents(spec, document_per_file, bad):
    """A file corpus's documents: text: one per non-empty line (stripped), or per file; csv:, jsonl: a row's
    text column. Every file is training data (pretraining holds out its own share)."""
    text_column = spec.columns.text
    if spec.form == "text" and document_per_file:
        for path in dataset_spec.paths(spec, "train"):
            with files.reading(path), files.open_text(path) as f:
                text = f.read().strip()
            if text:
                yield text
        return
    spec = dataclasses.replace(spec, pattern=spec.pattern.replace("{split}", "train"))
    for row in files.rows(spec, "train", bad, whole=True):
        text = files.text_of(row, text_column if spec.form != "text" else "text", bad)
        if text is not None and text.strip():
            yield text.strip()


def held_out_mask(num_documents, fraction, seed):
    """Which documents are held out for --mode=eval: a seeded random `fraction` of them (at least one when
    there are two or more)."""
    count = min(num_documents - 1, max(1, round(num_documents * fraction))) if num_documents > 1 else 0
    chosen = np.zeros(num_documents, bool)
    chosen[np.random.default_rng(seed).permutation(num_documents)[:count]] = True
    return chosen


def token_rows(documents, keep, tokenize, tokenizer_key, separator_id, name):
    """The ids of the documents whose index `keep` accepts, each followed by `separator_id`, from the token cache
    (tokenized once by `tokenize`, a batch of strings -> ragged ids; a file that changes meanwhile is refused)."""
    import tensorflow as tf

    def with_separator(texts):
        ids = tf.cast(tokenize(texts), tf.int32)
        return tf.concat([ids, tf.fill([tf.shape(texts)[0], 1], tf.constant(separator_id, tf.int32))], axis=1)

    key = {"documents": documents.key, "part": name, "kept": hashlib.sha256(np.packbits(keep).tobytes()).hexdigest(),
           "tokenizer": tokenizer_key, "separator": separator_id}
    # Documents past `keep` (a file grown since it was read) are left to the cache's check, which refuses them.
    chosen = ((document, None) for document, kept in zip(documents, keep) if kept)
    return cache.token_rows(key, chosen, with_separator, f"tokenizing {name} documents", documents.size,
                            sources=documents.sources)


class PackedRows:
    """Rows of `sequence_length` packed from token rows laid end to end, read from disk a batch at a time: row i
    is the start id and then tokens [i * body, (i + 1) * body) of the stream. Every row is full but the last;
    no token is dropped and no padding is spent."""

    def __init__(self, token_rows, sequence_length, start_id):
        self.token_rows, self.body, self.start_id = token_rows, sequence_length - 1, start_id
        total = token_rows.num_tokens
        count = -(-total // self.body)  # rounded up
        self.lengths = np.full(count, self.body + 1, np.int32)
        if count:
            self.lengths[-1] = total - (count - 1) * self.body + 1

    def __len__(self):
        return len(self.lengths)

    def gather(self, indices):
        """(flat int32 ids, int64 lengths) of rows `indices`, as zoo.data.cache.TokenRows.gather."""
        ids = self.token_rows.ids()
        rows = [np.concatenate([[self.start_id], ids[i * self.body : (i + 1) * self.body]]) for i in indices]
        lengths = np.asarray([len(r) for r in rows], np.int64)
        return (np.concatenate(rows).astype(np.int32) if rows else np.zeros((0,), np.int32)), lengths
