"""Pretrained word vectors (GloVe, word2vec, fastText's .vec) for a vocabulary, how much of the training text they
cover, and the embedding they start. Only the vocabulary's rows of a file read as a stream are kept
(zoo.data.vectors_file), so memory holds (vocabulary, dim) floats whatever the file's size; docs/word_vectors.md says
why gensim's reader is not used.
"""

import dataclasses
import os

import numpy as np

from zoo.data import vectors_file
from zoo.data.vectors_file import FORMATS, VectorsFileError  # noqa: F401 (the errors callers catch)


DEFAULT_COVERAGE = 0.2  # the recipes' min_vector_coverage: the least share of training tokens covered
LANGUAGE_SHARE = 0.75  # check_language's bound on the repeated words covered, at DEFAULT_COVERAGE


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


def read_vectors(path, vocabulary, setting="model.word_vectors"):
    """The vectors `path` holds for the words of `vocabulary` (distinct strings, matched exactly); `setting`: the
    config field that named the file, said when the path names no file."""
    path = os.fspath(path)
    ids = {}
    for i, word in enumerate(vocabulary):
        if ids.setdefault(word.encode("utf-8"), i) != i:
            raise ValueError(f"The vocabulary holds {word!r} twice (ids {ids[word.encode('utf-8')]} and {i}).")
    form, dim, vectors, found, rows, duplicates = vectors_file.read(path, ids, setting)
    return WordVectors(path, form, dim, tuple(vocabulary), vectors, found, rows, duplicates)


@dataclasses.dataclass(frozen=True)
class Coverage:
    words_found: int
    words: int  # the vocabulary's words that occur in the training text
    tokens_found: int
    tokens: int  # the training text's tokens, those outside the vocabulary included
    repeated_found: int = 0
    repeated: int = 0  # the vocabulary's words seen at least twice in the training text (a language's own words)

    @property
    def repeated_share(self):
        """The share of the vocabulary's words seen twice or more whose word has a vector (1.0 when none is)."""
        return self.repeated_found / self.repeated if self.repeated else 1.0

    @property
    def share(self):
        """The share of training tokens whose word has a vector."""
        return self.tokens_found / self.tokens if self.tokens else 0.0

    def __str__(self):
        return f"word vectors: {self.words_found:,} of {self.words:,} words, {self.share:.1%} of training tokens"


def coverage(vectors, counts):
    """How much of the training text `vectors` covers; `counts`: each word's number of training tokens
    (a mapping word -> count over the whole text, words outside the vocabulary too)."""
    count = np.array([counts.get(word, 0) for word in vectors.vocabulary], np.int64)
    seen, repeated, found = count > 0, count > 1, vectors.found
    return Coverage(int((seen & found).sum()), int(seen.sum()), int(count[found].sum()), sum(counts.values()),
                    int((repeated & found).sum()), int(repeated.sum()))


def check_coverage(covered, minimum, path, flag):
    """Refuses vectors that cover less than `minimum` (a share) of the training tokens, naming
    `flag`, the setting that lowers the threshold."""
    if covered.share < minimum:
        raise CoverageError(f"{path}: word vectors cover {covered.share:.1%} of training tokens ({covered.words_found:,} "
                            f"of {covered.words:,} words), under {minimum:.0%}: is this the right file or language? "
                            f"(lower the threshold with {flag})")


def language_bound(minimum):
    """The least share of the vocabulary's repeated words a file of the text's language covers, for a token
    threshold `minimum`: LANGUAGE_SHARE at the default token threshold (0.2) and above, lowered in proportion
    under it (0 turns the check off). docs/word_vectors.md, "Coverage", gives the measurements it rests on."""
    return LANGUAGE_SHARE * min(1.0, minimum / DEFAULT_COVERAGE)


def check_language(covered, minimum, path, flag):
    """Refuses vectors of another language: a file covering less than `language_bound(minimum)` of the
    vocabulary's words seen twice or more (English GloVe 6B covers 99-100% of Multi30k's English words, at most
    78% of its German ones, and 64% or less with 200 words or more), naming `flag`, which lowers the bound."""
    bound = language_bound(minimum)
    if covered.repeated_share < bound:
        raise CoverageError(f"{path}: word vectors cover {covered.share:.1%} of training tokens but only "
                            f"{covered.repeated_found:,} of the vocabulary's {covered.repeated:,} words seen twice or "
                            f"more ({covered.repeated_share:.1%}), under {bound:.0%} (vectors of the text's language "
                            f"cover nearly all; {LANGUAGE_SHARE:.0%} at {flag}'s default {DEFAULT_COVERAGE}, less "
                            f"under it): is this the right file or language? (lower the threshold with {flag})")


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
