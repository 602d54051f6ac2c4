"""zoo.data.cache: token ids tokenized once into a memory-mapped entry, reused by key, read a batch at a time;
memory flat in the corpus's size."""


import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import data_path_peak
from zoo.data import batching, cache, sources


def encode(texts):
    return tf.strings.unicode_decode(texts, "UTF-8")


def test_rows_equal_direct_encoding_and_are_reused(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(cache, "CHUNK_BYTES", 64)  # several chunks
    texts = [f"row {i} " + "é😀" * (i % 7) for i in range(200)]
    examples = [(t, i % 3) for i, t in enumerate(texts)]
    rows = cache.token_rows({"k": 1}, examples, encode, "test")
    assert len(rows) == 200 and rows.labels.tolist() == [i % 3 for i in range(200)]
    for i in (0, 57, 199):
        assert rows.row(i).tolist() == [ord(c) for c in texts[i]]
    values, lengths = rows.gather([5, 2])
    assert values.tolist() == [ord(c) for c in texts[5] + texts[2]]
    assert lengths.tolist() == [len(texts[5]), len(texts[2])]

    def must_not_run(_):
        raise AssertionError("tokenized again")

    again = cache.token_rows({"k": 1}, iter(()), must_not_run, "test")
    assert again.directory == rows.directory
    other = cache.token_rows({"k": 2}, examples[:3], encode, "test")
    assert other.directory != rows.directory and len(other) == 3


def test_changed_file_changes_the_key(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one")
    before = sources.files_digest([str(path)])
    path.write_text("two")
    assert sources.files_digest([str(path)]) != before


def test_plan_dataset_reads_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    texts = ["a", "bbb", "cc", "dddd"]
    rows = cache.token_rows({"k": 3}, [(t, i) for i, t in enumerate(texts)], encode, "test")
    batch = next(iter(batching.plan_dataset([np.array([3, 0])], {"ids": rows, "label": rows.labels})))
    assert batch["ids"].numpy().tolist() == [[100] * 4 + [0] * 4, [97] + [0] * 7]
    assert batch["label"].numpy().tolist() == [3, 0]


MEMORY_PROGRAM = r"""
import json, os, resource, sys
import numpy as np, tensorflow as tf
from zoo.data import batching, cache, sources
megabytes = int(sys.argv[1])
line = ("the quick brown fox jumps over the lazy dog " * 23)[:1000]

def corpus():  # generated lazily: nothing holds it
    for i in range(megabytes * 1000):
        yield line, i % 2

encode = lambda texts: tf.strings.unicode_decode(texts, "UTF-8")
rows = cache.token_rows({"megabytes": megabytes}, corpus(), encode, "memory test")
plan = batching.evaluation_plan(rows.lengths, 256)
for batch in batching.plan_dataset(plan, {"ids": rows, "label": rows.labels}):
    pass
print(json.dumps({"rows": len(rows), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peak(megabytes, cache_dir):
    return data_path_peak(MEMORY_PROGRAM, cache_dir, megabytes)


@pytest.mark.slow  # outside the default run: python -m pytest -m slow
def test_memory_does_not_grow_with_the_corpus(tmp_path):
    """Tokenizing and reading every batch of 60 MB of text (240 MB of ids) peaks within 40 MB of doing so for
    8 MB: a data path that held the texts, the ids or a map of them all would add 60-300 MB."""
    small, large = peak(8, tmp_path / "small"), peak(60, tmp_path / "large")
    assert large["rows"] == 60_000
    assert large["peak_mb"] - small["peak_mb"] < 40, (small, large)
