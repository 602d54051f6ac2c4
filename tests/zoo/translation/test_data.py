"""zoo.translation.data: sentence pairs from the user's aligned text or TSV files, read again on each pass (nothing
holds a split), tokenized once into the token cache with the same ids as the preprocessor's rows; memory flat in
the corpus's size."""

import gzip

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import data_path_peak
from zoo.data import cache, spec as dataset_spec
from zoo.data.datasets import DatasetError
from zoo.runs.run_dir import Tokenizers
from zoo.translation import data, preprocessor


class Characters:
    """A tokenizer of Unicode code points (ids shifted past the special ids), as the preprocessor calls one."""

    def tokenize(self, texts):
        return tf.strings.unicode_decode(texts, "UTF-8") + 4


def write_aligned(folder, split, sources, targets, crlf=False, bom=False):
    end = "\r\n" if crlf else "\n"
    for language, lines in (("de", sources), ("en", targets)):
        text = ("\ufeff" if bom else "") + "".join(line + end for line in lines)
        (folder / f"{split}.{language}").write_bytes(text.encode("utf-8"))


SOURCES = [f"ein Satz {i} 😀 中文" for i in range(60)]
TARGETS = [f"a sentence {i}" for i in range(60)]


def test_aligned_files_read_as_written_and_again_on_each_pass(tmp_path):
    write_aligned(tmp_path, "train", SOURCES, TARGETS, crlf=True, bom=True)
    write_aligned(tmp_path, "validation", SOURCES[:5], TARGETS[:5])
    pairs = data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "train", "de", "en")
    assert list(pairs) == list(zip(SOURCES, TARGETS)) and list(pairs) == list(pairs)
    assert len(pairs) == 60 and pairs.example == SOURCES[0]
    assert pairs.chars == (sum(map(len, SOURCES)), sum(map(len, TARGETS)))
    assert list(data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "validation", "de", "en")) == list(
        zip(SOURCES[:5], TARGETS[:5]))


def test_without_a_split_in_the_pattern_one_in_twenty_is_held_out(tmp_path):
    write_aligned(tmp_path, "all", SOURCES, TARGETS)
    train = list(data.load(f"text:{tmp_path}/all.{{lang}}", "train", "de", "en"))
    validation = list(data.load(f"text:{tmp_path}/all.{{lang}}", "validation", "de", "en"))
    held = [i for i in range(60) if dataset_spec.held_out(i)]
    assert validation == [(SOURCES[i], TARGETS[i]) for i in held] and len(train) == 60 - len(held)


@pytest.mark.parametrize("longer", ["de", "en"])
def test_aligned_files_of_different_lengths_give_both_counts(tmp_path, longer):
    write_aligned(tmp_path, "train", SOURCES[:7] if longer == "en" else SOURCES, TARGETS[:7] if longer == "de"
                  else TARGETS)
    with pytest.raises(DatasetError) as error:
        data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "train", "de", "en")
    counts = (60, 7) if longer == "de" else (7, 60)
    assert f"train.de has {counts[0]} lines but" in str(error.value)
    assert f"train.en has {counts[1]}" in str(error.value)


