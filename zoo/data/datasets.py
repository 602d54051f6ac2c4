"""Raw datasets: read from ZOO_DATA_DIR when it is set, else downloaded from
their official sources (or loaded through TensorFlow Datasets for `tfds:NAME`): the fetching and
reading every family's built-in datasets share, and the classification sets (the translation
sets are in zoo.translation.corpora, the language-modelling ones in zoo.language_model.corpora).

Every loader returns plain Python data (lists of strings, NumPy labels); the
tf.data pipelines are built from them in `zoo.data.batching`.
"""

import contextlib
import dataclasses
import gzip
import io
import os
import tarfile
import zipfile
import zlib

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
            raise DatasetError(f"{path} does not exist. {DATA_ENV}={root} is set, so the zoo reads the "
                               f"{source.folder!r} dataset from there: put {source.local_name} in "
                               f"{os.path.join(root, source.folder)} (see SOURCE.md in the shared data folder), or "
                               f"unset {DATA_ENV} to download it from {source.url}.")
        return path
    import keras

    name = os.path.basename(source.url)
    try:
        return keras.utils.get_file(name, source.url, cache_subdir=os.path.join("zoo_datasets", source.folder))
    except Exception as error:  # Keras raises a bare Exception for a failed fetch (and removes the partial file)
        raise DatasetError(f"Could not download the {source.folder!r} dataset from {source.url} ({error}). Check the "
                           f"network, or set {DATA_ENV} to a folder whose {source.folder}/ holds {source.local_name} "
                           "(a copy made from that URL).") from None


@contextlib.contextmanager
def reading(path):
    """Turns what a corrupt, truncated or undecodable data file raises into one DatasetError that names the file."""
    try:
        yield
    except (EOFError, OSError, tarfile.TarError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError, KeyError) as error:
        if isinstance(error, FileNotFoundError) and error.filename != path:
            raise
        raise DatasetError(f"{path} cannot be read ({type(error).__name__}: {error}): the file is corrupt, truncated "
                           "or not the expected format. Fetch it again (its folder's SOURCE.md says from where), or "
                           f"unset {DATA_ENV} to download it.") from None


@dataclasses.dataclass(frozen=True)
class Classification:
    """A labelled text classification split."""

    texts: list
    labels: np.ndarray
    class_names: tuple


IMDB_LOCAL = Source("imdb", "aclImdb_v1_labeled.tar.gz", "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz")
SST2_TRAIN = Source("sst2", "train.tsv.gz", "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip")
SST2_DEV = Source("sst2", "dev.tsv", "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip")
HELD_OUT_EVERY = 20  # IMDB (and sst2_tune) hold out every 20th training text (5%) for validation
SENTIMENT = ("negative", "positive")


def _held_out(texts, labels, numbers, split):
    """The validation share of training texts (those whose `numbers` are multiples of HELD_OUT_EVERY), or the rest."""
    keep = (np.asarray(numbers) % HELD_OUT_EVERY == 0) == (split == "validation")
    return [t for t, k in zip(texts, keep) if k], np.asarray(labels, np.int32)[keep]


