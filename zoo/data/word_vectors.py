"""Pretrained word vectors (GloVe, word2vec, fastText's .vec) for a vocabulary, and the embedding they start.

`read_vectors` keeps only the vocabulary's rows of a file read as a stream (zoo.data.vectors_file: the
formats, told apart by content, plain or gzip, and their checks), so memory holds (vocabulary, dim) floats
whatever the file's size. `coverage` says how much of the training text they cover, `check_coverage` refuses
too little (the wrong file or language), and `embedding_matrix` gives the initial token embedding.
docs/word_vectors.md says why gensim's reader is not used.
"""

import dataclasses
import os

import numpy as np

from zoo.data import vectors_file
from zoo.data.vectors_file import FORMATS, VectorsFileError  # noqa: F401 (the errors callers catch)


class CoverageError(ValueError):
    """The vectors cover too little of the training text: likely the wrong file or language."""


@dataclasses.dataclass(frozen=True, eq=False)
class WordVectors:
    path: str
    format: str  # one of FORMATS
    dim: int
    vocabulary: tuple  # the words asked for: row i of `vectors` is vocabulary[i]'s
    vectors: np.ndarray  # (len(vocabulary), dim) float32, zeros where `found` is False
    found: np.ndarray  # (len(vocabulary),) bool
    rows: int  # rows (records) in the file
    duplicates: int  # rows of a vocabulary word after its first, which is the one kept


def read_vectors(path, vocabulary):
    """The vectors `path` holds for the words of `vocabulary` (distinct strings, matched exactly)."""
    path = os.fspath(path)
    ids = {}
    for i, word in enumerate(vocabulary):
        if ids.setdefault(word.encode("utf-8"), i) != i:
            raise ValueError(f"The vocabulary holds {word!r} twice (ids {ids[word.encode('utf-8')]} and {i}).")
    form, dim, vectors, found, rows, duplicates = vectors_file.read(path, ids)
    return WordVectors(path, form, dim, tuple(vocabulary), vectors, found, rows, duplicates)


@dataclasses.dataclass(frozen=True)
class Coverage:
    words_found: int
    words: int  # the vocabulary's words that occur in the training text
    tokens_found: int
    tokens: int  # the training text's tokens, those outside the vocabulary included

    @property
    def share(self):
        """The share of training tokens whose word has a vector."""
        return self.tokens_found / self.tokens if self.tokens else 0.0

    def __str__(self):
        return (f"word vectors: {self.words_found:,} of {self.words:,} words, {self.share:.1%} of training "
                "tokens")


def coverage(vectors, counts):
    """How much of the training text `vectors` covers; `counts`: each word's number of training tokens
    (a mapping word -> count over the whole text, words outside the vocabulary too)."""
    words = words_found = tokens_found = 0
    for word, found in zip(vectors.vocabulary, vectors.found):
        count = counts.get(word, 0)
        words += count > 0
        words_found += bool(found) and count > 0
        tokens_found += count if found else 0
    return Coverage(words_found, words, tokens_found, sum(counts.values()))


def check_coverage(covered, minimum, path, flag):
    """Refuses vectors that cover less than `minimum` (a share) of the training tokens, naming
    `flag`, the setting that lowers the threshold."""
    if covered.share < minimum:
        raise CoverageError(
            f"{path}: word vectors cover {covered.share:.1%} of training tokens ({covered.words_found:,} of "
            f"{covered.words:,} words), under {minimum:.0%}: is this the right file or language? (lower the "
            f"threshold with {flag})")


def embedding_matrix(vectors, seed=0, zero_ids=(0,), random_ids=()):
    """(len(vocabulary), dim) float32 initial embeddings: a word's vector where the file has one; else a
    row drawn from a normal distribution with the found vectors' mean and standard deviation per
    dimension (seeded); zeros for `zero_ids` (padding); a drawn row for `random_ids` even when the file
    has that string (special tokens such as <s>, whose meaning is the model's own)."""
    if not vectors.found.any():
        raise ValueError(f"{vectors.path} has a vector for no word of the vocabulary: nothing to start from.")
    known = vectors.vectors[vectors.found]
    rows = np.random.default_rng(seed).standard_normal(vectors.vectors.shape, np.float32)
    matrix = rows * known.std(axis=0) + known.mean(axis=0)
    use = vectors.found.copy()
    use[list(random_ids)] = False
    matrix[use] = vectors.vectors[use]
    matrix[list(zero_ids)] = 0.0
    return matrix.astype(np.float32)