def test_tsv_shards_a_header_and_bad_rows(tmp_path):
    with gzip.open(tmp_path / "a.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("en\tde\nhello\thallo\n")
    (tmp_path / "b.tsv").write_text("dog\tHund\nno tab here\ncat\tKatze\textra\n", encoding="utf-8")
    with pytest.raises(DatasetError) as error:
        data.load(f"tsv:{tmp_path}/*.tsv*", "train", "de", "en")
    assert "b.tsv:2" in str(error.value) and "b.tsv:3" in str(error.value)
    pairs = data.load(f"tsv:{tmp_path}/*.tsv*", "train", "de", "en", bad_rows="skip")
    # a.tsv.gz's header puts English first; b.tsv has none, so its first column is the --source (de) one.
    read = [("hallo", "hello"), ("dog", "Hund")]
    assert list(pairs) == [pair for i, pair in enumerate(read) if not dataset_spec.held_out(i)]
    assert pairs.skipped == 2


def test_a_sample_is_seeded_and_keeps_the_order(tmp_path):
    write_aligned(tmp_path, "train", SOURCES, TARGETS)
    write_aligned(tmp_path, "validation", SOURCES[:2], TARGETS[:2])  # validation files: nothing held out of train
    pairs = data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "train", "de", "en")
    sample = pairs.subsample(10, seed=3)
    keep = np.sort(np.random.default_rng(3).permutation(60)[:10])
    assert list(sample) == [(SOURCES[i], TARGETS[i]) for i in keep] and len(sample) == 10
    assert sample.key != pairs.key and pairs.subsample(100, seed=3) is pairs


def test_cached_rows_equal_the_preprocessors_rows_and_are_reused(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    write_aligned(tmp_path, "train", SOURCES, TARGETS)
    write_aligned(tmp_path, "validation", SOURCES[:2], TARGETS[:2])
    pairs = data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "train", "de", "en")
    tokenizers = Tokenizers(Characters(), Characters())
    sources, targets = data.token_rows(pairs, tokenizers, "tokenizer", 12)
    expected_sources = preprocessor.source_rows(tokenizers.source, SOURCES, 12)
    expected_targets = preprocessor.target_rows(tokenizers.target, TARGETS, 12)
    for i in range(60):
        np.testing.assert_array_equal(sources.row(i), expected_sources[i])
        np.testing.assert_array_equal(targets.row(i), expected_targets[i])
    again = data.token_rows(pairs, tokenizers, "tokenizer", 12)
    assert [rows.directory for rows in again] == [sources.directory, targets.directory]
    write_aligned(tmp_path, "train", SOURCES, TARGETS[:-1] + ["changed"])
    changed = data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "train", "de", "en")
    assert data.token_rows(changed, tokenizers, "tokenizer", 12)[1].directory != targets.directory