def _imdb(split):
    folder = "train" if split in ("train", "validation") else "test"
    texts, labels, ids = [], [], []
    path = fetch(IMDB_LOCAL)
    with reading(path), tarfile.open(path, "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 4 and parts[1] == folder and parts[2] in ("neg", "pos"):
                texts.append(archive.extractfile(member).read().decode("utf-8").replace("<br />", " "))
                labels.append(int(parts[2] == "pos"))
                ids.append(int(parts[3].split("_")[0]))
    if folder == "train":
        texts, labels = _held_out(texts, labels, ids, split)
    return Classification(texts, np.asarray(labels, np.int32), SENTIMENT)


def _read_sst2_rows(split):
    path = fetch(SST2_TRAIN if split == "train" else SST2_DEV)
    if path.endswith(".zip"):
        with reading(path), zipfile.ZipFile(path) as archive:
            text = archive.read(f"SST-2/{'train' if split == 'train' else 'dev'}.tsv").decode("utf-8")
    else:
        text = read_text(path)
    texts, labels = [], []
    for number, line in enumerate(text.splitlines()[1:], start=2):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 2 or fields[1].strip() not in ("0", "1"):
            raise DatasetError(f"{path}, line {number}: expected 'sentence<TAB>label' with label 0 or 1, found "
                               f"{line[:80]!r}. The file is truncated or damaged: fetch it again (see SOURCE.md).")
        texts.append(fields[0].strip())
        labels.append(int(fields[1]))
    return texts, np.asarray(labels, np.int32)


def _sst2(split):
    if split == "test":
        raise DatasetError("SST-2's test labels are hidden (GLUE): evaluate on split 'validation' (GLUE's dev set).")
    return Classification(*_read_sst2_rows(split), SENTIMENT)


def _sst2_tune(split):
    """SST-2 for tuning: GLUE's train without every 20th sentence, which is held out as validation,
    so hyper-parameters are chosen without seeing the dev set that `sst2` reports."""
    if split == "test":
        raise DatasetError("sst2_tune is for tuning and has no test split: report on sst2's validation (GLUE dev).")
    texts, labels = _read_sst2_rows("train")
    return Classification(*_held_out(texts, labels, np.arange(len(texts)), split), SENTIMENT)


TFDS_CATALOG = "https://www.tensorflow.org/datasets/catalog/overview"


def tfds_builder(name):
    """TFDS's builder of the catalog name `name` ("dataset" or "dataset/config"). An unknown name is one
    DatasetError with the closest names, where TFDS's own message lists its whole catalog."""
    import difflib

    import tensorflow_datasets as tfds

    try:
        return tfds.builder(name)
    except tfds.core.DatasetNotFoundError:
        dataset, slash, config = name.partition("/")
        close = difflib.get_close_matches(dataset, tfds.list_builders(with_community_datasets=False), n=3)
        hint = f" Did you mean {' or '.join(f'tfds:{c}{slash}{config}' for c in close)}?" if close else ""
        raise DatasetError(f"TFDS has no dataset {dataset!r}.{hint} Its catalog: {TFDS_CATALOG}.") from None


def _tfds_classification(name, split):
    import tensorflow_datasets as tfds

    builder = tfds_builder(name)
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


CLASSIFICATION = {"imdb": _imdb, "sst2": _sst2, "sst2_tune": _sst2_tune}
SPLITS = ("train", "validation", "test")


def subsample(data, count, seed):
    """A seeded random `count` of the examples (in their original order), e.g. for quick runs."""
    if count is None or count >= len(data.texts):
        return data
    keep = np.sort(np.random.default_rng(seed).permutation(len(data.texts))[:count])
    return Classification([data.texts[i] for i in keep], data.labels[keep], data.class_names)


def sample_share(texts, total, max_characters, seed):
    """A seeded share of `texts` (read once) with about `max_characters` of their `total` characters in all, each text
    kept with the same chance; all of them when they hold no more: what a tokenizer or a vocabulary learns from."""
    if total <= max_characters:
        return list(texts)
    share, rng = max_characters / total, np.random.default_rng(seed)
    return [text for text in texts if rng.random() < share]


def check_split(name, split):
    """Raises DatasetError early (before any training) for a split that `name` does not have,
    or whose file does not parse: local datasets are read here."""
    if name.startswith("tfds:"):
        splits = tfds_builder(name[len("tfds:") :]).info.splits
        if splits and split not in splits:
            raise DatasetError(f"TFDS dataset {name[5:]!r} has no {split!r} split; it has {sorted(splits)}.")
    elif name in CLASSIFICATION:
        load_classification(name, split)


def load_classification(name, split):
    """The `split` ("train", "validation" or "test") of the text classification dataset `name`: "imdb", "sst2",
    "sst2_tune" or "tfds:<catalog name>"."""
    if split not in SPLITS:
        raise DatasetError(f"split={split!r} is not one of {SPLITS}.")
    if name.startswith("tfds:"):
        return _tfds_classification(name[len("tfds:") :], split)
    if name not in CLASSIFICATION:
        raise DatasetError(f"Unknown classification dataset {name!r}: use one of {sorted(CLASSIFICATION)} or "
                           "tfds:<name> for a TensorFlow Datasets text classification set (e.g. "
                           "tfds:yelp_polarity_reviews).")
    return CLASSIFICATION[name](split)


def open_binary(path):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def open_text(path, bom=True):
    """The file as UTF-8 text, its newlines kept as they are (csv needs newline=""); a BOM dropped."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig" if bom else "utf-8", newline="")


def read_text(path):
    """The file's text as it is (no newline translation): "\r" stays whitespace, as the exports' in-graph
    tokenizers see the same text served."""
    with reading(path), open_text(path, bom=False) as f:
        return f.read()


def lines_of(f):
    """The lines of a text stream, each with its "\n", split at "\n" alone: iterating a stream opened with
    newline="" also splits at a lone "\r", and `str.splitlines` at \v, \f, \x85 ..., which would shift one
    side of a parallel corpus against the other."""
    rest = ""
    while chunk := f.read(1 << 20):
        *lines, rest = (rest + chunk).split("\n")
        yield from (line + "\n" for line in lines)
    if rest:
        yield rest


def read_lines(path):
    """The file's lines (`lines_of`) without their ends, a Windows line's "\r" dropped too."""
    text = read_text(path)  # decoded whole: a bad byte's position in the error counts from the file's start
    return [line.removesuffix("\n").removesuffix("\r") for line in lines_of(io.StringIO(text))]
