"""A run's word vocabulary and the token embedding its word vectors start (docs/word_vectors.md).

`plan_words` counts the training text's words (zoo.data.word_tokenizer's rule, the one its export serves),
keeps the most frequent as the vocabulary, reads the vectors file for them (zoo.data.word_vectors, streaming)
and refuses a file that covers too little of the text, all before the run folder gets a file. The matrix it
gives is the vectors rescaled by one number so that their spread is the embedding layer's own initial one:
the scaled embedding (the paper's, x sqrt(d)) then starts at unit variance as a random one does, instead of
GloVe's values x sqrt(50) (about 7 times that), and BERT's unscaled one at 0.02. Directions and the words'
relative norms are kept. `initializer` puts it into a built model once, at step 0 (zoo.training.config.Task);
`words_model` sizes a recipe's encoder config to the plan, and `check_resumed` refuses a resumed run whose file
changed.
"""

import collections
import dataclasses
import hashlib
import itertools

import numpy as np
import tensorflow as tf

from zoo.data import word_tokenizer, word_vectors


@dataclasses.dataclass(frozen=True, eq=False)
class WordPlan:
    words: list  # the vocabulary, special tokens first (zoo.data.word_tokenizer.build_vocabulary)
    matrix: np.ndarray | None  # (len(words), dim) float32 initial token embedding; None: random (no vectors)
    derived: dict  # what config.json's derived part records: coverage, format, the matrix's sha256
    line: str  # the log's line


def count_words(texts, batch_size=4096):
    """Each word's number of tokens in `texts` (any iterable of strings, read `batch_size` at a time, so a
    large corpus is never one tensor)."""
    counts = collections.Counter()
    texts = iter(texts)
    while batch := list(itertools.islice(texts, batch_size)):
        counts.update(word_tokenizer.count_words(batch, batch_size))
    return counts


def plan_words(texts, vocab_size, vectors_path=None, min_coverage=0.0, seed=0, scaled=True,
               coverage_setting="model.min_vector_coverage", mask=False, vectors_setting="model.word_vectors"):
    """The vocabulary of `texts` (at most `vocab_size` ids) and, with `vectors_path`, its initial embedding
    rescaled to the spread of layers.TokenAndPositionEmbedding's own initial one: dim ** -0.5 when `scaled`
    (tokens x sqrt(dim)), else BERT's 0.02."""
    print("word vocabulary: counting the training text's words ...", flush=True)  # seconds on a large corpus
    counts = count_words(texts)
    words = word_tokenizer.build_vocabulary(counts, vocab_size, mask=mask)
    return plan_vocabulary(words, counts, vectors_path, min_coverage, seed, scaled, coverage_setting, mask,
                           vectors_setting)


def plan_vocabulary(words, counts, vectors_path=None, min_coverage=0.0, seed=0, scaled=True,
                    coverage_setting="model.min_vector_coverage", mask=False, vectors_setting="model.word_vectors",
                    language=False):
    """`plan_words` of a vocabulary `words` made already: `counts` are the training tokens its coverage is
    counted over (a translation run's shared vocabulary holds both sides' words, but a side's vectors cover that
    side's text). `vectors_setting`: the field that named the file; `language`: refuse vectors of another language
    by the vocabulary's words they cover too (zoo.data.word_vectors.check_language), not only the tokens."""
    if vectors_path is None:
        line = f"word vocabulary: {len(words):,} ids for {len(counts):,} distinct words, random embeddings"
        return WordPlan(words, None, {"words": len(words)}, line)
    print(f"word vectors: reading {vectors_path} for {len(words):,} words ...", flush=True)
    vectors = word_vectors.read_vectors(vectors_path, words, vectors_setting)
    covered = word_vectors.coverage(vectors, counts)
    word_vectors.check_coverage(covered, min_coverage, vectors_path, coverage_setting)
    if language:
        word_vectors.check_language(covered, min_coverage, vectors_path, coverage_setting)
    specials = len(word_tokenizer.SPECIALS) + mask
    target_std = vectors.dim**-0.5 if scaled else 0.02
    matrix, derived, line = start(vectors, covered, seed, (0,), range(1, specials), target_std)
    return WordPlan(words, matrix, derived, line)


def start(vectors, covered, seed, zero_ids, random_ids, target_std):
    """(matrix, derived, line) of word_vectors.WordVectors `vectors` covering `covered` (word_vectors.Coverage): the
    initial embedding (word_vectors.embedding_matrix) rescaled by one number so that the found vectors spread as
    `target_std`, what config.json's derived.word_vectors records of it, and the log's line."""
    matrix = word_vectors.embedding_matrix(vectors, seed, zero_ids=zero_ids, random_ids=random_ids)
    matrix = matrix * np.float32(target_std / matrix[vectors.found].std())
    derived = {
        "words": len(vectors.vocabulary), "format": vectors.format, "dim": vectors.dim, "rows_read": vectors.rows,
        "duplicates": vectors.duplicates, "words_found": covered.words_found, "words_in_text": covered.words,
        "token_share": round(covered.share, 6), "matrix_sha256": hashlib.sha256(matrix.tobytes()).hexdigest(),
    }
    line = f"{covered} ({vectors.format}, {vectors.dim} dimensions; {vectors.duplicates:,} duplicate rows skipped)"
    return matrix, derived, line


def check_resumed(plan, record, vectors_path, model_dir):
    """Refuses to resume a run (`record`: its zoo.runs.run_dir record, None for a new run) whose vectors file no
    longer gives the matrix it started from (`plan`'s, made again from the same files)."""
    started = record.derived.get("word_vectors", {}).get("matrix_sha256") if record else None
    if started and started != plan.derived.get("matrix_sha256"):
        raise ValueError(f"{vectors_path} is not the vectors file {model_dir} started from (its embedding "
                         "differs): restore that file, or train in another --model_dir.")


def words_model(model, plan, section="model"):
    """The encoder config (a zoo.classifier.model.ClassifierConfig, the config's `section`) of a word run: its
    vocabulary's size, and the vectors' width as embedding_dim (a projection maps it to hidden_dim when they
    differ)."""
    if plan.matrix is None:
        return dataclasses.replace(model, vocab_size=len(plan.words))
    dim = plan.matrix.shape[1]
    if model.embedding_dim not in (None, dim):
        raise ValueError(f"{section}.embedding_dim={model.embedding_dim} but the word vectors of {model.word_vectors} "
                         f"have {dim} dimensions: leave {section}.embedding_dim out (a projection maps them to "
                         f"{section}.hidden_dim={model.hidden_dim}).")
    return dataclasses.replace(model, vocab_size=len(plan.words), embedding_dim=dim)


def initializer(matrix, layer="embedding"):
    """Task.initialize: puts `matrix` into the token embedding of the model's layer `layer` (a
    layers.TokenAndPositionEmbedding), once, before the first step."""

    def initialize(model):
        table = model.get_layer(layer).token_embedding.embeddings
        if tuple(table.shape) != matrix.shape:
            raise ValueError(f"The word vectors make a {matrix.shape} embedding, the model has {tuple(table.shape)}.")
        table.assign(tf.constant(matrix, table.dtype))

    return initialize
