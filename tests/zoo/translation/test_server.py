"""The translator's serving module: a search it cannot serve is refused by name when the export is
made; a valid one translates, '' for an empty sentence."""

import dataclasses

import pytest
import tensorflow as tf

from zoo.data import tokenizer
from zoo.translation import model as translation
from zoo.translation.search import DecodeConfig
from zoo.translation.server import TranslatorServer

TEXTS = [f"Ein Mann {i} fährt mit {i % 7} Hunden" for i in range(200)]


@pytest.fixture(scope="module", name="parts")
def parts_fixture():
    tok = tokenizer.load_tokenizer(tokenizer.train_tokenizer(TEXTS, 40, lowercase=False))
    config = dataclasses.replace(translation.PRESETS["tiny"], source_vocab_size=40, target_vocab_size=40)
    return translation.build_translator(config), tok


def test_a_top_k_above_the_target_vocabulary_is_refused_when_the_export_is_made(parts):
    model, tok = parts
    with pytest.raises(ValueError, match="top_k=41 is more than the 40 tokens of the target vocabulary: use at most 40"):
        TranslatorServer(model, tok, tok, DecodeConfig(beam_size=1, top_k=41))


def test_the_whole_vocabulary_as_top_k_is_served(parts):
    model, tok = parts
    server = TranslatorServer(model, tok, tok, DecodeConfig(beam_size=1, top_k=40, max_extra_length=3))
    served = server.serve(tf.constant(["Ein Mann fährt", " "]))
    assert served["translation"].shape == (2,) and served["translation"].numpy()[1] == b""