MEMORY_PROGRAM = r"""
import json, resource, sys
import tensorflow as tf
from zoo.data import batching
from zoo.runs.run_dir import Tokenizers
from zoo.translation import data
folder, = sys.argv[1:]

class Characters:
    def tokenize(self, texts):
        return tf.strings.unicode_decode(texts, "UTF-8") + 4

pairs = data.load(f"text:{folder}/{{split}}.{{lang}}", "train", "de", "en")
sources, targets = data.token_rows(pairs, Tokenizers(Characters(), Characters()), "k", 1024)
plan = batching.evaluation_plan(targets.lengths, 256)
for batch in batching.plan_dataset(plan, {"source": sources, "target": targets}):
    pass
print(json.dumps({"pairs": len(pairs), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peak(megabytes, folder):
    folder.mkdir()
    line = ("der schnelle braune Fuchs springt " * 30)[:1000]  # long rows: a row's own bookkeeping stays small
    for language in ("de", "en"):
        with open(folder / f"train.{language}", "w") as f:
            for _ in range(megabytes * 1000):
                f.write(line + "\n")
        (folder / f"validation.{language}").write_text(line + "\n")  # nothing held out of train
    return data_path_peak(MEMORY_PROGRAM, folder / "cache", folder)


@pytest.mark.slow  # outside the default run: python -m pytest -m slow
def test_memory_does_not_grow_with_the_corpus(tmp_path):
    """Reading, tokenizing and batching 2 x 60 MB of aligned text (60,000 pairs of 1,000 characters) peaks within
    40 MB of doing so for 2 x 12 MB: a data path that held the pairs (120 MB of text) or their ids (480 MB) would
    not. (What does grow is tens of bytes a pair: each side's row offsets and lengths, the batch plan.) The small
    corpus spans several of the cache's 4 MB chunks, the most that tokenizing holds at once."""
    small, large = peak(12, tmp_path / "small"), peak(60, tmp_path / "large")
    assert large["pairs"] == 60_000  # train.de and train.en: a {split} pattern with validation files
    assert large["peak_mb"] - small["peak_mb"] < 40, (small, large)


def test_files_changed_between_the_check_and_the_tokenizing_are_refused_and_not_cached(tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(cache_dir))
    write_aligned(tmp_path, "train", SOURCES, TARGETS)
    pairs = data.load(f"text:{tmp_path}/{{split}}.{{lang}}", "train", "de", "en")
    write_aligned(tmp_path, "train", SOURCES + ["noch einer"], TARGETS + ["one more"])
    with pytest.raises(DatasetError, match=r"train\.de changed .*while it was tokenized"):
        data.token_rows(pairs, Tokenizers(Characters(), Characters()), "tokenizer", 12)
    assert not [name for name in cache_dir.iterdir() if not name.name.startswith(".")]  # nothing kept
    assert not list(cache_dir.iterdir())  # nor a staging folder left behind


def test_a_blank_side_of_an_aligned_pair_is_a_bad_row(tmp_path):
    sources, targets = SOURCES[:], TARGETS[:]
    sources[4], targets[9] = "", "  "  # lines 5 and 10; a line blank in both files (11) is passed over
    sources[10] = targets[10] = ""
    write_aligned(tmp_path, "train", sources, targets)
    write_aligned(tmp_path, "validation", SOURCES[:2], TARGETS[:2])
    name = f"text:{tmp_path}/{{split}}.{{lang}}"
    with pytest.raises(DatasetError, match=r"2 bad row\(s\).*train\.de:5 and line 5 of .*train\.en: an empty de "
                                           r"side.*train\.de:10 .*: an empty en side"):
        data.load(name, "train", "de", "en")
    pairs = data.load(name, "train", "de", "en", bad_rows="skip")
    assert pairs.skipped == 2 and len(pairs) == 57 and all(source and target for source, target in pairs)


def test_a_blank_side_of_a_tsv_pair_is_a_bad_row(tmp_path):
    (tmp_path / "p.tsv").write_text("de\ten\nHund\tdog\n\tcat\nMaus\t \n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"p\.tsv:3: an empty de side.*p\.tsv:4: an empty en side"):
        data.load(f"tsv:{tmp_path}/p.tsv", "train", "de", "en")
    assert data.load(f"tsv:{tmp_path}/p.tsv", "train", "de", "en", bad_rows="skip").skipped == 2


def test_a_tsv_header_naming_another_language_is_refused(tmp_path):
    (tmp_path / "p.tsv").write_text("de\tfr\nHund\tchien\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"p\.tsv:1: the header names the languages 'de' and 'fr', but "
                                           r"--source=de and --target=en"):
        data.load(f"tsv:{tmp_path}/p.tsv", "train", "de", "en")
    (tmp_path / "p.tsv").write_text("ja\tyes\nnein\tno\n", encoding="utf-8")  # two short words: a pair
    assert list(data.load(f"tsv:{tmp_path}/p.tsv", "train", "de", "en")) == [("ja", "yes"), ("nein", "no")]


def test_a_split_pattern_without_validation_files_holds_out_a_share_of_train(tmp_path, capsys):
    write_aligned(tmp_path, "train", SOURCES, TARGETS)
    name = f"text:{tmp_path}/{{split}}.{{lang}}"
    data.check_split(dataset_spec.parse(name, data.FORMS), "validation", "de", "en")
    train = list(data.load(name, "train", "de", "en"))
    validation = list(data.load(name, "validation", "de", "en"))
    held = [i for i in range(60) if dataset_spec.held_out(i)]
    assert validation == [(SOURCES[i], TARGETS[i]) for i in held]
    assert train == [(SOURCES[i], TARGETS[i]) for i in range(60) if i not in held]
    assert "No validation files match" in capsys.readouterr().out
