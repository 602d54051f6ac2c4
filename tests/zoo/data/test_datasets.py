import numpy as np
import pytest

from zoo.data import datasets
from zoo.language_model import corpora as lm_corpora
from zoo.translation import corpora as translation_corpora


def test_imdb_splits_hold_out_five_percent_of_train_for_validation():
    train = datasets.load_classification("imdb", "train")
    validation = datasets.load_classification("imdb", "validation")
    assert (len(train.texts), len(validation.texts)) == (23_750, 1_250)
    assert train.labels.mean() == validation.labels.mean() == 0.5
    assert "<br />" not in train.texts[0]


def test_sst2_reads_train_and_dev_and_refuses_test():
    assert len(datasets.load_classification("sst2", "validation").texts) == 872
    with pytest.raises(datasets.DatasetError, match="test labels are hidden"):
        datasets.check_split("sst2", "test")


def test_subsample_is_seeded_and_keeps_both_classes():
    data = datasets.load_classification("sst2", "validation")
    sample = datasets.subsample(data, 100, seed=1)
    assert len(sample.texts) == 100 and 0.3 < sample.labels.mean() < 0.7
    assert sample.texts == datasets.subsample(data, 100, seed=1).texts
    assert datasets.subsample(data, None, seed=1) is data


def test_sample_share_keeps_all_under_the_cap_else_each_text_by_one_seeded_draw():
    texts = [f"text {i:03d}" for i in range(400)]  # 8 characters each: 3,200 in all
    assert datasets.sample_share(iter(texts), 3200, 3200, seed=1) == texts
    chance = 800 / 3200
    expected = [t for t, draw in zip(texts, np.random.default_rng(7).random(len(texts))) if draw < chance]
    got = datasets.sample_share(iter(texts), 3200, 800, seed=7)
    assert got == expected and abs(len(got) - 100) < 30  # a quarter, about
    assert datasets.sample_share(iter(texts), 3200, 800, seed=8) != got


def test_unknown_dataset_lists_the_known_ones():
    with pytest.raises(datasets.DatasetError, match=r"use one of \['imdb', 'sst2', 'sst2_tune'\] or tfds:<name>"):
        datasets.load_classification("imbd", "train")


def test_sst2_tune_holds_out_every_20th_training_sentence_and_has_no_test():
    full = datasets.load_classification("sst2", "train")
    train, validation = (datasets.load_classification("sst2_tune", s) for s in ("train", "validation"))
    assert validation.texts == full.texts[::20] and list(validation.labels) == list(full.labels[::20])
    assert len(train.texts) + len(validation.texts) == len(full.texts) == 67349
    assert train.texts == [text for i, text in enumerate(full.texts) if i % 20]
    with pytest.raises(datasets.DatasetError, match="no test split"):
        datasets.check_split("sst2_tune", "test")


def test_missing_file_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    with pytest.raises(datasets.DatasetError, match=f"{tmp_path}/sst2/dev.tsv does not exist"):
        datasets.load_classification("sst2", "validation")


def test_corpora_keep_their_files_text_as_served_and_parallel_sides_split_at_newlines_only(tmp_path, monkeypatch):
    # Windows line ends, a form feed and a next-line control inside lines: a corpus's text is the file's
    # text (the export's tokenizer sees "\r" as whitespace, not as a line end), and Multi30k's sides are
    # split at "\n" alone, so a sentence holding \x85 or \x0c stays one sentence of its pair.
    import gzip

    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    (tmp_path / "ptb").mkdir()
    ptb = " a b\r\n c\x0cd \x85e\n"
    (tmp_path / "ptb" / "ptb.valid.txt").write_bytes(ptb.encode())
    assert lm_corpora.load_corpus("ptb", "validation").text == ptb
    (tmp_path / "tinyshakespeare").mkdir()
    (tmp_path / "tinyshakespeare" / "input.txt").write_bytes(("ROMEO:\r\nHi.\r\n" * 10).encode())
    assert lm_corpora.load_corpus("tinyshakespeare", "train").text == ("ROMEO:\r\nHi.\r\n" * 10)[:117]
    (tmp_path / "multi30k").mkdir()
    for language, lines in (("de", ["ein\x85Hund\r", "zwei\x0cKatzen\r"]), ("en", ["a dog", "two cats"])):
        with gzip.open(tmp_path / "multi30k" / f"val.{language}.gz", "wt", encoding="utf-8", newline="") as f:
            f.write("\n".join(lines) + "\n")
    pairs = translation_corpora.load_translation("multi30k", "validation", "de", "en")
    assert list(zip(pairs.sources, pairs.targets)) == [("ein\x85Hund", "a dog"), ("zwei\x0cKatzen", "two cats")]


@pytest.mark.parametrize("name", ["corpus.txt", "corpus.txt.gz"])
def test_a_bad_byte_past_the_first_mebibyte_is_named_at_its_place_in_the_file(tmp_path, name):
    import gzip

    data = b"a line\n" * 200_000 + b"\xff\n"  # 1,400,000 good bytes: the bad one past a 1 MiB read
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    with pytest.raises(datasets.DatasetError, match="position 1400000"):
        datasets.read_lines(str(path))
