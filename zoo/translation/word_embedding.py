"""Which word vocabularies a translation run plans, a side at a time, with zoo.data.word_embedding's one plan
(docs/word_vectors.md, "Translation").

A side given a vectors file (model.source_vectors, model.target_vectors) gets a word vocabulary: its training text's
words, split by zoo.data.word_tokenizer's rule (the one the export serves), the most frequent up to its vocab_size. A
shared vocabulary is one vocabulary of both sides' words and one embedding, started from the one file given (for either
side, or the same file for both); its coverage is counted over the tokens of the side the file was given for, so that
English vectors given for a German side are refused whatever else the vocabulary holds: by the side's tokens they cover,
and by its words seen twice or more (zoo.data.word_vectors.check_language: English GloVe covers most German tokens, its
function words and punctuation, but few of its words). A side without a file keeps its SentencePiece tokenizer. The
model takes the plans in zoo.translation.model (`with_words`, `words_initializer`)."""

import collections

from zoo.data import word_embedding, word_tokenizer
from zoo.translation.model import SIDES

COVERAGE_SETTING = "--min_vector_coverage"


def plan_sides(model, data, seed, languages, started, model_dir):
    """{side: zoo.data.word_embedding.WordPlan} of the sides of `model` (a TranslatorConfig) whose tokens are words,
    planned from the training pairs `data` (zoo.translation.data.Pairs); a shared vocabulary's one plan stands under
    both sides. {} without word vectors. `languages` (the run's data config: its source and target) name each side
    in the log; `started`: the record's derived.word_vectors of a run resumed in `model_dir` ({} for a new one)."""
    named = [side for side in SIDES if getattr(model, f"{side}_vectors")]
    if not named:
        return {}
    counting = SIDES if model.shared_vocabulary else named
    counts = {side: word_embedding.count_words(data.texts(SIDES.index(side))) for side in counting}

    def plan(side, words, covered, embedding, prefix):
        return word_embedding.plan_vocabulary(
            words, covered, model.vectors(side), model.min_vector_coverage, seed, coverage_setting=COVERAGE_SETTING,
            vectors_setting=f"model.{side}_vectors", language=True, started=started.get(side), model_dir=model_dir,
            embedding=embedding, prefix=prefix)

    if model.shared_vocabulary:
        words = word_tokenizer.build_vocabulary(counts["source"] + counts["target"], model.source_vocab_size)
        shared = plan(named[0], words, sum((counts[side] for side in named), collections.Counter()), "shared",
                      "source and target (shared vocabulary) ")
        return {side: shared for side in SIDES}
    return {side: plan(side, word_tokenizer.build_vocabulary(counts[side], getattr(model, f"{side}_vocab_size")),
                       counts[side], side, f"{side} ({getattr(languages, side)}) ") for side in named}
