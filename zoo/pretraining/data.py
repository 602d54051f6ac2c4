"""Pretraining text: unlabeled documents from named corpora, a held-out slice, and
packing into full sequences.

Corpus names (`--corpus`, comma-separated, mixed):
  imdb_unsup        the 50,000 unlabeled IMDB reviews
  imdb, sst2        the training split's texts (labels unused; IMDB's held-out validation excluded)
  text:<glob>       UTF-8 files: one document per non-empty line, or per file (document_per_file)
  tfds:<name>       the text feature of a TensorFlow Datasets set's train split
No test split is ever read.
"""

import glob
import os
import re
import tarfile

import numpy as np

from zoo.data import datasets
from zoo.data.datasets import DatasetError, Source
from zoo.data.tokenizer import END_ID, START_ID

# The official archive holds train/unsup too; ../shared/data has it as a tarball of its own.
IMDB_UNSUP = Source("imdb", "aclImdb_v1_unsup.tar.gz", "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz")
NAMED = ("imdb_unsup", "imdb", "sst2")
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


def _text_files(pattern, document_per_file):
    paths = sorted(p for p in glob.glob(os.path.expanduser(pattern), recursive=True) if os.path.isfile(p))
    if not paths:
        raise DatasetError(f"text:{pattern} matches no file: give a glob of UTF-8 text files, e.g. text:notes/*.txt.")
    documents = []
    for path in paths:
        with datasets.reading(path), open(path, encoding="utf-8") as f:
            text = f.read()
        if document_per_file:
            documents.append(text.strip())
        else:
            documents.extend(line.strip() for line in text.splitlines())
    return [d for d in documents if d]


def _tfds_texts(name):
    import tensorflow as tf
    import tensorflow_datasets as tfds

    builder = datasets.tfds_builder(name)
    if builder.info.splits and "train" not in builder.info.splits:
        raise DatasetError(f"TFDS dataset {name!r} has no 'train' split (pretraining never reads test): "
                           f"it has {sorted(builder.info.splits)}.")
    features = builder.info.features
    keys = builder.info.supervised_keys
    texts = [k for k in features.keys() if getattr(features[k], "dtype", None) == tf.string]
    key = keys[0] if keys and keys[0] in texts else (texts[0] if texts else None)
    if key is None:
        raise DatasetError(f"TFDS dataset {name!r} has no text feature.")
    builder.download_and_prepare()
    return [example[key].decode("utf-8") for example in tfds.as_numpy(builder.as_dataset(split="train"))]


def load_documents(name, document_per_file=False):
    """The documents (strings) of one corpus name; see the module docstring."""
    if name == "imdb_unsup":
        return _imdb_unsup()
    if name in ("imdb", "sst2"):
        return list(datasets.load_classification(name, "train").texts)
    if name.startswith("text:"):
        return _text_files(name[len("text:") :], document_per_file)
    if name.startswith("tfds:"):
        return _tfds_texts(name[len("tfds:") :])
    raise DatasetError(
        f"Unknown pretraining corpus {name!r}: use {', '.join(NAMED)}, text:<glob> or tfds:<name>, comma-separated."
    )


def load_corpora(names, document_per_file=False):
    """Every document of the corpora `names`, corpus after corpus, each in its own order."""
    if not names:
        raise DatasetError("--corpus is empty: name at least one corpus (e.g. imdb_unsup,imdb).")
    documents = []
    for name in names:
        found = load_documents(name, document_per_file)
        if not found:
            raise DatasetError(f"Corpus {name!r} holds no document.")
        documents.extend(found)
    return documents


def held_out(num_documents, fraction, seed):
    """(train, eval) document indices, each ascending: a seeded random `fraction` of the
    documents (at least one when there are two or more) is held out for --mode=eval."""
    count = min(num_documents - 1, max(1, round(num_documents * fraction))) if num_documents > 1 else 0
    chosen = np.zeros(num_documents, bool)
    chosen[np.random.default_rng(seed).permutation(num_documents)[:count]] = True
    return np.flatnonzero(~chosen), np.flatnonzero(chosen)


def pack(documents, sequence_length, start_id=START_ID, separator_id=END_ID):
    """Token rows of `sequence_length`: <s> and then the next sequence_length - 1 tokens of the
    stream doc_0 </s> doc_1 </s> ... (documents: lists of ids, in order; BERT's vocabularies
    give [CLS] and [SEP] as start_id and separator_id). Every row is full but the last; no
    token is dropped and no padding is spent."""
    if not documents:
        return []
    stream = np.concatenate([np.append(np.asarray(d, np.int32), np.int32(separator_id)) for d in documents])
    body = sequence_length - 1
    return [np.concatenate([[start_id], stream[i : i + body]]).astype(np.int32) for i in range(0, len(stream), body)]
