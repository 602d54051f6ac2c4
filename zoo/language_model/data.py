"""The language model's text: a built-in corpus (ptb, tinyshakespeare, wikitext103, enwik8) or the user's files (text:
one line a row; csv: and jsonl: a text column, each row a line), one split at a time, read as lines: `load` takes the
run's zoo.data.spec.DatasetSpec (LMRunConfig.dataset_spec). Its token ids come from `token_stream`: tokenized once
into zoo.data.cache, the rows laid end to end as the corpus's one stream, read from disk a window at a time.

Files whose validation is held out of the training text (no {split} in the pattern, or no validation files)
hold out whole blocks of lines, not lines scattered among the training ones (`held_out_blocks`): a text's
lines continue each other, so a held-out line between trained-on neighbours would not be held out at all."""

import collections
import os

from zoo.data import cache, datasets, files, spec as dataset_spec
from zoo.language_model import corpora
from zoo.data.sources import Sources, folder_files_digest
from zoo.data.datasets import DatasetError
from zoo.data.tokenizer import MAX_TRAINING_CHARACTERS, TOKENIZER_FILE
from zoo.language_model.subword import SubwordVocabulary
from zoo.language_model.vocabulary import LEVELS, VOCABULARY_FILE, Vocabulary, split

FORMS = ("text", "csv", "jsonl")
FILE_LEVELS = (*LEVELS, "subword")
# The held-out share: 1 in HELD_OUT_EVERY of the lines, as whole blocks of at least MIN_BLOCK_CHARACTERS
# (about), at most MAX_BLOCKS of them spread through the text (a corpus's topics drift along it).
HELD_OUT_EVERY = dataset_spec.HELD_OUT_EVERY
MIN_BLOCK_CHARACTERS = 1_000_000
MAX_BLOCKS = 10
HELD_OUT_RULE = "blocks"  # in the token cache's key: entries made under the earlier scattered lines differ


class Corpus:
    """One split of a corpus as lines (each ending in "\\n"), readable more than once; `level` is how
    the corpus is tokenized, `key` the data's part of a cache key, `size` about its characters, `sources` its
    files (zoo.data.sources.Sources; None for a built-in corpus)."""

    def __init__(self, lines, level, key, size, paths=(), encoding="utf-8", sources=None, skipped=0):
        self._lines, self.level, self.key, self.size, self.paths = lines, level, key, size, tuple(paths)
        self.sources = sources
        self.encoding = encoding  # byte level: how a line's characters become its bytes
        self.skipped = skipped  # bad rows left out (--bad_rows=skip)

    def rows(self):
        """The lines as the tokenizer reads them: bytes at byte level, else strings."""
        return (line.encode(self.encoding) for line in self) if self.level == "byte" else iter(self)

    def __iter__(self):
        return self._lines()

    def sample(self, max_characters, seed):
        """A seeded sample of the lines with about `max_characters` in all, read in one pass."""
        return datasets.sample_share(self, self.size, max_characters, seed)


def load(dataset, split, level=None, text_column="text", bad_rows="error"):
    """The `split` of `dataset`: a zoo.data.spec.DatasetSpec (a run's, its columns.text the text's column), or a
    dataset string read with `text_column`. A built-in corpus has its own level; files take `level` (default
    subword)."""
    spec = dataset_spec.given(dataset, FORMS, dataset_spec.Columns(text=text_column))
    text_column, name = spec.columns.text, spec.name
    if not spec.files:
        corpus = corpora.load_corpus(name, split)
        if level is not None and level != corpus.level:
            raise DatasetError(f"{name} is a {corpus.level}-level corpus: leave --level out, or give "
                               f"--level={corpus.level}.")
        # enwik8's bytes are kept as Latin-1 characters, one per byte.
        return Corpus(lambda: _text_lines(corpus.text), corpus.level, {"dataset": name, "split": split},
                      len(corpus.text), encoding="latin-1" if corpus.level == "byte" else "utf-8")
    level = level or "subword"
    if level not in FILE_LEVELS:
        raise DatasetError(f"--level={level!r} is not one of {FILE_LEVELS}.")
    dataset_spec.check_split(spec, split)
    if spec.form != "text":
        files.check_columns(spec, split, (text_column,))
    paths = dataset_spec.paths(spec, split)
    bad = files.BadRows(bad_rows)
    size = count = 0
    for line in _lines(spec, split, text_column, bad):
        size, count = size + len(line), count + 1
    bad.check(f"{spec} ({split})")
    if size == 0:
        raise DatasetError(f"--dataset={spec} has no text in its {split} split.")
    sources = Sources(lambda: dataset_spec.paths(spec, split))
    key = {"files": sources.digest, "spec": str(spec), "split": split, "column": text_column}
    lines = lambda: _lines(spec, split, text_column, files.BadRows("skip"))  # noqa: E731
    if split in ("train", "validation") and dataset_spec.holds_out(spec):  # train, or its held-out validation
        every, held_out, wanted = lines, held_out_blocks(count, size, spec), split == "validation"
        lines = lambda: (line for index, line in enumerate(every()) if held_out(index) == wanted)  # noqa: E731
        size = size // HELD_OUT_EVERY if wanted else size - size // HELD_OUT_EVERY
        key["held_out"] = HELD_OUT_RULE
    return Corpus(lines, level, key, size, paths, sources=sources, skipped=bad.count if bad_rows == "skip" else 0)


