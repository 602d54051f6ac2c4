"""Raw datasets: read from ZOO_DATA_DIR when it is set, else downloaded from
their official sources (or loaded through TensorFlow Datasets for `tfds:NAME`).

Every loader returns plain Python data (lists of strings, NumPy labels); the
tf.data pipelines are built from them in `zoo.batching`.
"""

import dataclasses
import gzip
import os
import tarfile
import zipfile

import numpy as np

DATA_ENV = "ZOO_DATA_DIR"


class DatasetError(ValueError):
    """A dataset that is unknown, missing or malformed; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Source:
    """Where one dataset file is: its name under $ZOO_DATA_DIR/<folder>/ and its official URL."""

    folder: str
    local_name: str
    url: str


def fetch(source):
    """Local path of `source`: from ZOO_DATA_DIR if set, else downloaded (and cached by Keras)."""
    root = os.environ.get(DATA_ENV)
    if root:
        path = os.path.join(root, source.folder, source.local_name)
        if not os.path.exists(path):
            raise DatasetError(
                f"{path} does not exist. {DATA_ENV}={root} is set, so the zoo reads the {source.folder!r} "
                f"dataset from there: put {source.local_name} in {os.path.join(root, source.folder)} "
                f"(see SOURCE.md in the shared data folder), or unset {DATA_ENV} to download it from {source.url}."
            )
        return path
    import keras

    name = os.path.basename(source.url)
    return keras.utils.get_file(name, source.url, cache_subdir=os.path.join("zoo_datasets", source.folder))


@dataclasses.dataclass(frozen=True)
class Classification:
    """A labelled text classification split."""

    texts: list
    labels: np.ndarray
    class_names: tuple


IMDB_LOCAL = Source("imdb", "aclImdb_v1_labeled.tar.gz", "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz")
SST2_TRAIN = Source("sst2", "train.tsv.gz", "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip")
SST2_DEV = Source("sst2", "dev.tsv", "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip")
IMDB_VALIDATION_EVERY = 20  # every 20th training review (5%) is held out for validation


def _imdb(split):
    folder = "train" if split in ("train", "validation") else "test"
    texts, labels, ids = [], [], []
    with tarfile.open(fetch(IMDB_LOCAL), "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 4 and parts[1] == folder and parts[2] in ("neg", "pos"):
                texts.append(archive.extractfile(member).read().decode("utf-8").replace("<br />", " "))
                labels.append(int(parts[2] == "pos"))
                ids.append(int(parts[3].split("_")[0]))
    if folder == "train":
        held_out = np.asarray(ids) % IMDB_VALIDATION_EVERY == 0
        keep = held_out if split == "validation" else ~held_out
        texts = [t for t, k in zip(texts, keep) if k]
        labels = [label for label, k in zip(labels, keep) if k]
    return Classification(texts, np.asarray(labels, np.int32), ("negative", "positive"))


def _read_sst2_rows(split):
    source = SST2_TRAIN if split == "train" else SST2_DEV
    path = fetch(source)
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            text = archive.read(f"SST-2/{'train' if split == 'train' else 'dev'}.tsv").decode("utf-8")
    elif path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            text = f.read()
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    rows = [line.split("\t") for line in text.splitlines()[1:] if line]
    return [r[0].strip() for r in rows], np.asarray([int(r[1]) for r in rows], np.int32)


def _sst2(split):
    if split == "test":
        raise DatasetError("SST-2's test labels are hidden (GLUE): evaluate on split 'validation' (GLUE's dev set).")
    texts, labels = _read_sst2_rows(split)
    return Classification(texts, labels, ("negative", "positive"))


def _tfds_classification(name, split):
    import tensorflow_datasets as tfds

    builder = tfds.builder(name)
    splits = builder.info.splits
    if split == "validation" and "validation" not in splits:
        raise DatasetError(f"TFDS dataset {name!r} has no 'validation' split; it has {sorted(splits)}.")
    builder.download_and_prepare()
    keys = builder.info.supervised_keys
    if not keys:
        raise DatasetError(f"TFDS dataset {name!r} has no supervised (text, label) keys.")
    data = builder.as_dataset(split=split, as_supervised=True)
    texts, labels = [], []
    for text, label in tfds.as_numpy(data):
        texts.append(text.decode("utf-8"))
        labels.append(int(label))
    class_names = tuple(builder.info.features[keys[1]].names)
    return Classification(texts, np.asarray(labels, np.int32), class_names)


CLASSIFICATION = {"imdb": _imdb, "sst2": _sst2}
SPLITS = ("train", "validation", "test")


def subsample(data, count, seed):
    """A seeded random `count` of the examples (in their original order), e.g. for quick runs."""
    if count is None or count >= len(data.texts):
        return data
    keep = np.sort(np.random.default_rng(seed).permutation(len(data.texts))[:count])
    return Classification([data.texts[i] for i in keep], data.labels[keep], data.class_names)


def check_split(name, split):
    """Raises DatasetError early for a split that `name` does not have."""
    if name == "sst2" and split == "test":
        _sst2(split)
    if name.startswith("tfds:"):
        import tensorflow_datasets as tfds

        splits = tfds.builder(name[len("tfds:") :]).info.splits
        if splits and split not in splits:
            raise DatasetError(f"TFDS dataset {name[5:]!r} has no {split!r} split; it has {sorted(splits)}.")


def load_classification(name, split):
    """The `split` ("train", "validation" or "test") of a text classification dataset.

    `name` is "imdb", "sst2" or "tfds:<catalog name>".
    """
    if split not in SPLITS:
        raise DatasetError(f"split={split!r} is not one of {SPLITS}.")
    if name.startswith("tfds:"):
        return _tfds_classification(name[len("tfds:") :], split)
    if name not in CLASSIFICATION:
        raise DatasetError(
            f"Unknown classification dataset {name!r}: use one of {sorted(CLASSIFICATION)} or tfds:<name> "
            "for a TensorFlow Datasets text classification set (e.g. tfds:yelp_polarity_reviews)."
        )
    return CLASSIFICATION[name](split)
