"""zoo.pretraining.data: corpora of raw documents, the held-out split, and packing into sequences."""

import collections

import numpy as np
import pytest

import zoo  # noqa: F401  (TensorFlow backend first)
from zoo.data import cache
from zoo.data.datasets import DatasetError
from zoo.pretraining import data as pretraining_data

START, END = 2, 3


# ---------------------------------------------------------------- corpora


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def test_text_corpus_is_one_document_per_non_empty_stripped_line(tmp_path):
    write(tmp_path / "a.txt", "  first line \n\n\tsecond, with ünïcödé\t\n   \nthird\n")
    documents = list(pretraining_data.load_corpora([f"text:{tmp_path}/a.txt"]))
    assert list(documents) == ["first line", "second, with ünïcödé", "third"]


def test_text_corpus_glob_covers_every_matching_file(tmp_path):
    write(tmp_path / "a.txt", "alpha\nbeta\n")
    write(tmp_path / "b.txt", "gamma\n\ndelta")
    write(tmp_path / "c.md", "not matched\n")
    documents = list(pretraining_data.load_corpora([f"text:{tmp_path}/*.txt"]))
    assert collections.Counter(documents) == collections.Counter(["alpha", "beta", "gamma", "delta"])
    assert len(documents) == 4


def test_text_corpus_one_document_per_file(tmp_path):
    write(tmp_path / "a.txt", "line one\nline two\n")
    write(tmp_path / "b.txt", "another file\n\nwith a blank line\n")
    documents = list(pretraining_data.load_corpora([f"text:{tmp_path}/*.txt"], document_per_file=True))
    assert len(documents) == 2
    assert sorted(d.strip() for d in documents) == ["another file\n\nwith a blank line", "line one\nline two"]


def test_unknown_corpus_names_the_known_ones():
    assert issubclass(DatasetError, ValueError)
    with pytest.raises(DatasetError) as error:
        pretraining_data.load_documents("wikipedia_2077")
    message = str(error.value)
    for known in ("imdb_unsup", "imdb", "sst2"):
        assert known in message


def test_glob_matching_nothing_is_an_error(tmp_path):
    with pytest.raises(DatasetError):
        pretraining_data.load_corpora([f"text:{tmp_path}/nothing_here_*.txt"])


def test_non_utf8_file_is_an_error_naming_it(tmp_path):
    write(tmp_path / "good.txt", "fine\n")
    write(tmp_path / "latin.txt", "caf\xe9 cr\xe8me\n", encoding="latin-1")
    with pytest.raises(DatasetError, match="latin.txt"):
        pretraining_data.load_corpora([f"text:{tmp_path}/*.txt"])


def test_load_corpora_concatenates_in_order(tmp_path):
    write(tmp_path / "a.txt", "a1\na2\n")
    write(tmp_path / "b.txt", "b1\n")
    documents = pretraining_data.load_corpora([f"text:{tmp_path}/b.txt", f"text:{tmp_path}/a.txt"])
    assert list(documents) == ["b1", "a1", "a2"]
    whole = pretraining_data.load_corpora([f"text:{tmp_path}/a.txt", f"text:{tmp_path}/b.txt"],
                                          document_per_file=True)
    assert [d.strip() for d in whole] == ["a1\na2", "b1"]
    with pytest.raises(DatasetError):
        pretraining_data.load_corpora([])


def test_sst2_is_its_training_sentences():
    documents = pretraining_data.load_documents("sst2")
    assert len(documents) == 67349  # GLUE SST-2's training split
    assert all(isinstance(d, str) and d for d in documents[:1000])


# ---------------------------------------------------------------- held out


def held_out(n, fraction, seed):
    mask = pretraining_data.held_out_mask(n, fraction, seed)
    return np.flatnonzero(~mask), np.flatnonzero(mask)


@pytest.mark.parametrize("n,fraction", [(2, 0.01), (2, 0.99), (3, 0.5), (10, 0.01), (10, 0.33), (10, 0.999),
                                        (1000, 0.05), (1001, 0.2)])
