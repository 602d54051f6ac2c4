"""Issue 59 item 3: one word-vector plan (zoo.data.word_embedding) for every family. For a small fixed text and
vectors file, each family plans as its recipe does and puts the plan into its built model; the table it gets is
checked against a vocabulary and a matrix written out by hand. A resumed run whose vectors file changed is refused
by the one check (`check_resumed`) in each family's plan."""

import collections
import dataclasses
import types

import numpy as np
import pytest

from tests.conftest import write_vectors
from zoo.classifier import model as classifier
from zoo.classifier.presets import PRESETS as CLASSIFIER_PRESETS
from zoo.data import word_embedding, word_tokenizer
from zoo.language_model import model as lm
from zoo.language_model.vocabulary import EOS, PAD, UNK, Vocabulary, split_words
from zoo.pretraining import model as pretraining
from zoo.translation import model as translation, word_embedding as translation_words

ENGLISH = ["the film is good", "the film is bad", "good good film"]
GERMAN = ["der film ist gut", "der film ist schlecht", "gut gut film"]
# Each found vector holds one 1 and one -1: the found values' mean is 0 and their spread 1 in each dimension, so a
# drawn row is the seeded standard normal draw itself, and the rescaling is the layer's spread alone. <eos> is a
# word of the file, but the language model's own token: drawn, not found.
VECTORS = {"film": [1, -1], "good": [-1, 1], "is": [-1, 1], "the": [1, -1], "<eos>": [1, 1], "zebra": [3, 3]}
SEED = 3


def expected(words, spread, seed=SEED):
    """The initial table by hand: padding zeros, a found word's vector, any other row drawn N(0, 1) with `seed`; all
    times `spread` (the found values' own spread is 1)."""
    rows = np.random.default_rng(seed).standard_normal((len(words), 2), np.float32)
    for i, word in enumerate(words):
        if word in VECTORS and word != EOS:
            rows[i] = VECTORS[word]
    rows[0] = 0
    return rows * np.float32(spread)


@pytest.fixture(name="path")
def path_fixture(tmp_path):
    return write_vectors(tmp_path / "vectors.txt", VECTORS)


def changed(path):
    """The file at `path` with one value of one found word changed: another matrix."""
    return write_vectors(path, {**VECTORS, "good": [-1, 2]})


def table(variable):
    return np.asarray(variable.numpy())


def test_sentiment_plans_the_words_and_its_classifier_gets_the_matrix(path):
    plan = word_embedding.plan_words(ENGLISH, 8, path, 0.2, SEED, coverage_setting="--config.model.min_vector_coverage")
    assert plan.words == ["<pad>", "<unk>", "<s>", "</s>", "film", "good", "is", "the"]  # "bad", seen once, left out
    config = CLASSIFIER_PRESETS["tiny"].with_words(plan)
    assert (config.vocab_size, config.embedding_dim) == (8, 2)
    model = classifier.build_classifier(config)
    plan.initializer(classifier.token_table)(model)
    np.testing.assert_array_equal(table(classifier.token_table(model)), expected(plan.words, 2**-0.5))
    assert plan.derived == {**plan.derived, "words": 8, "dim": 2, "rows_read": 6, "duplicates": 0, "words_found": 4,
                            "words_in_text": 4, "token_share": round(10 / 11, 6)}
    assert plan.line == "word vectors: 4 of 4 words, 90.9% of training tokens (glove, 2 dimensions; 0 duplicate rows " \
                        "skipped)"


def test_pretraining_plans_mask_and_bert_spread_and_its_encoder_gets_the_matrix(path):
    encoder = dataclasses.replace(CLASSIFIER_PRESETS["tiny"], embedding="normalized", word_vectors=path)
    plan = word_embedding.plan_words(ENGLISH, 9, path, 0.2, SEED, mask=True, scaled=False)
    assert plan.words == ["<pad>", "<unk>", "<s>", "</s>", "[MASK]", "film", "good", "is", "the"]
    model = pretraining.build_pretrainer(pretraining.PretrainConfig(encoder=encoder.with_words(plan, "model.encoder")))
    plan.initializer(pretraining.token_table)(model)
    np.testing.assert_array_equal(table(pretraining.token_table(model)), expected(plan.words, 0.02))


def test_the_language_model_plans_its_own_vocabulary_and_its_embedding_gets_the_matrix(path):
    counts = collections.Counter(split_words("\n".join(ENGLISH)))
    words = Vocabulary.from_counts(counts.copy(), "word").tokens
    assert words == ["<pad>", "<unk>", "<eos>", "film", "good", "is", "the", "bad"]
    plan = word_embedding.plan_vocabulary(words, counts, path, 0.2, SEED, specials=(PAD, UNK, EOS),
                                          specials_found=False)
    assert (plan.derived["words_found"], plan.derived["words_in_text"]) == (4, 6)  # <eos> counted, without a vector
    config = dataclasses.replace(lm.PRESETS["tiny"], vocab_size=len(words), word_vectors=path).with_words(plan)
    assert config.embedding_dim == 2
    model = lm.build_language_model(config)
    plan.initializer(lm.token_table)(model)
    np.testing.assert_array_equal(table(lm.token_table(model)), expected(words, 2**-0.5))


