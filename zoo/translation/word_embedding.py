"""The word vocabularies and token embeddings a translation run starts from pretrained word vectors
(docs/word_vectors.md, "Translation").

A side given a vectors file (model.source_vectors, model.target_vectors) gets a word vocabulary: its training text's
words, split by zoo.data.word_tokenizer's rule (the one the export serves), the most frequent up to its vocab_size;
its embedding starts from the file, rescaled to the layer's own spread (zoo.data.word_embedding). A shared vocabulary
is one vocabulary of both sides' words and one embedding, started from the one file given (for either side, or the
same file for both); its coverage is counted over the tokens of the side the file was given for, so that English
vectors given for a German side are refused whatever else the vocabulary holds: by the side's tokens they cover, and
by its words seen twice or more (zoo.data.word_vectors.check_language: English GloVe covers most German tokens, its
function words and punctuation, but few of its words). A side without a file keeps its SentencePiece tokenizer.
"""

import collections
import dataclasses

from zoo.data import word_embedding, word_tokenizer
from zoo.translation.model import SIDES

COVERAGE_SETTING = "--min_vector_coverage"


def plan_words(model, data, seed):
    """{side: zoo.data.word_embedding.WordPlan} of the sides of `model` (a TranslatorConfig) whose tokens are words,
    planned from the training pairs `data` (zoo.translation.data.Pairs); a shared vocabulary's one plan stands under
    both sides. {} without word vectors. A bad file or too little coverage is refused here, before any write."""
    named = [side for side in SIDES if getattr(model, f"{side}_vectors")]
    if not named:
        return {}
    counting = SIDES if model.shared_vocabulary else named
    counts = {side: word_embedding.count_words(data.texts(SIDES.index(side))) for side in counting}

    def plan(side, words, covered):
        return word_embedding.plan_vocabulary(words, covered, model.vectors(side), model.min_vector_coverage, seed,
                                              coverage_setting=COVERAGE_SETTING, language=True,
                                              vectors_setting=f"model.{side}_vectors")

    if model.shared_vocabulary:
        words = word_tokenizer.build_vocabulary(counts["source"] + counts["target"], model.source_vocab_size)
        shared = plan(named[0], words, sum((counts[side] for side in named), collections.Counter()))
        return {side: shared for side in SIDES}
    return {side: plan(side, word_tokenizer.build_vocabulary(counts[side], getattr(model, f"{side}_vocab_size")),
                       counts[side]) for side in named}


def with_vectors(model, plans):
    """The TranslatorConfig `model` with each word side's vocabulary size and the vectors' width as its embedding_dim
    (projected to hidden_dim when they differ); an embedding_dim asked for that differs is refused, naming both."""
    changes = {}
    for side, plan in plans.items():
        dim, asked = plan.matrix.shape[1], getattr(model, f"{side}_embedding_dim")
        if asked not in (None, dim):
            raise ValueError(f"model.{side}_embedding_dim={asked} but the word vectors of {model.vectors(side)} have "
                             f"{dim} dimensions: leave model.{side}_embedding_dim out (a projection maps them to "
                             f"model.hidden_dim={model.hidden_dim}).")
        changes.update({f"{side}_vocab_size": len(plan.words), f"{side}_embedding_dim": dim})
    return dataclasses.replace(model, **changes)


def check_started(plans, started, model, model_dir):
    """Refuses to resume a run whose record's derived.word_vectors (`started`, {} for a new run) holds another
    matrix for a side than its vectors file gives now."""
    for side, plan in plans.items():
        sha = started.get(side, {}).get("matrix_sha256")
        if sha and sha != plan.derived["matrix_sha256"]:
            embedding = "shared" if plans.get("source") is plans.get("target") else side
            raise ValueError(f"{model.vectors(side)} is not the vectors file {model_dir} started its {embedding} "
                             "embedding from (it gives another now): restore that file, or train in another "
                             "--model_dir.")


def log_lines(plans, data):
    """The log's line for each planned embedding: "source (de) word vectors: ...", or "source and target (shared
    vocabulary) ..." for a shared one."""
    if plans and plans.get("source") is plans.get("target"):
        return [f"source and target (shared vocabulary) {plans['source'].line}"]
    return [f"{side} ({getattr(data, side)}) {plan.line}" for side, plan in plans.items()]


def initializer(plans):
    """Task.initialize: puts each plan's matrix into its side's token embedding (a shared one once), before the first
    step."""
    fills = [word_embedding.initializer(plan.matrix, f"{side}_embedding")
             for side, plan in plans.items() if side == "source" or plan is not plans.get("source")]

    def initialize(model):
        for fill in fills:
            fill(model)

    return initialize
