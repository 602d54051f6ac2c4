"""zoo.data.word_tokenizer: GloVe 6B's tokenization (lower-cased PTB tokens) in TensorFlow ops, checked against
hand-written tokens; the vocabulary (counts, ties, specials, words.txt); ids in graph, in tf.data, through the
classifier's preprocessor and in a SavedModel loaded by a fresh process."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import fresh_process_json
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.core.disk import DamagedFileError
from zoo.data import word_tokenizer
from zoo.data.tokenizer import END_ID, PAD_ID, START_ID, UNK_ID, rows_of
from zoo.data.word_tokenizer import WordTokenizer

CASES = [  # (text, its words), written by hand from Stanford's PTB tokenizer's rules and GloVe 6B's words
    ("don't", ["do", "n't"]),
    ("It's", ["it", "'s"]),
    ("I can't, won't, isn't", ["i", "ca", "n't", ",", "wo", "n't", ",", "is", "n't"]),
    ("I'm we'll you've he'd they're", ["i", "'m", "we", "'ll", "you", "'ve", "he", "'d", "they", "'re"]),
    ("don’t it’s", ["do", "n’t", "it", "’s"]),  # curly apostrophes, kept (GloVe has n’t and ’s)
    ("O'Neill's", ["o'neill", "'s"]),
    ("U.S.", ["u.s."]),
    ("in the U.S. and e.g. at 9 a.m.", ["in", "the", "u.s.", "and", "e.g.", "at", "9", "a.m."]),
    ("Mr. Smith, Acme Inc.", ["mr.", "smith", ",", "acme", "inc."]),
    ("see x.com.", ["see", "x", ".", "com", "."]),
    ("$5.00", ["$", "5.00"]),
    ("3,000 people; 3:30, 1/2 and 50%", ["3,000", "people", ";", "3:30", ",", "1/2", "and", "50", "%"]),
    ("(hello)", ["(", "hello", ")"]),
    ("end.", ["end", "."]),
    ("Wait... what?! No!!", ["wait", "...", "what", "?!", "no", "!!"]),
    ("a well-known e-mail and/or AT&T -- fine", ["a", "well-known", "e-mail", "and/or", "at&t", "--", "fine"]),
    ("'quoted' \"double\"", ["'", "quoted", "'", '"', "double", '"']),
    ("the 1990s", ["the", "1990s"]),
    ("Café NAÏVE cafe\u0301", ["café", "naïve", "café"]),  # NFKC composes e + U+0301
    ("Ｈｅｌｌｏ … ﬁne", ["hello", "...", "fine"]),  # full-width letters, ellipsis, ligature (NFKC)
    ("tab\there\nnew\u00a0line\u3000end", ["tab", "here", "new", "line", "end"]),  # Unicode spaces
    ("co\u00adoperate zero\u200bwidth", ["cooperate", "zerowidth"]),  # format characters dropped
    ("東京 😀!", ["東京", "😀", "!"]),
    ("", []),
    ("   ", []),
]


@tf.function
def graph_split(texts):
    return word_tokenizer.split_words(texts)


def test_words_of_tricky_strings_in_graph():
    words = graph_split(tf.constant([text for text, _ in CASES])).to_list()
    for (text, expected), got in zip(CASES, words):
        assert [word.decode("utf-8") for word in got] == expected, text


def test_invalid_utf8_and_a_long_string():
    words = graph_split(tf.constant([b"bad \xff\xfe byte", ("end. " * 20_000).encode(), b"x" * 100_000]))
    bad, long, one = words.to_list()
    assert bad == [b"bad", "\ufffd".encode(), "\ufffd".encode(), b"byte"]  # each bad byte a U+FFFD token
    assert long == [b"end", b"."] * 20_000
    assert one == [b"x" * 100_000]


def test_vocabulary_order_specials_and_cap():
    assert [word_tokenizer.SPECIALS.index(t) for t in ("<pad>", "<unk>", "<s>", "</s>")] == \
        [PAD_ID, UNK_ID, START_ID, END_ID] and word_tokenizer.UNK_ID == UNK_ID
    counts = word_tokenizer.count_words(["b a c. a b", "c d! b"])
    assert counts == {"b": 3, "a": 2, "c": 2, ".": 1, "d": 1, "!": 1}
    words = word_tokenizer.build_vocabulary(counts, 8)
    assert words == ["<pad>", "<unk>", "<s>", "</s>", "b", "a", "c", "!"]  # ties in code-point order
    assert word_tokenizer.build_vocabulary(counts, 100, mask=True)[4:6] == ["[MASK]", "b"]
    with pytest.raises(ValueError, match="vocab_size=4 leaves no room for words"):
        word_tokenizer.build_vocabulary(counts, 4)


def tokenizer_for(texts, vocab_size=50):
    return WordTokenizer(word_tokenizer.build_vocabulary(word_tokenizer.count_words(texts), vocab_size))


TRAIN = ["Don't panic: it's 5.00 dollars (U.S.)!", "Panic isn't it."]
SERVE = ["don't PANIC", "It's an unseen word.", "", "Café (U.S.) $5.00 " * 3000]


def test_ids_the_python_surface_and_detokenize():
    tokenizer = tokenizer_for(TRAIN)
    vocabulary = tokenizer.get_vocabulary()
    assert tokenizer.vocabulary_size() == len(vocabulary) == 4 + len(set(word_tokenizer.count_words(TRAIN)))
    ids = tokenizer(tf.constant(["don't PANIC", "an unseen it."]))
    assert ids.dtype == tf.int32
    expected = [[vocabulary.index(w) for w in ("do", "n't", "panic")],
                [UNK_ID, UNK_ID, vocabulary.index("it"), vocabulary.index(".")]]
    assert ids.to_list() == expected
    assert tokenizer.tokenize(tf.constant("don't")).numpy().tolist() == expected[0][:2]
    assert tokenizer.id_to_token(expected[0][2]) == "panic" and tokenizer.token_to_id("panic") == expected[0][2]
    assert tokenizer.token_to_id("never-seen") == UNK_ID
    assert tokenizer.detokenize(ids).numpy().tolist() == [b"do n't panic", b"<unk> <unk> it ."]


def test_words_txt_round_trip_and_damage(tmp_path):
    tokenizer = tokenizer_for(TRAIN)
    path = word_tokenizer.save_vocabulary(tokenizer.get_vocabulary(), str(tmp_path))
    assert os.path.basename(path) == "words.txt" and word_tokenizer.holds_words(str(tmp_path))
    with open(path, encoding="utf-8") as f:
        assert f.read() == "".join(word + "\n" for word in tokenizer.get_vocabulary())
    loaded = word_tokenizer.load_word_tokenizer(str(tmp_path))
    assert loaded.get_vocabulary() == tokenizer.get_vocabulary()
    for damage, says in [(b"<pad>\n<unk>\n<s>\n</s>\nx\nx\n", "holds 'x' twice, on lines 5 and 6"),
                         (b"<pad>\n<s>\n", "does not start with the special tokens"),
                         (b"<pad>\n<unk>\n<s>\n</s>\nx", "its last line is cut short"),
                         (b"<pad>\n<unk>\n<s>\n</s>\n\xff\n", "invalid start byte")]:
        with open(path, "wb") as f:
            f.write(damage)
        with pytest.raises(DamagedFileError, match=f"words.txt is damaged \\(.*{says}"):
            word_tokenizer.load_word_tokenizer(str(tmp_path))


def test_training_rows_equal_the_preprocessors_call():
    """tf.data (training's rows) and the classifier's tf.function (serving) give the same ids."""
    tokenizer = tokenizer_for(TRAIN)
    assert [row.tolist() for row in rows_of(tokenizer.tokenize, SERVE, batch_size=3)] == \
        tokenizer(tf.constant(SERVE)).to_list()
    preprocessor = ClassifierPreprocessor.for_tokenizer(tokenizer, max_length=16)
    rows = preprocessor.rows(SERVE)
    served = preprocessor(tf.constant(SERVE)).numpy()
    assert all(row[0] == START_ID for row in rows)
    for row, padded in zip(rows, served):
        np.testing.assert_array_equal(padded[: len(row)], row)
        assert not padded[len(row):].any()


def test_a_saved_model_in_a_fresh_process_gives_the_same_ids(tmp_path):
    tokenizer = tokenizer_for(TRAIN)

    class Export(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def ids(self, texts):
            return {"ids": self.tokenizer(texts).to_tensor(-1), "text": self.tokenizer.detokenize(
                self.tokenizer(texts))}

    export = Export()
    tf.saved_model.save(export, str(tmp_path), signatures={"serving_default": export.ids})
    texts = SERVE + [text for text, _ in CASES]
    program = (
        "import json\n"
        "import tensorflow as tf\n"
        "import tensorflow_text\n"
        f"serve = tf.saved_model.load({str(tmp_path)!r}).signatures['serving_default']\n"
        f"out = serve(texts=tf.constant({texts!r}))\n"
        "print(json.dumps({'ids': out['ids'].numpy().tolist(), 'text': [t.decode() for t in out['text'].numpy()]}))\n"
    )
    served = fresh_process_json(program)
    here = export.ids(tf.constant(texts))
    assert served["ids"] == here["ids"].numpy().tolist()
    assert served["text"] == [text.decode() for text in here["text"].numpy()]
    assert served["ids"][0][:3] == tokenizer(tf.constant(["don't panic"])).to_list()[0]
