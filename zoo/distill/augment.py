"""Augmented copies of training texts (the config's `augment` section, docs/distillation.md).

Each copy applies the listed methods in turn, each at its rate, to the text's words (words and punctuation marks,
joined again by single spaces):

    mask        each word becomes [MASK] with probability `rate` (Tang et al. 2019)
    neighbours  each word becomes one of its nearest neighbours (cosine, in a word-vectors file, among the
                training texts' words) with probability `rate` (TinyBERT's GloVe route, Jiao et al. 2020)
    swap        max(1, round(rate x words)) swaps of two words at random (EDA, Wei and Zou 2019)
    delete      each word deleted with probability `rate`, one kept if none is (EDA)
    ngram       with probability `rate`, the text becomes one of its n-grams, n from 1 to 5 (Tang et al.)

A copy's random numbers come from (seed, the text's row, the copy, the text of a pair) alone, so a copy is the same
whatever the order texts are read in, and a run reproduces from its config.json. nlpaug and TextAttack were
not used: their synonyms need WordNet (NLTK's data download) and their embedding routes a model download; the five
methods above are a few lines each.
"""

import collections
import re

import numpy as np

from zoo.data import word_vectors

MASK = "[MASK]"  # the mask token of BERT's WordPiece vocabularies: a teacher fine-tuned from one reads it as such
NGRAM_MAX = 5  # Tang et al.'s n-gram sampling: n from 1 to 5
NEIGHBOUR_WORDS = 50_000  # the most frequent training words searched for neighbours (a bound on time and memory)
TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def words(text):
    """A text's words and punctuation marks, in order."""
    return TOKEN.findall(text)


def mask(tokens, rate, rng, neighbours):
    draws = rng.random(len(tokens))
    return [MASK if draw < rate else token for token, draw in zip(tokens, draws)]


def replace_by_neighbours(tokens, rate, rng, neighbours):
    draws, out = rng.random(len(tokens)), []
    for token, draw in zip(tokens, draws):
        options = neighbours.get(token.lower()) if draw < rate else None
        if options:
            choice = options[rng.integers(len(options))]
            token = choice.capitalize() if token[:1].isupper() else choice
        out.append(token)
    return out


def swap(tokens, rate, rng, neighbours):
    tokens = list(tokens)
    if len(tokens) < 2 or rate == 0:
        return tokens
    for _ in range(max(1, round(rate * len(tokens)))):
        i, j = rng.choice(len(tokens), 2, replace=False)
        tokens[i], tokens[j] = tokens[j], tokens[i]
    return tokens


def delete(tokens, rate, rng, neighbours):
    draws = rng.random(len(tokens))
    kept = [token for token, draw in zip(tokens, draws) if draw >= rate]
    return kept or [tokens[rng.integers(len(tokens))]]


def ngram(tokens, rate, rng, neighbours):
    if len(tokens) < 2 or rng.random() >= rate:
        return list(tokens)
    size = int(rng.integers(1, min(NGRAM_MAX, len(tokens)) + 1))
    start = int(rng.integers(len(tokens) - size + 1))
    return list(tokens[start:start + size])


FUNCTIONS = {"mask": mask, "neighbours": replace_by_neighbours, "swap": swap, "delete": delete, "ngram": ngram}


class Augmenter:
    """Makes a text's augmented copies: `copies(text, row)` -> `config.copies` texts (a text pair: pairs, each
    text augmented on its own). `neighbours`: word -> its nearest neighbours (`neighbour_table`), for that method."""

    def __init__(self, config, seed, neighbours=None):
        self.methods, self.count, self.seed = config.parsed, config.copies, seed
        self.neighbours = neighbours or {}

    def copies(self, text, row):
        return [self.copy(text, row, number) for number in range(self.count)]

    def copy(self, text, row, number):
        if isinstance(text, tuple):
            return tuple(self.one(part, [self.seed, row, number, side]) for side, part in enumerate(text))
        return self.one(text, [self.seed, row, number, 0])

    def one(self, text, entropy):
        tokens = words(text)
        if not tokens:
            return text
        rng = np.random.default_rng(entropy)
        for name, rate in self.methods:
            tokens = FUNCTIONS[name](tokens, rate, rng, self.neighbours)
        return " ".join(tokens)


def neighbour_table(texts, path, count, setting="augment.vectors"):
    """word -> its `count` nearest neighbours by cosine among the training `texts`' (lower-cased) words that the
    vectors file at `path` holds, the most frequent NEIGHBOUR_WORDS of them; words the file lacks have none."""
    counts = collections.Counter(token.lower() for text in texts for part in (text if isinstance(text, tuple)
                                                                             else (text,))
                                 for token in words(part) if token[0].isalnum())
    vocabulary = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:NEIGHBOUR_WORDS]]
    print(f"Reading {path} for the nearest neighbours of {len(vocabulary):,} training words ...", flush=True)
    read = word_vectors.read_vectors(path, vocabulary, setting)
    found = [word for word, hit in zip(vocabulary, read.found) if hit]
    if len(found) < 2:
        raise word_vectors.VectorsFileError(f"{setting}={path} holds {len(found)} of the training texts' words: the "
                                            "neighbours method needs vectors of the texts' language.")
    vectors = read.vectors[read.found]
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    count = min(count, len(found) - 1)
    table = {}
    for start in range(0, len(found), 1024):
        similarity = vectors[start:start + 1024] @ vectors.T
        rows = np.arange(similarity.shape[0])
        similarity[rows, rows + start] = -np.inf  # not a word's own neighbour
        top = np.argpartition(-similarity, count - 1, axis=1)[:, :count]
        order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1, kind="stable")
        for row, indices in enumerate(np.take_along_axis(top, order, axis=1)):
            table[found[start + row]] = tuple(found[i] for i in indices)
    print(f"Neighbours found for {len(found):,} of the {len(vocabulary):,} words.", flush=True)
    return table
