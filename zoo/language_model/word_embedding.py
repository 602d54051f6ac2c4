"""The token embedding a word-level language model starts from pretrained word vectors (docs/word_vectors.md).

The vocabulary stays the model's own (zoo.language_model.vocabulary: the training text's whitespace-split words;
PTB's are lower-cased and tokenized as GloVe 6B's were) and its words are looked up in the file as they are.
<pad> gets zeros, <unk> and <eos> drawn rows (whatever the file holds for those strings: they mean what the model
makes of them), the words the file lacks rows drawn like the found ones (zoo.data.word_vectors.embedding_matrix).
As zoo.data.word_embedding does for the classifier, the matrix is rescaled by one number to the embedding's own
initial spread, embedding_dim ** -0.5: the model's scaled embedding (x sqrt(embedding_dim)) then starts at unit
variance, as a random one does, instead of GloVe's values x sqrt(50).
"""

import dataclasses

import numpy as np
import tensorflow as tf

from zoo.data import word_embedding, word_vectors
from zoo.language_model.vocabulary import EOS, PAD, UNK

COVERAGE_SETTING = "--config.model.min_vector_coverage"


@dataclasses.dataclass(frozen=True, eq=False)
class VectorsPlan:
    vocabulary: object  # the training text's zoo.language_model.vocabulary.Vocabulary, the run's vocabulary.json
    matrix: np.ndarray  # (len(vocabulary), dim) float32 initial token embedding
    derived: dict  # config.json's derived.word_vectors: coverage, format, the matrix's sha256
    line: str  # the log's line


def plan_vectors(vocabulary, counts, path, min_coverage, seed):
    """The VectorsPlan of a word `vocabulary` (zoo.language_model.vocabulary.Vocabulary) with the vectors of `path`:
    `counts`, each token's count in the training text (<eos> and PTB's own <unk> included: their rows are not the
    file's), say the coverage, refused under `min_coverage`; `seed` draws the rows the file does not give."""
    vectors = word_vectors.read_vectors(path, vocabulary.tokens)
    special = np.isin(np.asarray(vocabulary.tokens, dtype=object), [PAD, UNK, EOS])
    vectors = dataclasses.replace(vectors, found=vectors.found & ~special)
    covered = word_vectors.coverage(vectors, counts)
    word_vectors.check_coverage(covered, min_coverage, path, COVERAGE_SETTING)
    matrix, derived, line = word_embedding.start(vectors, covered, seed, (vocabulary.ids[PAD],), (), vectors.dim**-0.5)
    return VectorsPlan(vocabulary, matrix, derived, line)


def with_vectors(model, plan):
    """The LMConfig `model` with the vectors' width as its embedding_dim (projected to hidden_dim when they
    differ); an embedding_dim asked for that differs is refused, naming both."""
    dim = plan.matrix.shape[1]
    if model.embedding_dim not in (None, dim):
        raise ValueError(f"model.embedding_dim={model.embedding_dim} but the word vectors of {model.word_vectors} have "
                         f"{dim} dimensions: leave model.embedding_dim out (a projection maps them to "
                         f"model.hidden_dim={model.hidden_dim}).")
    return dataclasses.replace(model, embedding_dim=dim)


def initializer(matrix):
    """Task.initialize: puts `matrix` into a TransformerXL's token embedding, once, before the first step."""

    def initialize(model):
        table = model.embedding.embeddings
        if tuple(table.shape) != matrix.shape:
            raise ValueError(f"The word vectors make a {matrix.shape} embedding, the model has {tuple(table.shape)}.")
        table.assign(tf.constant(matrix, table.dtype))

    return initialize
