"""The language model's text: a built-in corpus (ptb, tinyshakespeare, wikitext103, enwik8) or the user's
files (text: one line a row; csv: and jsonl: a text column, each row a line), one split at a time, read as
lines. Its token ids come from `token_stream`: tokenized once into zoo.data.cache, the rows laid end to
end as the corpus's one stream, read from disk a window at a time.
"""

import collections
import os

import numpy as np

from zoo.data import cache, files
from zoo.language_model import corpora
from zoo.data.datasets import DatasetError
from zoo.data.tokenizer import MAX_TRAINING_CHARACTERS
from zoo.language_model.subword import SubwordVocabulary
from zoo.language_model.vocabulary import LEVELS, VOCABULARY_FILE, Vocabulary, split

FORMS = ("text", "csv", "jsonl")
FILE_LEVELS = (*LEVELS, "subword")


class Corpus:
    """One split of a corpus as lines (each ending in "\\n"), readable more than once; `level` is how
    the corpus is tokenized, `key` the data's part of a cache key, `size` about its characters, `sources` its
    files (zoo.data.cache.Sources; None for a built-in corpus)."""

    def __init__(self, lines, level, key, size, paths=(), encoding="utf-8", sources=None):
        self._lines, self.level, self.key, self.size, self.paths = lines, level, key, size, tuple(paths)
        self.sources = sources
        self.encoding = encoding  # byte level: how a line's characters become its bytes
        self.skipped = 0  # bad rows left out (--bad_rows=skip)

    def rows(self):
        """The lines as the tokenizer reads them: bytes at byte level, else strings."""
        return (line.encode(self.encoding) for line in self) if self.level == "byte" else iter(self)

    def __iter__(self):
        return self._lines()

    def sample(self, max_characters, seed):
        """A seeded sample of the lines with about `max_characters` in all, read in one pass."""
        share, rng = min(1.0, max_characters / max(self.size, 1)), np.random.default_rng(seed)
        return [line for line in self if share >= 1 or rng.random() < share]


def load(name, split, level=None, text_column="text", bad_rows="error"):
    """The `split` of corpus `name`. A built-in corpus has its own level; files take `level` (default subword)."""
    spec = files.parse(name, FORMS)
    if spec is None:
        corpus = corpora.load_corpus(name, split)
        if level is not None and level != corpus.level:
            raise DatasetError(f"{name} is a {corpus.level}-level corpus: leave --level out, or give "
                               f"--level={corpus.level}.")
        text = corpus.text
        # enwik8's bytes are kept as Latin-1 characters, one per byte.
        encoding = "latin-1" if corpus.level == "byte" else "utf-8"
        return Corpus(lambda: _text_lines(text), corpus.level, {"dataset": name, "split": split}, len(text),
                      encoding=encoding)
    level = level or "subword"
    if level not in FILE_LEVELS:
        raise DatasetError(f"--level={level!r} is not one of {FILE_LEVELS}.")
    files.check_split(spec, split)
    if spec.form != "text":
        files.check_columns(spec, split, (text_column,))
    paths = files.paths(spec, split)
    bad = files.BadRows(bad_rows)
    size = 0
    for line in _lines(spec, split, text_column, bad):
        size += len(line)
    bad.check(f"{spec} ({split})")
    if size == 0:
        raise DatasetError(f"--dataset={spec} has no text in its {split} split.")
    sources = cache.Sources(lambda: files.paths(spec, split))
    key = {"files": sources.digest, "spec": str(spec), "split": split, "column": text_column}
    corpus = Corpus(lambda: _lines(spec, split, text_column, files.BadRows("skip")), level, key, size, paths,
                    sources=sources)
    corpus.skipped = bad.count if bad_rows == "skip" else 0
    return corpus


def _text_lines(text):
    """The lines of a text, each with its "\n" (the last one as it is)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _lines(spec, split, text_column, bad):
    for row in files.rows(spec, split, bad):
        text = row.values.get("text" if spec.form == "text" else text_column)
        if not isinstance(text, str):
            bad.add(row.where, f"no text in {text_column!r}" if text is None else f"{text_column!r} is not text")
            continue
        yield text if text.endswith("\n") else text + "\n"


def check_split(name, split):
    spec = files.parse(name, FORMS)
    if spec is None:
        corpora.load_corpus(name, split)  # a missing or damaged file fails now
    else:
        files.check_split(spec, split)


def build_vocabulary(corpus, vocab_size=None, seed=0):
    """The training corpus's vocabulary: word, char or byte counts gathered a line at a time, or a
    SentencePiece model trained on a sample of the lines (subword, `vocab_size` pieces)."""
    if corpus.level == "subword":
        return SubwordVocabulary.build(corpus.sample(MAX_TRAINING_CHARACTERS, seed), vocab_size, seed)
    counts = collections.Counter()
    for line in corpus.rows():
        # A byte is a Latin-1 character of the vocabulary (enwik8's loader reads bytes so).
        counts.update(split(line.decode("latin-1") if corpus.level == "byte" else line, corpus.level))
    return Vocabulary.from_counts(counts, corpus.level)


def load_vocabulary(directory):
    """A run's vocabulary: vocabulary.json (word, char, byte), else its subword model."""
    if os.path.exists(os.path.join(directory, VOCABULARY_FILE)):
        return Vocabulary.load(directory)
    return SubwordVocabulary.load(directory)


def vocabulary_file(level):
    """The file a run's vocabulary of `level` is saved as (a worker waits for it)."""
    from zoo.data.tokenizer import TOKENIZER_FILE

    return TOKENIZER_FILE if level == "subword" else VOCABULARY_FILE


def vocabulary_key(directory):
    """The run's vocabulary files' contents: the vocabulary's part of a cache key."""
    from zoo.data.tokenizer import TOKENIZER_FILE

    names = (VOCABULARY_FILE, TOKENIZER_FILE)
    return cache.folder_files_digest(directory, names)


def token_stream(corpus, vocabulary, vocabulary_key):
    """The corpus's ids, tokenized in graph (`vocabulary.tokenize`, as served) line by line into the cache (a
    file that changes while it is tokenized is refused)."""
    key = {"data": corpus.key, "vocabulary": vocabulary_key, "level": corpus.level}
    rows = ((line, None) for line in corpus.rows())
    if corpus.level == "subword":  # the library's encoder, which gives the ids the graph does, twice as fast
        return cache.token_rows(key, rows, vocabulary.encode_lines, "tokenizing", corpus.size, in_graph=False,
                                sources=corpus.sources)
    return cache.token_rows(key, rows, vocabulary.tokenize, "tokenizing", corpus.size, sources=corpus.sources)
