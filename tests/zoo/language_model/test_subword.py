"""zoo.language_model.subword: the subword vocabulary's ids in graph (as served) equal the SentencePiece
library's (as the token cache is written), line ends are <n>, and text comes back from ids."""

import pytest
import tensorflow as tf

from zoo.language_model import data as lm_data
from zoo.language_model.subword import SubwordVocabulary

TRAINING = [f"line {i}: the quick brown fox, naïve café, 東京 and 😀 jumps over {i % 7} lazy dogs.\n" for i in range(400)]
TEXTS = ["the quick brown fox\n", "  two  spaces\tand a tab\n", "\n", "東京 😀 emoji\r\n", "no newline", "",
         "a\n\nb\n", "unknown ☃ piece ǅ\n"]


@pytest.fixture(scope="module")
def vocabulary():
    return SubwordVocabulary.build(TRAINING, vocab_size=90, seed=0)


def test_library_ids_equal_graph_ids(vocabulary):
    graph = vocabulary.tokenize(tf.constant(TEXTS))
    library = vocabulary.encode_lines(TEXTS)
    assert graph.to_list() == library
    assert vocabulary.encode_lines([t.encode("utf-8") for t in TEXTS]) == library


def test_line_ends_are_the_boundary_and_come_back(vocabulary):
    ids = vocabulary.tokenize(tf.constant(["the fox\njumps\n"]))
    assert ids.to_list()[0].count(vocabulary.boundary_id) == 2
    assert vocabulary.detokenize(ids).numpy()[0].decode() == "the fox\njumps\n"


def test_saved_and_loaded(vocabulary, tmp_path):
    vocabulary.save(str(tmp_path))
    loaded = lm_data.load_vocabulary(str(tmp_path))
    assert loaded.level == "subword" and len(loaded) == len(vocabulary) == 90
    assert loaded.encode_lines(TEXTS) == vocabulary.encode_lines(TEXTS)
