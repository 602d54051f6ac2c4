"""zoo.language_model.subword: the subword vocabulary's ids in graph (as served) equal the SentencePiece
library's (as the token cache is written), line ends are <n>, and text comes back from ids byte for byte
(spaces, tabs, characters training never saw); an earlier run's NFKC model still reads as it did."""

import pytest
import tensorflow as tf

from zoo.data import tokenizer
from zoo.language_model import data as lm_data
from zoo.language_model.subword import NEWLINE, SubwordVocabulary

TRAINING = [f"line {i}: the quick brown fox, naïve café, 東京 and 😀 jumps over {i % 7} lazy dogs.\n" for i in range(400)]
TEXTS = ["the quick brown fox\n", "  two  spaces\tand a tab\n", "\n", "東京 😀 emoji\r\n", "no newline", "",
         "a\n\nb\n", "unknown ☃ piece ǅ\n"]


@pytest.fixture(scope="module")
def vocabulary():
    return SubwordVocabulary.build(TRAINING, vocab_size=320, seed=0)  # 256 of them bytes


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
    assert loaded.level == "subword" and len(loaded) == len(vocabulary) == 320
    assert loaded.encode_lines(TEXTS) == vocabulary.encode_lines(TEXTS)


KEPT = ["    return  x\t# ü", "  lead and trail  ", "\tdef f():\n        pass\n\n  \n",
        "unseen ☃ ǅ ﬁ ① 𝔸\r\n",
        "x" * 3 + "   " + "\u00a0nbsp"]


def test_text_comes_back_byte_for_byte(vocabulary):
    ids = vocabulary.tokenize(tf.constant(KEPT))
    assert ids.to_list() == vocabulary.encode_lines(KEPT)
    assert [t.decode("utf-8") for t in vocabulary.detokenize(ids).numpy()] == KEPT
    assert vocabulary.unk_id not in ids.flat_values.numpy()  # unseen characters are their bytes, not <unk>


def test_an_earlier_runs_model_reads_as_it_did():
    proto = tokenizer.train_tokenizer([line.rstrip("\n") for line in TRAINING], 90, lowercase=False, seed=0,
                                      user_symbols=(NEWLINE,))  # the settings runs were made with before
    earlier = SubwordVocabulary(proto)
    ids = earlier.tokenize(tf.constant(["the fox\njumps  over\n"]))
    assert earlier.encode_lines(["the fox\njumps  over\n"]) == ids.to_list()
    # NFKC squeezes spaces, and each line's word-start mark is not read as a space after the newline
    assert earlier.detokenize(ids).numpy()[0].decode() == "the fox\njumps over\n"


def test_too_small_a_vocabulary_for_the_bytes_is_refused():
    with pytest.raises(ValueError, match=r"vocab_size=90 is too small .* at least \d+ pieces .* Raise --vocab_size"):
        SubwordVocabulary.build(TRAINING, vocab_size=90, seed=0)
