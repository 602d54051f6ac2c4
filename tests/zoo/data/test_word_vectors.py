"""zoo.data.word_vectors and zoo.data.vectors_file: GloVe, word2vec (text and binary) and fastText .vec files
read for a vocabulary, told apart by content, plain or gzip; hand-computed rows, and gensim's own reading of
the same files where gensim is installed; bad files refused naming file and line; coverage and the embedding
matrix."""

import gzip
import os
import tracemalloc

import numpy as np
import pytest

from zoo.data import vectors_file, word_vectors
from zoo.data.word_vectors import CoverageError, VectorsFileError, read_vectors

ROWS = {"the": [0.25, -1.5, 3.0], "cat": [1e-3, 2.0, -0.0], "dög": [7.0, 8.5, -9.25], "1999": [1.0, 2.0, 3.0]}
VOCABULARY = ["<pad>", "cat", "dög", "1999", "zebra", "the"]


def text_rows(rows, end="\n"):
    return "".join(f"{word} {' '.join(repr(v) for v in vector)}{end}" for word, vector in rows.items())


def binary_records(rows, newline=True):
    return b"".join(word.encode() + b" " + np.asarray(vector, "<f4").tobytes() + (b"\n" if newline else b"")
                    for word, vector in rows.items())


FILES = {  # name: (bytes, format)
    "glove.txt": (text_rows(ROWS).encode(), "glove"),
    "w2v.txt": (f"4 3\n{text_rows(ROWS)}".encode(), "word2vec_text"),
    "fasttext.vec": (f"4 3 \n{text_rows(ROWS, ' ' + chr(13) + chr(10))}".encode(), "word2vec_text"),  # CRLF
    "w2v.bin": (b"4 3\n" + binary_records(ROWS), "word2vec_binary"),
    "gensim.bin": (b"4 3\n" + binary_records(ROWS, newline=False), "word2vec_binary"),
}


def write(path, data, packed=False):
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if packed else data)
    return str(path)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name", list(FILES))
def test_each_format_reads_the_hand_written_rows(tmp_path, name, packed):
    data, form = FILES[name]
    path = write(tmp_path / f"vectors-{name}", data, packed)  # the name says nothing: content decides
    vectors = read_vectors(path, VOCABULARY)
    assert (vectors.format, vectors.dim, vectors.rows, vectors.duplicates) == (form, 3, 4, 0)
    np.testing.assert_array_equal(vectors.found, [False, True, True, True, False, True])
    expected = [ROWS.get(word, [0.0] * 3) for word in VOCABULARY]
    np.testing.assert_array_equal(vectors.vectors, np.asarray(expected, np.float32))
    assert vectors.vectors.dtype == np.float32 and vectors.vocabulary == tuple(VOCABULARY)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name", list(FILES))
def test_each_format_reads_as_gensim_reads_it(tmp_path, name, packed):
    models = pytest.importorskip("gensim.models")
    data, form = FILES[name]
    path = write(tmp_path / (name + (".gz" if packed else "")), data, packed)  # gensim goes by the name
    theirs = models.KeyedVectors.load_word2vec_format(path, binary=form == "word2vec_binary",
                                                      no_header=form == "glove")
    ours = read_vectors(path, theirs.index_to_key)
    assert ours.found.all() and ours.dim == theirs.vector_size and ours.rows == len(theirs)
    np.testing.assert_array_equal(ours.vectors, theirs.vectors)


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 22])
def test_rows_and_records_across_block_ends(tmp_path, monkeypatch, block):
    """The stream is read `block` bytes at a time: rows and binary records cut anywhere read the same."""
    monkeypatch.setattr(vectors_file, "BLOCK", block)
    rng = np.random.default_rng(0)
    rows = {f"w{i}": rng.standard_normal(5).astype(np.float32).tolist() for i in range(40)}
    text = "".join(f"{w} {' '.join(repr(v) for v in vec)}\n" for w, vec in rows.items()).encode()
    for data in (text, b"40 5\n" + binary_records(rows)):
        vectors = read_vectors(write(tmp_path / "v", data, packed=True), list(rows)[::3])
        np.testing.assert_array_equal(vectors.vectors, np.asarray(list(rows.values())[::3], np.float32))
        assert vectors.found.all() and vectors.rows == 40


