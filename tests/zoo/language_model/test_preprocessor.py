"""The language model's preprocessing: the stream layout training and evaluation read, and the
ids a prompt or a scored text gets, which must be the ids the same text has in the training corpus."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from zoo.language_model import preprocessor as lm_preprocessing
from zoo.language_model.preprocessor import pass_offset, segments_per_pass, stream_dataset, stream_layout, text_ids
from zoo.language_model.vocabulary import ASCII_SPACE, EOS, Vocabulary, split

# Accents, empty and blank texts, runs of spaces and tabs, Windows line ends, several lines, a long
# text, an unknown word, texts with and without a final newline, and spaces that are not ASCII (no-break,
# em, the information separator and next-line controls): words are split at ASCII whitespace only. Blank
# lines made of any ASCII whitespace (Windows line ends, \v, \f), first or within a text, add no <eos>.
TEXTS = ["the company said\n", "café naïve über déjà vu\n", "", "\n", "  spaced \t out  \n\n", "x\r\ny\n",
         "line one\nline two\n", "word " * 2000 + "\n", "an unseen zebra\n", "no newline at the end",
         "ROMEO: ¿qué?", "a\u00a0b c\u2003d\n", "x\x1cy\x85z \x0bw\x0cv\n",
         "a\r\n\r\nb\r\n", "\x0b\nfirst\n", "a\n\x0c\nb\n\x0b \n", "a\n ", "a\r\n\r"]
CORPUS = "\n".join(t for t in TEXTS if "zebra" not in t) + "\n"


def corpus_ids(vocabulary, text):
    """The ids `text` has in a training corpus (`Vocabulary.encode`, as text read from a file), after
    the boundary token. A text that does not end with a newline has no <eos> after its last line:
    a prompt is continued, not ended (a last line of whitespace alone holds no words: the line before it ended)."""
    if vocabulary.level == "byte":  # the corpus reads its file's bytes as Latin-1 characters
        text = text.encode("utf-8").decode("latin-1")
    ids = vocabulary.encode(text).tolist()
    last_line_has_words = ASCII_SPACE.sub("", text.rpartition("\n")[2]) != ""
    if vocabulary.level == "word" and last_line_has_words and ids and ids[-1] == vocabulary.ids[EOS]:
        ids = ids[:-1]
    return [vocabulary.boundary_id, *ids]


@pytest.mark.parametrize("level", ["word", "char", "byte"])
def test_text_ids_eager_and_in_graph_are_the_training_corpus_ids(level):
    corpus = CORPUS.encode("utf-8").decode("latin-1") if level == "byte" else CORPUS
    vocabulary = Vocabulary.from_counts(collections.Counter(split(corpus, level)), level)
    eager = text_ids(vocabulary, tf.constant(TEXTS)).to_list()  # the recipe's generate mode
    in_graph = tf.function(lambda texts: text_ids(vocabulary, texts))(tf.constant(TEXTS)).to_list()  # the export
    for text, eager_ids, graph_ids in zip(TEXTS, eager, in_graph, strict=True):
        assert eager_ids == graph_ids == corpus_ids(vocabulary, text), repr(text[:40])
    assert text_ids(vocabulary, tf.constant([], tf.string)).shape[0] == 0


def test_stream_batching_keeps_every_stream_contiguous():
    corpus = np.arange(1, 101, dtype=np.int32)  # 100 tokens, each its own position
    streams = stream_layout(corpus, 4)  # 4 streams of 25
    np.testing.assert_array_equal(streams[1], np.arange(26, 51))
    replicas, segment = 2, 4
    per_pass = segments_per_pass(streams, segment)  # (25 - 1) // 4 = 6
    elements = list(stream_dataset(streams, segment, replicas, 0, replicas, 0, 2 * per_pass).as_numpy_iterator())
    assert len(elements) == 2 * per_pass * replicas
    for replica in range(replicas):
        mine = elements[replica::replicas]
        for step, batch in enumerate(mine):
            expected_rows = streams[replica * 2 : replica * 2 + 2]
            begin = (step % per_pass) * segment
            np.testing.assert_array_equal(batch["inputs"], expected_rows[:, begin : begin + segment])
            np.testing.assert_array_equal(batch["labels"], expected_rows[:, begin + 1 : begin + segment + 1])
            assert batch["reset"] == (step % per_pass == 0)
            if step % per_pass:
                np.testing.assert_array_equal(batch["inputs"][:, 0], mine[step - 1]["labels"][:, -1])


def test_stream_dataset_starts_at_the_resumed_step():
    streams = stream_layout(np.arange(1, 101, dtype=np.int32), 2)
    whole = list(stream_dataset(streams, 4, 1, 0, 1, 0, 10).as_numpy_iterator())
    resumed = list(stream_dataset(streams, 4, 1, 0, 1, 7, 10).as_numpy_iterator())
    for a, b in zip(whole[7:], resumed):
        np.testing.assert_array_equal(a["inputs"], b["inputs"])


def test_random_offset_starts_every_pass_at_its_own_offset_and_keeps_streams_contiguous():
    streams = stream_layout(np.arange(1, 401, dtype=np.int32), 2)  # rows of 200 consecutive ids
    segment, seed, passes = 16, 3, 8
    per_pass = segments_per_pass(streams, segment, random_offset=True)
    assert per_pass == (200 - 1 - 15) // segment == segments_per_pass(streams, segment) - 1
    elements = list(stream_dataset(streams, segment, 1, 0, 1, 0, passes * per_pass, offset_seed=seed)
                    .as_numpy_iterator())
    offsets = []
    for p in range(passes):
        first = elements[p * per_pass]
        offset = int(first["inputs"][0, 0] - streams[0, 0])
        assert 0 <= offset < segment and offset == int(pass_offset(seed, p, segment))
        offsets.append(offset)
        for s, batch in enumerate(elements[p * per_pass : (p + 1) * per_pass]):
            begin = offset + s * segment
            np.testing.assert_array_equal(batch["inputs"], streams[:, begin : begin + segment])
            np.testing.assert_array_equal(batch["labels"], streams[:, begin + 1 : begin + segment + 1])
            assert batch["reset"] == (s == 0)
    assert len(set(offsets)) > 3  # the boundaries move between passes
    other_seed = stream_dataset(streams, segment, 1, 0, 1, 0, passes * per_pass, offset_seed=seed + 1)
    assert [int(e["inputs"][0, 0]) for e in other_seed.as_numpy_iterator()][::per_pass] != [
        int(e["inputs"][0, 0]) for e in elements][::per_pass]
    resumed = list(stream_dataset(streams, segment, 1, 0, 1, 2 * per_pass + 5, passes * per_pass,
                                     offset_seed=seed).as_numpy_iterator())
    for a, b in zip(elements[2 * per_pass + 5 :], resumed, strict=True):
        np.testing.assert_array_equal(a["inputs"], b["inputs"])
        assert a["reset"] == b["reset"]


def test_random_offset_windows_stay_inside_their_rows_for_every_row_length(monkeypatch):
    """The largest offset, segment_length - 1, on rows of every length: every window fits, and
    no further segment would have fitted."""
    segment = 5
    monkeypatch.setattr(lm_preprocessing, "pass_offset", lambda seed, index, length: tf.constant(length - 1))
    for row in range(segment + 1, 4 * segment + 2):
        streams = stream_layout(np.arange(1, 2 * row + 1, dtype=np.int32), 2)
        per_pass = segments_per_pass(streams, segment, random_offset=True)
        if row < 2 * segment:  # no room for a segment after the offset
            assert per_pass == 0
            with pytest.raises(ValueError, match="random offset"):
                stream_dataset(streams, segment, 1, 0, 1, 0, 1, offset_seed=0)
            continue
        elements = list(stream_dataset(streams, segment, 1, 0, 1, 0, per_pass, offset_seed=0).as_numpy_iterator())
        assert elements[-1]["labels"][0, -1] == streams[0, (segment - 1) + per_pass * segment]  # inside the row
        assert (segment - 1) + (per_pass + 1) * segment >= row  # one more segment's last label would not be
