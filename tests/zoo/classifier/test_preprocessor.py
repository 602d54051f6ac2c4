"""The classifier's preprocessor: training's rows and the export's ids are the same ids, and both
equal a plain-Python framing of the tokenizer's pieces."""

import numpy as np
import pytest
import tensorflow as tf

from tests.zoo import _published_fixtures as fixtures
from zoo.data import tokenizer
from zoo.classifier.preprocessor import ClassifierPreprocessor, head_and_tail

TEXTS = ["A gorgeous, witty film.", "", "   ", "Café déjà vu, naïve résumé", "word " * 300,
         "x" * 300, "¡¿punctuation?!... runs!!!", "東京 and emoji 🎬🍿"]


def reference(pieces, max_length, start_id, end_id):
    """start + the pieces (a quarter of the room from the head, the rest from the tail) + end."""
    room = max_length - 1 - (end_id is not None)
    head = room // 4
    kept = pieces if len(pieces) <= room else pieces[:head] + pieces[len(pieces) - (room - head):]
    return [start_id, *kept, *([] if end_id is None else [end_id])]


@pytest.fixture(scope="module", name="sentencepiece")
def sentencepiece_fixture():
    texts = [f"word{i} and more words {i % 7}, a film" for i in range(300)] + TEXTS
    return tokenizer.load_tokenizer(tokenizer.train_tokenizer(texts, 60))


@pytest.fixture(scope="module", name="wordpiece")
def wordpiece_fixture():
    return tokenizer.wordpiece_tokenizer(fixtures.vocabulary(120), lowercase=True, strip_accents=True)


@pytest.mark.parametrize("max_length", [2, 5, 16, 64])
@pytest.mark.parametrize("kind", ["sentencepiece", "wordpiece"])
def test_training_rows_and_serving_ids_equal_the_reference(kind, max_length, request):
    tok = request.getfixturevalue(kind)
    start, end = tokenizer.framing(tok)
    if end is not None and max_length < 3:
        pytest.skip("no room for text beside [CLS] and [SEP]")
    preprocessor = ClassifierPreprocessor.for_tokenizer(tok, max_length)
    rows = preprocessor.rows(TEXTS, batch_size=3)  # batches of 3: rows cross batch boundaries in order
    served = preprocessor(tf.constant(TEXTS)).numpy()
    assert served.dtype == np.int32 and served.shape[0] == len(TEXTS) and served.shape[1] <= max_length
    every_pieces = tokenizer.tokenize(tok, TEXTS)  # one call: each call traces the tokenizer's graph again
    for text, row, ids, pieces in zip(TEXTS, rows, served, every_pieces):
        expected = reference(pieces.tolist(), max_length, start, end)
        assert row.tolist() == expected, text
        assert ids[: len(expected)].tolist() == expected and not ids[len(expected):].any(), text


def test_an_empty_batch_still_has_the_start_column(sentencepiece):
    preprocessor = ClassifierPreprocessor.for_tokenizer(sentencepiece, 8)
    assert preprocessor(tf.constant([], tf.string)).shape == (0, 1)
    assert preprocessor.rows([]) == []


def test_head_and_tail_split_the_room_a_quarter_to_the_head():
    assert head_and_tail(16) == (3, 12)
    assert head_and_tail(16, end_id=102) == (3, 11)
    with pytest.raises(ValueError, match="max_length=1 leaves no room for text beside the 1 framing tokens"):
        head_and_tail(1)
    with pytest.raises(ValueError, match="max_length=2 leaves no room for text beside the 2 framing tokens"):
        head_and_tail(2, end_id=102)