def test_memory_holds_blocks_not_the_file(tmp_path, monkeypatch):
    """An 8 MB file of 40,000 rows read 64 KB at a time for 100 of its words: what Python and NumPy allocate
    at once stays near a few blocks (tracemalloc's peak), for text and binary alike."""
    monkeypatch.setattr(vectors_file, "BLOCK", 1 << 16)
    values = np.random.default_rng(0).standard_normal((40_000, 50)).astype(np.float32)
    words = [f"w{i}" for i in range(40_000)]
    binary = b"40000 50\n" + b"".join(w.encode() + b" " + v.tobytes() for w, v in zip(words, values))
    text = "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in zip(words[:20_000], values)).encode()
    for data in (binary, text):
        path = write(tmp_path / "v", data)
        tracemalloc.start()
        vectors = read_vectors(path, words[:20_000:200])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert vectors.found.all() and len(data) > 4_000_000 and peak < 1_500_000, (len(data), peak)


def test_words_with_spaces_numbers_blank_lines_and_duplicates(tmp_path):
    """glove.840B holds words with spaces: a row's values are its last `dim` fields. The first of two
    rows of one word is kept, the second counted."""
    data = b"the 1 2\n\n. . . 3 4\nat name@domain.com 5 6\n1999 7 8\nthe 9 9\ncat 1 1\ncat 2 2\n"
    vectors = read_vectors(write(tmp_path / "g.txt", data), ["the", ". . .", "at name@domain.com", "1999", "cat"])
    np.testing.assert_array_equal(vectors.vectors, [[1, 2], [3, 4], [5, 6], [7, 8], [1, 1]])
    assert (vectors.rows, vectors.duplicates) == (7, 2)


def test_the_published_glove_file():
    path = os.path.join(os.environ["ZOO_DATA_DIR"], "glove", "glove.6B.50d.txt.gz")
    if not os.path.exists(path):
        pytest.skip(f"{path} is not here")
    vectors = read_vectors(path, ["<pad>", "the", "n't", "u.s.", "no-such-word-here"])
    assert (vectors.format, vectors.dim, vectors.rows, vectors.duplicates) == ("glove", 50, 400_000, 0)
    np.testing.assert_array_equal(vectors.found, [False, True, True, True, False])
    np.testing.assert_array_equal(vectors.vectors[1, :5], np.float32([0.418, 0.24968, -0.41242, 0.1217, 0.34527]))


BAD = {  # name: (bytes, words asked for, what the one line says)
    "ragged, fewer": (b"a 1 2 3\nb 1 2\n", ["z"], ":2: a row of 2 values where line 1 has 3"),
    "ragged, more": (b"a 1 2\nb 1 2 3\n", ["z"], ":2: a row of 3 values where line 1 has 2"),
    "ragged, numbers alone": (b"a 1 2 3 4 5\n1 2 3\n", ["z"], ":2: a row of 2 values where line 1 has 5"),
    "not a number": (b"a 1 2\nb 1 x\n", ["z"], ":2: 'x' is not a number"),
    "not a number, used": (b"a 1 2\nb 1 1.2.3\n", ["b"], ":2: '1.2.3' is not a number"),
    "NaN": (b"a 1 2\nb nan 2\n", ["z"], ":2: a value is NaN or inf"),
    "inf, used": (b"a 1 2\nb 1 -inf\n", ["b"], ":2: a value is NaN or inf"),
    "too large": (b"a 1 2\nb 1 1e39\n", ["b"], ":2: a value is NaN or inf, or too large for float32"),
    "no word": (b"a 1 2\n 1 2\n", ["z"], ":2: a row without a word"),
    "header, dim": (b"2 3\na 1 2 3\nb 1 2\n", ["z"], ":3: a row of 2 values where the header (line 1) says 3"),
    "header, count": (b"3 2\na 1 2\nb 1 2\n", ["z"], ":1: the header says 3 words but the file holds 2"),
    "header, dim 0": (b"2 0\na\nb\n", ["z"], ":1: a dimension of 0"),
    "glove, dim 0": (b"a\nb\n", ["z"], ":1: a dimension of 0"),
    "empty": (b"", ["z"], ": the file is empty"),
    "blank": (b"\n \n", ["z"], ": the file is empty"),
    "no rows": (b"0 3\n", ["z"], ": the file holds no vectors"),
    "UTF-8": (b"a 1 2\nb 1 2\n\xff\xfe 1 2\n", ["z"], ":3: invalid UTF-8 (byte 0xff)"),
    "binary, cut": (b"2 3\n" + binary_records({"a": [1, 2, 3], "b": [4, 5, 6]})[:-5], ["z"],
                    ", word 2 of 2 (byte 19): the file is cut short before its 3 values"),
    "binary, UTF-8": (b"2 3\n" + binary_records({"a": [1, 2, 3]}) + b"\xc3( " + bytes(12), ["z"],
                      ", word 2 (byte 19): invalid UTF-8 in the word"),
    "binary, NaN": (b"2 1\n" + binary_records({"a": [1], "b": [float("nan")]}), ["z"],
                    ", word 2 (byte 11): the vector of 'b' holds NaN or inf"),
    "binary, more": (b"1 1\n" + binary_records({"a": [1], "b": [2]}), ["z"],
                     ", byte 11: the file goes on after the 1 words its header says"),
    "zip": (b"PK\x03\x04rest", ["z"], ": it is a zip archive"),
    "fastText .bin": ((793712314).to_bytes(4, "little") + bytes(40), ["z"], ": it is a fastText .bin model"),
}


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name", list(BAD))
def test_bad_files_are_one_line_naming_file_and_place(tmp_path, name, packed):
    data, words, says = BAD[name]
    path = write(tmp_path / "vectors", data, packed)
    with pytest.raises(VectorsFileError) as raised:
        read_vectors(path, words)
    message = str(raised.value)
    assert message.startswith(path + says) and "\n" not in message, message
    assert isinstance(raised.value, ValueError)