def held_out_blocks(count, size, spec="the text"):
    """A predicate on a line's index (of `count` good lines, `size` characters, all files in order): whether
    it is in the held-out share. The lines are cut into HELD_OUT_EVERY x blocks equal runs and the last of
    every HELD_OUT_EVERY runs is held out: one block at the end of a small text, up to MAX_BLOCKS spread
    through a large one. A function of the count and size alone, so evaluation finds the same lines."""
    if count < HELD_OUT_EVERY:
        raise DatasetError(f"--dataset={spec} has {count} lines: too few to hold out 1 in {HELD_OUT_EVERY} of them "
                           "for validation. Give more text, or name the files with {split} (train, validation, "
                           "test).")
    blocks = max(1, min(MAX_BLOCKS, size // (HELD_OUT_EVERY * MIN_BLOCK_CHARACTERS), count // HELD_OUT_EVERY))
    runs = blocks * HELD_OUT_EVERY
    return lambda index: index * runs // count % HELD_OUT_EVERY == HELD_OUT_EVERY - 1


def default_split(dataset):
    """The split evaluated when none is asked for (zoo.data.spec.default_split) of `dataset`: a DatasetSpec, or a
    dataset string (zoo.sweeps reads it of a config's data.dataset)."""
    return dataset_spec.default_split(dataset_spec.given(dataset, FORMS))


def _text_lines(text):
    """The lines of a text, each with its "\n" (the last one as it is)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _lines(spec, split, text_column, bad):
    """Every line of `split`'s files, a held-out share's too (`load` picks its blocks)."""
    for row in files.rows(spec, split, bad, whole=True):
        text = files.text_of(row, "text" if spec.form == "text" else text_column, bad)
        if text is not None:
            yield text if text.endswith("\n") else text + "\n"


def check_split(spec, split):
    """Refuses early a split the dataset (a zoo.data.spec.DatasetSpec) does not have."""
    if spec.files:
        dataset_spec.check_split(spec, split)
    else:
        corpora.load_corpus(spec.name, split)  # a missing or damaged file fails now


def build_vocabulary(corpus, vocab_size=None, seed=0):
    """The training corpus's vocabulary: word, char or byte counts gathered a line at a time, or a
    SentencePiece model trained on a sample of the lines (subword, `vocab_size` pieces)."""
    if corpus.level == "subword":
        return SubwordVocabulary.build(corpus.sample(MAX_TRAINING_CHARACTERS, seed), vocab_size, seed)
    return Vocabulary.from_counts(token_counts(corpus), corpus.level)


def token_counts(corpus):
    """Each token's count in a word, char or byte corpus (<eos> included), gathered a line at a time."""
    counts = collections.Counter()
    for line in corpus.rows():
        # A byte is a Latin-1 character of the vocabulary (enwik8's loader reads bytes so).
        counts.update(split(line.decode("latin-1") if corpus.level == "byte" else line, corpus.level))
    return counts


def load_vocabulary(directory):
    """A run's vocabulary: vocabulary.json (word, char, byte), else its subword model."""
    if os.path.exists(os.path.join(directory, VOCABULARY_FILE)):
        return Vocabulary.load(directory)
    return SubwordVocabulary.load(directory)


def vocabulary_key(directory):
    """The run's vocabulary files' contents: the vocabulary's part of a cache key."""
    return folder_files_digest(directory, (VOCABULARY_FILE, TOKENIZER_FILE))


def token_stream(corpus, vocabulary, vocabulary_key):
    """The corpus's ids, tokenized in graph (`vocabulary.tokenize`, as served) line by line into the cache (a
    file that changes while it is tokenized is refused)."""
    key = {"data": corpus.key, "vocabulary": vocabulary_key, "level": corpus.level}
    rows = ((line, None) for line in corpus.rows())
    graph = corpus.level != "subword"  # subword: the library's encoder, which gives the graph's ids twice as fast
    return cache.token_rows(key, rows, vocabulary.tokenize if graph else vocabulary.encode_lines, "tokenizing",
                            corpus.size, in_graph=graph, sources=corpus.sources)