def pairs():
    """What zoo.translation.word_embedding reads of zoo.translation.data.Pairs: each side's texts."""
    return types.SimpleNamespace(texts=lambda side: iter((GERMAN, ENGLISH)[side]))


LANGUAGES = types.SimpleNamespace(source="de", target="en")


def test_translation_plans_a_shared_vocabulary_and_its_one_embedding_gets_the_matrix(path, capsys):
    model = dataclasses.replace(translation.PRESETS["tiny"], source_vocab_size=12, target_vocab_size=12,
                                target_vectors=path)
    plans = translation_words.plan_sides(model, pairs(), SEED, LANGUAGES, {}, None)
    plan = plans["source"]
    assert plans["target"] is plan
    # Both languages' words, most frequent first (film 6; good, gut 3; der, is, ist, the 2; bad, schlecht 1).
    assert plan.words == ["<pad>", "<unk>", "<s>", "</s>", "film", "good", "gut", "der", "is", "ist", "the", "bad"]
    assert plan.derived["token_share"] == round(10 / 11, 6)  # the English side's tokens: the file was given for it
    assert capsys.readouterr().out.splitlines()[-1].startswith("source and target (shared vocabulary) word vectors: ")
    built = translation.build_translator(model.with_words(plans))
    translation.words_initializer(plans)(built)
    shared = built.source_embedding.token_embedding.embeddings
    np.testing.assert_array_equal(table(shared), expected(plan.words, 2**-0.5))


def family_plans(path, started):
    """Each family's plan of the text and the vectors at `path`, as its recipe makes it, for a run resumed from a
    record whose derived.word_vectors is `started` (a translation side's under its side)."""
    counts = collections.Counter(split_words("\n".join(ENGLISH)))
    lm_words = Vocabulary.from_counts(counts.copy(), "word").tokens
    model = dataclasses.replace(translation.PRESETS["tiny"], source_vocab_size=12, target_vocab_size=12,
                                target_vectors=path, shared_vocabulary=False)
    return {
        "sentiment": lambda: word_embedding.plan_words(ENGLISH, 8, path, 0.2, SEED, started=started, model_dir="run"),
        "pretrain": lambda: word_embedding.plan_words(ENGLISH, 9, path, 0.2, SEED, mask=True, scaled=False,
                                                      started=started, model_dir="run"),
        "lm": lambda: word_embedding.plan_vocabulary(lm_words, counts, path, 0.2, SEED, specials=(PAD, UNK, EOS),
                                                     specials_found=False, started=started, model_dir="run"),
        "translate": lambda: translation_words.plan_sides(model, pairs(), SEED, LANGUAGES,
                                                          {"target": started} if started else {}, "run")["target"],
    }


@pytest.mark.parametrize("family", ["sentiment", "pretrain", "lm", "translate"])
def test_a_resumed_run_whose_vectors_file_changed_is_refused_by_the_one_check(family, path, monkeypatch):
    started = family_plans(path, None)[family]().derived
    assert family_plans(path, started)[family]().derived == started  # the same file: the run resumes
    checked = []
    check = word_embedding.check_resumed
    monkeypatch.setattr(word_embedding, "check_resumed", lambda *given: checked.append(family) or check(*given))
    changed(path)
    what = r"started its target embedding from \(it gives another now\)" if family == "translate" else \
        r"started from \(its embedding differs\)"
    with pytest.raises(ValueError, match=f"^{path} is not the vectors file run {what}: restore that file, or train "
                                         "in another --model_dir.$"):
        family_plans(path, started)[family]()
    assert checked == [family]


def test_a_width_asked_for_that_differs_is_refused_by_the_one_plan_in_each_family(path):
    plan = word_embedding.plan_words(ENGLISH, 8, path, 0.2, SEED)
    message = r"{0}=16 but the word vectors of .*vectors.txt have 2 dimensions: leave {0} out \(a projection maps " \
              r"them to {1}.hidden_dim=\d+\)\."
    with pytest.raises(ValueError, match=message.format("model.encoder.embedding_dim", "model.encoder")):
        dataclasses.replace(CLASSIFIER_PRESETS["tiny"], embedding_dim=16).with_words(plan, "model.encoder")
    with pytest.raises(ValueError, match=message.format("model.embedding_dim", "model")):
        dataclasses.replace(lm.PRESETS["tiny"], embedding_dim=16).with_words(plan)
    model = dataclasses.replace(translation.PRESETS["tiny"], target_embedding_dim=16, shared_vocabulary=False)
    with pytest.raises(ValueError, match=message.format("model.target_embedding_dim", "model")):
        model.with_words({"target": plan})


def test_without_vectors_the_plan_is_a_random_table_of_the_words(capsys):
    plan = word_embedding.plan_words(ENGLISH, 8)
    assert plan.matrix is None and plan.initializer(classifier.token_table) is None
    assert plan.derived == {"words": 8} and plan.words[:4] == list(word_tokenizer.SPECIALS)
    assert CLASSIFIER_PRESETS["tiny"].with_words(plan).embedding_dim is None
    assert capsys.readouterr().out.splitlines()[-1] == "word vocabulary: 8 ids for 5 distinct words, random embeddings"
