"""zoo.data.cache's checks: an entry holds the rows of the bytes its key names (a file changed while it is
tokenized is refused by name), a damaged, incomplete or older entry is named, moved aside and made again, ids
outside the vocabulary are refused, a cache folder that cannot be written is one error naming ZOO_CACHE_DIR, and
the staging folder of a writer that died is removed by the next run (zoo.data.staging)."""

import json
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import ROOT
from zoo.classifier import data as classifier_data
from zoo.data import cache
from zoo.data.sources import Sources
from zoo.data.datasets import DatasetError
from zoo.language_model import data as lm_data
from zoo.pretraining import data as pretraining_data

LINES = ["the first line", "a second and longer line", "three", "and a fourth one"]


def encode(texts):
    return tf.strings.unicode_decode(texts, "UTF-8")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    return folder


def entries(folder):
    """The cache's folders: entries, and any staging or damaged folder left behind (dot-names)."""
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def line_rows(path):
    """token_rows of a text file's lines, keyed by its Sources, as the recipes' data modules do."""
    sources = Sources(lambda: [str(path)])
    lines = (line.rstrip("\n") for line in open(path).readlines())
    return cache.token_rows({"files": sources.digest}, ((line, None) for line in lines), encode, "test",
                            sources=sources)


def test_a_file_appended_to_while_it_is_tokenized_is_refused_by_name_and_its_restored_rows_are_made(
        tmp_path, cache_dir):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(line + "\n" for line in LINES))
    sources = Sources(lambda: [str(path)])

    def appending():  # the probe's case: another program appends while the first run reads
        for number, line in enumerate(LINES):
            if number == 2:
                with open(path, "a") as f:
                    f.write("an appended line\n")
            yield line, None

    size = path.stat().st_size
    with pytest.raises(DatasetError, match=rf"^{path} changed \(from {size} to {size + 17} bytes\) while it was "
                                           "tokenized: its tokens were not kept"):
        cache.token_rows({"files": sources.digest}, appending(), encode, "test", sources=sources)
    assert entries(cache_dir) == []  # neither an entry nor its staging folder
    path.write_text("".join(line + "\n" for line in LINES))  # restored
    rows = line_rows(path)
    assert cache.key_name({"files": sources.digest}) == os.path.basename(rows.directory)  # the same key as before
    assert [rows.row(i).tolist() for i in range(len(rows))] == [[ord(c) for c in line] for line in LINES]


def test_a_file_added_to_a_folder_while_it_is_tokenized_is_refused(tmp_path, cache_dir):
    (tmp_path / "a.txt").write_text("one")
    sources = Sources(lambda: sorted(str(p) for p in tmp_path.glob("*.txt")))
    (tmp_path / "b.txt").write_text("two")
    with pytest.raises(DatasetError, match=rf"^{tmp_path / 'b.txt'} appeared while it was tokenized"):
        cache.token_rows({"files": sources.digest}, [("one", None)], encode, "test", sources=sources)


def classifier_rows(path):
    class Framed:  # a preprocessor's part that the cache's key and tokenizing read
        max_length, start_id, end_id = 64, 1, 2
        framed = staticmethod(encode)

    return classifier_data.token_rows(classifier_data.load(f"csv:{path}", "train"), Framed(), "tokenizer")


def lm_rows(path):
    corpus = lm_data.load(f"text:{path}", "train", level="char")
    return lm_data.token_stream(corpus, lm_data.build_vocabulary(corpus), "vocabulary")


def pretraining_rows(path):
    documents = pretraining_data.load_corpora([f"text:{path}"])
    return pretraining_data.token_rows(documents, np.ones(documents.count, bool), encode, "tokenizer", 0, "train")


