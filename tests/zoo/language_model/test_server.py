"""The language model's serving module: settings it cannot serve are refused by name, when the
export is made (its defaults) and on every call (the `generate` signature's arguments); `score`
reads each text as `text_ids` does."""

import dataclasses
import math

import pytest
import tensorflow as tf

from zoo.language_model import model as lm
from zoo.language_model.preprocessor import text_ids
from zoo.language_model.server import LanguageModelServer
from zoo.language_model.vocabulary import Vocabulary

VOCABULARY = Vocabulary(["<pad>", "<unk>", "<eos>"] + [str(i) for i in range(37)], "word")
CONFIG = dataclasses.replace(lm.PRESETS["tiny"], vocab_size=len(VOCABULARY), segment_length=6, memory_length=6)


@pytest.fixture(scope="module", name="model")
def model_fixture():
    return lm.build_language_model(CONFIG)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"top_k": 41}, "top_k=41 must be between 0 and the 40 tokens of the vocabulary"),
        ({"top_k": -1}, "top_k=-1 must be between 0 and the 40 tokens of the vocabulary"),
        ({"temperature": math.inf}, "temperature=inf must be a finite number above 0"),
        ({"temperature": math.nan}, "temperature=nan must be a finite number above 0"),
        ({"temperature": 0.0}, "temperature=0.0 must be a finite number above 0"),
        ({"max_new_tokens": 0}, "max_new_tokens=0 must be between 1 and 2048"),
        ({"max_new_tokens": 2049}, "max_new_tokens=2049 must be between 1 and 2048"),
    ],
)
def test_defaults_it_cannot_serve_are_refused_when_the_export_is_made(model, settings, message):
    with pytest.raises(ValueError, match=message):
        LanguageModelServer(model, VOCABULARY, **{"top_k": 0, **settings})


def test_the_whole_vocabulary_as_top_k_is_served(model):
    server = LanguageModelServer(model, VOCABULARY, max_new_tokens=3, top_k=len(VOCABULARY))
    assert server.serve(tf.constant(["3 4 5"]))["continuation"].shape == (1,)


@pytest.mark.parametrize(
    "argument, value, message",
    [("top_k", 41, "top_k must be <= 40"), ("temperature", math.inf, "temperature must be finite")],
)
def test_generate_refuses_a_top_k_above_the_vocabulary_and_an_infinite_temperature(model, argument, value, message):
    server = LanguageModelServer(model, VOCABULARY, top_k=0)
    arguments = {"max_new_tokens": 3, "temperature": 1.0, "top_k": 2, "seed": 0, argument: value}
    inputs = {name: tf.constant(v, tf.float32 if name == "temperature" else tf.int32) for name, v in arguments.items()}
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        server.generate(tf.constant(["3 4 5"]), **inputs)
    valid = {**inputs, argument: tf.constant(2 if argument == "top_k" else 1.0, inputs[argument].dtype)}
    assert server.generate(tf.constant(["3 4 5"]), **valid)["continuation"].shape == (1,)


def test_score_counts_the_tokens_text_ids_gives_each_text(model):
    texts = ["3 4 5 6 7 8 9 10 11 12 13 14", "", "  7 \t 8\n9\n", "unknown 3"]
    server = LanguageModelServer(model, VOCABULARY, top_k=0)
    scored = server.score(tf.constant(texts))
    lengths = text_ids(VOCABULARY, tf.constant(texts)).row_lengths().numpy()
    assert scored["tokens"].numpy().tolist() == (lengths - 1).tolist()  # every token after the boundary
