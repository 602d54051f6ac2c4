"""The translator's preprocessing: the rows training and evaluation read and the ids translation and
the export search from are the same ids, and both equal a plain-Python framing of the tokenizer's pieces."""

import numpy as np
import pytest
import tensorflow as tf

from zoo.data import tokenizer
from zoo.data.tokenizer import END_ID, START_ID
from zoo.translation.preprocessor import source_ids, source_rows, target_rows, text_from_ids

# Accents, empty and blank texts, runs of spaces and tabs, long texts, punctuation, other scripts.
TEXTS = ["Ein Mann fährt Fahrrad.", "", "   ", " \t Zwei  Hunde\tspielen \n", "Café déjà vu, naïve résumé",
         "wort " * 300, "x" * 300, "¡¿Satzzeichen?!... los!!!", "東京 und Emoji 🎬🍿"]


@pytest.fixture(scope="module", name="tok")
def tokenizer_fixture():
    texts = [f"Ein Mann {i} fährt mit {i % 7} Hunden, ein Wort" for i in range(300)] + TEXTS
    return tokenizer.load_tokenizer(tokenizer.train_tokenizer(texts, 80, lowercase=False))


def pieces(tok, texts):
    """The tokenizer's ids of each text, as lists."""
    return [row.tolist() for row in tokenizer.tokenize(tok, texts)]


@pytest.mark.parametrize("max_length", [1, 2, 8, 64])
def test_training_rows_and_served_ids_equal_the_reference(tok, max_length):
    rows = source_rows(tok, TEXTS, max_length)  # training and evaluation
    eager = source_ids(tok, tf.constant(TEXTS), max_length)  # --mode=translate
    in_graph = tf.function(lambda texts: source_ids(tok, texts, max_length).to_tensor(0))(tf.constant(TEXTS))  # export
    assert in_graph.dtype == tf.int32 and in_graph.shape[0] == len(TEXTS)
    for text, text_pieces, row, eager_ids, served in zip(TEXTS, pieces(tok, TEXTS), rows, eager.to_list(),
                                                          in_graph.numpy(), strict=True):
        expected = text_pieces[: max_length - 1] + [END_ID]
        assert row.dtype == np.int32 and row.tolist() == expected, repr(text)
        assert eager_ids == expected, repr(text)
        assert served[: len(expected)].tolist() == expected and not served[len(expected):].any(), repr(text)


def test_target_rows_are_framed_by_start_and_end(tok):
    for max_length in (1, 3, 64):
        for text, text_pieces, row in zip(TEXTS, pieces(tok, TEXTS), target_rows(tok, TEXTS, max_length), strict=True):
            assert row.dtype == np.int32
            assert row.tolist() == [START_ID, *text_pieces[: max_length - 1], END_ID], repr(text)


def test_rows_keep_the_order_of_the_texts_across_batches(tok):
    texts = [f"Ein Mann {i}" for i in range(5000)]  # more than one tf.data batch
    rows = source_rows(tok, texts, 16)
    assert [row.tolist() for row in rows] == [text_pieces + [END_ID] for text_pieces in pieces(tok, texts)]
    assert source_rows(tok, [], 16) == []


def test_text_from_ids_drops_the_special_ids_and_padding(tok):
    ids = source_ids(tok, tf.constant(["Ein Mann fährt Fahrrad."]), 64).to_tensor(0)
    framed = tf.concat([[[START_ID]], ids, [[0, 0]]], axis=1)
    assert text_from_ids(tok, framed).numpy().tolist() == [b"Ein Mann f\xc3\xa4hrt Fahrrad."]