@pytest.mark.parametrize("rows_of", [classifier_rows, lm_rows, pretraining_rows])
def test_every_recipes_data_refuses_a_file_that_changed_after_it_was_read(tmp_path, cache_dir, monkeypatch,
                                                                          rows_of):
    path = tmp_path / "train.csv"
    original = "text,label\n" + "".join(f"{line},{i % 2}\n" for i, line in enumerate(LINES * 5))
    path.write_text(original)
    tokenize = cache.token_rows

    def appended_first(*args, **kwargs):  # the data read and keyed; the file grows before the pass ends
        path.write_text(original + "one more,1\n")
        return tokenize(*args, **kwargs)

    monkeypatch.setattr(cache, "token_rows", appended_first)
    with pytest.raises(DatasetError, match=rf"^{path} changed"):
        rows_of(path)
    assert entries(cache_dir) == []
    monkeypatch.setattr(cache, "token_rows", tokenize)
    path.write_text(original)
    assert len(rows_of(path)) and len(entries(cache_dir)) == 1


def flip_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def older_format(path):
    meta = json.loads(path.read_text())
    del meta["format"]
    path.write_text(json.dumps(meta))


DAMAGES = {
    "ids.bin truncated": ("ids.bin", lambda p: p.write_bytes(p.read_bytes()[:-4]), r"ids\.bin holds .* bytes"),
    "ids.bin deleted": ("ids.bin", os.remove, r"ids\.bin is missing"),
    "meta.json deleted": ("meta.json", os.remove, r"incomplete \(no meta\.json\)"),
    "ids.bin altered": ("ids.bin", flip_byte, r"ids\.bin does not match its checksum"),
    "labels.bin altered": ("labels.bin", flip_byte, r"labels\.bin does not match its checksum"),
    "an older format": ("meta.json", older_format, "older format"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_entry_is_named_moved_aside_and_made_again(cache_dir, capsys, damage):
    name, spoil, reason = DAMAGES[damage]
    examples = [(line, i % 3) for i, line in enumerate(LINES)]
    rows = cache.token_rows({"k": 1}, examples, encode, "test")
    spoil(cache_dir / os.path.basename(rows.directory) / name)
    capsys.readouterr()
    again = cache.token_rows({"k": 1}, examples, encode, "test")
    message = capsys.readouterr().err.strip()
    assert len(message.splitlines()) == 1 and message.startswith(f"token cache: {rows.directory} ")
    assert re.search(reason, message) and "moved aside" in message
    assert [again.row(i).tolist() for i in range(4)] == [[ord(c) for c in line] for line in LINES]
    assert again.labels.tolist() == [0, 1, 2, 0]
    assert entries(cache_dir) == [os.path.basename(rows.directory)]  # nothing damaged left beside it


def test_an_orphan_folder_without_meta_json_is_replaced(cache_dir, capsys):
    """A folder where the entry belongs but without meta.json (a copy cut short) made the rename fail with
    "Directory not empty" on every run."""
    orphan = cache_dir / cache.key_name({"k": 2})
    orphan.mkdir(parents=True)
    (orphan / "ids.bin").write_bytes(b"\0" * 12)
    rows = cache.token_rows({"k": 2}, [("abc", None)], encode, "test")
    assert rows.directory == str(orphan) and rows.row(0).tolist() == [97, 98, 99]
    assert "incomplete (no meta.json)" in capsys.readouterr().err


def test_ids_outside_the_vocabulary_are_refused_naming_the_entry(cache_dir):
    rows = cache.token_rows({"k": 3}, [("abc", None), ("z", None)], encode, "test")
    rows.check_ids(ord("z") + 1)
    with pytest.raises(DatasetError, match=rf"{rows.directory} holds id 122, outside the model's vocabulary "
                                           r"\(0 to 121\)"):
        rows.check_ids(ord("z"))


def test_a_cache_folder_that_is_a_file_is_one_error_naming_zoo_cache_dir(cache_dir):
    cache_dir.write_text("not a folder")
    for attempt in (cache.check_writable, lambda: cache.token_rows({"k": 4}, [("a", None)], encode, "test")):
        with pytest.raises(cache.CacheWriteError, match=rf"{cache_dir} is a file, not a folder\. .*Set ZOO_CACHE_DIR"):
            attempt()


def test_a_read_only_cache_folder_is_one_error_naming_zoo_cache_dir(cache_dir):
    cache_dir.mkdir()
    cache_dir.chmod(0o500)
    try:
        if os.access(cache_dir, os.W_OK):
            pytest.skip("this user (root) writes into read-only folders")
        with pytest.raises(cache.CacheWriteError, match="may not write .*Set ZOO_CACHE_DIR"):
            cache.check_writable()
    finally:
        cache_dir.chmod(0o700)


def test_a_full_disk_while_writing_an_entry_is_one_error_and_leaves_nothing(cache_dir, monkeypatch):
    """A file size limit (ulimit -f) stands in for a full disk: the write fails with EFBIG (Python ignores
    SIGXFSZ), as a full one fails with ENOSPC."""
    monkeypatch.setattr(cache, "CHUNK_BYTES", 64)
    cache.check_writable()  # small files still fit
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(cache.CacheWriteError, match=r"grew to the largest size allowed.*Set ZOO_CACHE_DIR"):
            cache.token_rows({"k": 5}, [("x" * 100, None)] * 100, encode, "test")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert entries(cache_dir) == []  # the staging folder removed


WRITER = """
import os, sys, time
from zoo.data import cache

def examples():
    open(sys.argv[2], "w").close()  # the staging folder is made: say so, then tokenize forever
    yield "a text", None
    time.sleep(3600)

cache.token_rows({"writer": sys.argv[1]}, examples(), lambda texts: [[1] for _ in texts], "test", in_graph=False)
"""


def start_writer(name, tmp_path, cache_dir):
    """A process making the cache entry {"writer": name}, stopped inside its pass; its staging folder's path."""
    started = tmp_path / f"{name}.started"
    process = subprocess.Popen([sys.executable, "-c", WRITER, name, str(started)], cwd=ROOT,
                               env={**os.environ, cache.CACHE_ENV: str(cache_dir)})
    while not started.exists():
        assert process.poll() is None, "the writer ended before tokenizing"
        time.sleep(0.1)
    prefix = f".{cache.key_name({'writer': name})}."
    return process, next(cache_dir / p for p in entries(cache_dir) if p.startswith(prefix) and not p.endswith(".lock"))


def test_the_staging_folder_of_a_writer_killed_by_sigkill_is_removed_by_the_next_run_and_a_living_ones_kept(
        tmp_path, cache_dir, capsys):
    """A tokenizing run killed by SIGKILL left its staging folder (17 MB of aclImdb's ids) for ever. Its lock says
    that its writer is gone, however new the folder; a living writer's folder stays, however old."""
    dead, dead_folder = start_writer("dead", tmp_path, cache_dir)
    living, living_folder = start_writer("living", tmp_path, cache_dir)
    try:
        dead.kill()
        dead.wait()
        os.utime(living_folder, (0, 0))  # age tells nothing: the living writer's folder looks the older
        rows = cache.token_rows({"k": 6}, [("abc", None)], encode, "test")
        assert rows.row(0).tolist() == [97, 98, 99]
        assert not dead_folder.exists() and not os.path.exists(f"{dead_folder}.lock") and living_folder.is_dir()
        assert (f"token cache: removed {dead_folder}, a half-written entry (its writer ended before finishing it)."
                in capsys.readouterr().err)
    finally:
        living.kill()
        living.wait()
    cache.token_rows({"k": 6}, [("abc", None)], encode, "test")  # the next run removes the second one too
    assert entries(cache_dir) == [cache.key_name({"k": 6})]


def test_a_staging_folder_of_an_older_zoo_is_removed_once_unchanged_for_an_hour(cache_dir):
    """Before the locks, a staging folder had none: it goes once nothing in it changed for an hour; a folder of
    another name in the cache folder is never touched."""
    old, fresh, other = (cache_dir / f".{'a' * 32}.{'b' * 32}", cache_dir / f".{'c' * 32}.{'d' * 32}",
                         cache_dir / ".mine")
    for folder in (old, fresh, other):
        folder.mkdir(parents=True)
        (folder / "ids.bin").write_bytes(b"\0" * 8)
    for path in (old, old / "ids.bin", other, other / "ids.bin"):
        os.utime(path, (0, 0))
    cache.token_rows({"k": 7}, [("abc", None)], encode, "test")
    assert not old.exists() and fresh.is_dir() and other.is_dir()
