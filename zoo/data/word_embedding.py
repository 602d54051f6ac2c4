"""The one word-vector plan of every family (docs/word_vectors.md): a run's word vocabulary and the token embedding
its word vectors start, made, checked and said in the log before the run folder gets a file. A family only builds its
layers from the plan: its config takes `WordPlan.embedding_dim`, its model's table `WordPlan.initializer`.

The matrix is the vectors rescaled by one number so that their spread is the embedding layer's own initial one: the
scaled embedding (the paper's, x sqrt(d)) then starts at unit variance as a random one does, instead of GloVe's values
x sqrt(50) (about 7 times that), and BERT's unscaled one at 0.02. Directions and the words' relative norms are kept.
"""

import dataclasses
import hashlib

import numpy as np
import tensorflow as tf

from zoo.data import word_tokenizer, word_vectors
from zoo.data.word_tokenizer import count_words


@dataclasses.dataclass(frozen=True, eq=False)
class WordPlan:
    words: list  # the vocabulary, special tokens first (<pad> = 0); row i of `matrix` is words[i]'s
    matrix: np.ndarray | None  # (len(words), dim) float32 initial token embedding; None: random (no vectors)
    derived: dict  # what config.json's derived part records: coverage, format, the matrix's sha256
    line: str  # the log's line
    path: str | None = None  # the vectors file read

    def embedding_dim(self, asked, field, hidden):
        """The token embedding's width: the vectors' (`asked` as it is without vectors). `asked`, the config's
        `field`, set to another width is refused, naming both and `hidden` ("model.hidden_dim=64"), which a
        projection maps the vectors to."""
        if self.matrix is None:
            return asked
        dim = self.matrix.shape[1]
        if asked not in (None, dim):
            raise ValueError(f"{field}={asked} but the word vectors of {self.path} have {dim} dimensions: leave "
                             f"{field} out (a projection maps them to {hidden}).")
        return dim

    def initializer(self, table):
        """Task.initialize: puts the matrix into `table(model)`, the built model's token embedding variable, once,
        before the first step; None without vectors (the table starts as the layer draws it)."""
        if self.matrix is None:
            return None

        def initialize(model):
            variable = table(model)
            if tuple(variable.shape) != self.matrix.shape:
                raise ValueError(f"The word vectors make a {self.matrix.shape} embedding, the model has "
                                 f"{tuple(variable.shape)}.")
            variable.assign(tf.constant(self.matrix, variable.dtype))

        return initialize


def plan_words(texts, vocab_size, vectors_path=None, min_coverage=0.0, seed=0, *, mask=False, **options):
    """The plan of the training `texts`' vocabulary: the special tokens ([MASK] too when `mask`) and the most
    frequent words, `vocab_size` at most; `options` are plan_vocabulary's."""
    print("word vocabulary: counting the training text's words ...", flush=True)  # seconds on a large corpus
    counts = count_words(texts)
    words = word_tokenizer.build_vocabulary(counts, vocab_size, mask=mask)
    specials = tuple(words[: len(word_tokenizer.SPECIALS) + mask])  # the vocabulary starts with them
    return plan_vocabulary(words, counts, vectors_path, min_coverage, seed, specials=specials, **options)


def plan_vocabulary(words, counts, vectors_path=None, min_coverage=0.0, seed=0, *, scaled=True,
                    coverage_setting="model.min_vector_coverage", vectors_setting="model.word_vectors",
                    language=False, specials=word_tokenizer.SPECIALS, specials_found=True, started=None,
                    model_dir=None, embedding=None, prefix=""):
    """The WordPlan of a vocabulary `words` made already, with the vectors of `vectors_path` (None: a random table)
    rescaled to the spread of the embedding's own initial one: dim ** -0.5 when `scaled` (tokens x sqrt(dim)), else
    BERT's 0.02. `counts` are the training tokens its coverage is counted over (a translation run's shared vocabulary
    holds both sides' words, but a side's vectors cover that side's text), refused under `min_coverage` (naming
    `coverage_setting`, which lowers it); `language`: refuse vectors of another language by the vocabulary's words they
    cover too (zoo.data.word_vectors.check_language). `vectors_setting`: the field that named the file. `specials`:
    tokens that start from drawn rows whatever the file holds (padding, id 0, from zeros); `specials_found=False` leaves
    them out of the found words too (the language model's text holds <unk> and <eos>, tokens that have no vector of
    their own). `started`: the record's derived.word_vectors of this embedding when the run in `model_dir` resumes
    (`embedding`: its name in the refusal); `prefix` heads the log's line."""
    if vectors_path is None:
        line = f"word vocabulary: {len(words):,} ids for {len(counts):,} distinct words, random embeddings"
        plan = WordPlan(words, None, {"words": len(words)}, line)
    else:
        print(f"word vectors: reading {vectors_path} for {len(words):,} words ...", flush=True)
        vectors = word_vectors.read_vectors(vectors_path, words, vectors_setting)
        special = np.isin(np.asarray(words, dtype=object), specials)
        if not specials_found:
            vectors = dataclasses.replace(vectors, found=vectors.found & ~special)
        covered = word_vectors.coverage(vectors, counts)
        word_vectors.check_coverage(covered, min_coverage, vectors_path, coverage_setting)
        if language:
            word_vectors.check_language(covered, min_coverage, vectors_path, coverage_setting)
        matrix = word_vectors.embedding_matrix(vectors, seed, random_ids=np.flatnonzero(special)[1:])
        target_std = vectors.dim**-0.5 if scaled else 0.02
        matrix = matrix * np.float32(target_std / matrix[vectors.found].std())
        plan = WordPlan(words, matrix, record(vectors, covered, matrix), f"{covered} ({vectors.format}, "
                        f"{vectors.dim} dimensions; {vectors.duplicates:,} duplicate rows skipped)", vectors_path)
    check_resumed(plan, started, model_dir, embedding)
    print(prefix + plan.line, flush=True)
    return plan


def record(vectors, covered, matrix):
    """What config.json's derived.word_vectors records of word_vectors.WordVectors `vectors` covering `covered`
    (word_vectors.Coverage) as the initial `matrix`."""
    return {
        "words": len(vectors.vocabulary), "format": vectors.format, "dim": vectors.dim, "rows_read": vectors.rows,
        "duplicates": vectors.duplicates, "words_found": covered.words_found, "words_in_text": covered.words,
        "token_share": round(covered.share, 6), "matrix_sha256": hashlib.sha256(matrix.tobytes()).hexdigest(),
    }


def check_resumed(plan, started, model_dir, embedding=None):
    """Refuses to resume a run whose record (`started`, its derived.word_vectors of this embedding; None or {} for
    a new run) holds another matrix than `plan`'s, made again from the same files: its vectors file changed."""
    sha = (started or {}).get("matrix_sha256")
    if sha and sha != plan.derived.get("matrix_sha256"):
        what = f"started its {embedding} embedding from (it gives another now)" if embedding else \
            "started from (its embedding differs)"
        raise ValueError(f"{plan.path} is not the vectors file {model_dir} {what}: restore that file, or train in "
                         "another --model_dir.")