def test_a_cut_gzip_stream_is_refused(tmp_path):
    path = write(tmp_path / "v.gz", gzip.compress(text_rows(ROWS).encode() * 50)[:-30])
    with pytest.raises(VectorsFileError, match="gzip data is damaged or cut short"):
        read_vectors(path, ["cat"])


def test_coverage_counts_words_and_training_tokens(tmp_path):
    vectors = read_vectors(write(tmp_path / "g.txt", FILES["glove.txt"][0]), VOCABULARY)
    counts = {"cat": 50, "dög": 30, "zebra": 15, "1999": 0, "unseen": 5}  # unseen: a word beyond the vocabulary
    covered = word_vectors.coverage(vectors, counts)
    assert (covered.words_found, covered.words, covered.tokens_found, covered.tokens) == (2, 3, 80, 100)
    assert str(covered) == "word vectors: 2 of 3 words, 80.0% of training tokens"
    word_vectors.check_coverage(covered, 0.8, path="g.txt", flag="--min_coverage")
    with pytest.raises(CoverageError) as raised:
        word_vectors.check_coverage(covered, 0.9, path="g.txt", flag="--config.data.min_coverage")
    assert str(raised.value) == ("g.txt: word vectors cover 80.0% of training tokens (2 of 3 words), under 90%: is "
                                 "this the right file or language? (lower the threshold with "
                                 "--config.data.min_coverage)")


def test_the_embedding_matrix(tmp_path):
    rng = np.random.default_rng(1)
    rows = {f"w{i}": (rng.standard_normal(4) * [1, 2, 3, 4] + [0, 10, -5, 1]).tolist() for i in range(2000)}
    text = "".join(f"{w} {' '.join(repr(v) for v in vec)}\n" for w, vec in rows.items()).encode()
    vocabulary = ["<pad>", "<unk>", "w0"] + [f"w{i}" for i in range(1, 2000, 2)] + [f"x{i}" for i in range(3000)]
    vectors = read_vectors(write(tmp_path / "g.txt", text), vocabulary)
    matrix = word_vectors.embedding_matrix(vectors, seed=3, random_ids=(2,))
    assert matrix.shape == (len(vocabulary), 4) and matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix[0], 0.0)
    np.testing.assert_array_equal(matrix[3:1003], vectors.vectors[3:1003])
    assert not np.array_equal(matrix[2], vectors.vectors[2])  # w0 is in the file, but asked to be drawn
    drawn = matrix[1003:]
    known = vectors.vectors[vectors.found]
    np.testing.assert_allclose(drawn.mean(axis=0), known.mean(axis=0), atol=0.25)
    np.testing.assert_allclose(drawn.std(axis=0), known.std(axis=0), rtol=0.1)
    np.testing.assert_array_equal(word_vectors.embedding_matrix(vectors, seed=3, random_ids=(2,)), matrix)
    assert not np.array_equal(word_vectors.embedding_matrix(vectors, seed=4, random_ids=(2,)), matrix)


def test_a_vocabulary_with_a_word_twice_or_no_word_found(tmp_path):
    path = write(tmp_path / "g.txt", FILES["glove.txt"][0])
    with pytest.raises(ValueError, match="holds 'cat' twice"):
        read_vectors(path, ["cat", "dog", "cat"])
    with pytest.raises(ValueError, match="has a vector for no word of the vocabulary"):
        word_vectors.embedding_matrix(read_vectors(path, ["<pad>", "zebra"]))