def test_held_out_is_a_partition_of_the_expected_size(n, fraction):
    train, evaluation = held_out(n, fraction, seed=0)
    train, evaluation = np.asarray(train), np.asarray(evaluation)
    assert train.dtype.kind == "i" and evaluation.dtype.kind == "i"
    assert np.all(np.diff(train) > 0) and np.all(np.diff(evaluation) > 0)  # ascending, no repeats
    assert not set(train.tolist()) & set(evaluation.tolist())
    assert sorted(train.tolist() + evaluation.tolist()) == list(range(n))
    assert len(evaluation) == min(n - 1, max(1, round(n * fraction)))


def test_held_out_depends_on_its_seed_only():
    a = held_out(500, 0.1, seed=1)
    b = held_out(500, 0.1, seed=1)
    c = held_out(500, 0.1, seed=2)
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[1], c[1])


# ---------------------------------------------------------------- packing


def pack(documents, length):
    """The rows of pretraining_data.PackedRows over `documents` (lists of ids) put through the token cache."""
    documents = [[int(t) for t in d] for d in documents]
    encode = lambda texts: [documents[int(t)] + [END] for t in texts]  # noqa: E731
    rows = cache.token_rows({"documents": documents}, [(str(i), None) for i in range(len(documents))], encode,
                            "test", in_graph=False)
    packed = pretraining_data.PackedRows(rows, length, START)
    return [packed.gather([i])[0] for i in range(len(packed))]


def stream_of(documents):
    out = []
    for document in documents:
        out.extend(int(t) for t in document)
        out.append(END)
    return out


@pytest.mark.parametrize("length", [2, 3, 8, 16, 100])
def test_pack_is_start_plus_the_stream_in_full_rows(length):
    rng = np.random.default_rng(length)
    documents = [rng.integers(5, 1000, rng.integers(1, 30)).tolist() for _ in range(20)]
    documents[3] = np.asarray(documents[3], np.int64)  # arrays are documents too
    rows = pack(documents, length)
    stream = stream_of(documents)
    assert len(rows) == -(-len(stream) // (length - 1))  # ceil: every token once, sequence_length - 1 per row
    for i, row in enumerate(rows):
        row = np.asarray(row)
        assert row.dtype == np.int32
        assert row[0] == START
        if i < len(rows) - 1:
            assert len(row) == length
        else:
            assert 2 <= len(row) <= length
    unpacked = np.concatenate([np.asarray(row)[1:] for row in rows]).tolist()
    assert unpacked == stream


def test_pack_by_hand():
    rows = pack([[10, 11, 12], [20], [30, 31]], 4)
    # stream: 10 11 12 3 20 3 30 31 3 -> rows of <s> + 3 tokens
    assert [np.asarray(r).tolist() for r in rows] == [[2, 10, 11, 12], [2, 3, 20, 3], [2, 30, 31, 3]]
    rows = pack([[10, 11, 12], [20]], 4)
    assert [np.asarray(r).tolist() for r in rows] == [[2, 10, 11, 12], [2, 3, 20, 3]]
    rows = pack([[10, 11, 12, 13]], 4)
    assert [np.asarray(r).tolist() for r in rows] == [[2, 10, 11, 12], [2, 13, 3]]


def test_held_out_documents_never_share_a_packed_sequence_with_training():
    # Each document's tokens are its own (document i holds ids 1000 * (i + 1) + j), so a sequence
    # with tokens of both a training and an evaluation document would show in the token sets.
    rng = np.random.default_rng(0)
    documents = [[1000 * (i + 1) + j for j in range(rng.integers(1, 40))] for i in range(60)]
    train_ids, eval_ids = held_out(len(documents), 0.2, seed=3)
    train = pack([documents[i] for i in train_ids], 16)
    evaluation = pack([documents[i] for i in eval_ids], 16)

    def owners(rows):
        return {int(t) // 1000 - 1 for row in rows for t in np.asarray(row) if t >= 1000}

    assert owners(train) == set(np.asarray(train_ids).tolist())
    assert owners(evaluation) == set(np.asarray(eval_ids).tolist())
    assert not owners(train) & owners(evaluation)
    assert len(eval_ids) == 12
