"""zoo.language_model.data: files without {split} hold out whole blocks of lines (not lines scattered among
the training ones), about 1 in 20 of them, the same ones on every load; the default evaluated split."""

import pytest

from zoo.data.datasets import DatasetError
from zoo.language_model import data as lm_data


def write_lines(path, count, start=0):
    path.write_text("".join(f"line {i} of the text\n" for i in range(start, start + count)))


def numbers(corpus):
    return [int(line.split()[1]) for line in corpus]


def runs(values):
    """The runs of consecutive numbers in `values` as (first, last) pairs."""
    found = []
    for value in values:
        if found and value == found[-1][1] + 1:
            found[-1] = (found[-1][0], value)
        else:
            found.append((value, value))
    return found


def test_held_out_share_is_a_contiguous_block_of_about_one_in_twenty(tmp_path):
    write_lines(tmp_path / "a.txt", 1000)
    train = numbers(lm_data.load(f"text:{tmp_path}/a.txt", "train"))
    held_out = numbers(lm_data.load(f"text:{tmp_path}/a.txt", "validation"))
    assert sorted(train + held_out) == list(range(1000)) and not set(train) & set(held_out)
    assert len(held_out) == 50
    # One block: no held-out line has a training line within 49 lines of it on both sides.
    assert runs(held_out) == [(950, 999)]
    assert numbers(lm_data.load(f"text:{tmp_path}/a.txt", "validation")) == held_out  # deterministic


def test_a_large_text_holds_out_several_blocks_spread_through_it(tmp_path, monkeypatch):
    monkeypatch.setattr(lm_data, "MIN_BLOCK_CHARACTERS", 1000)  # 2,000 lines of ~20 characters: 2 blocks
    write_lines(tmp_path / "a.txt", 1000)
    write_lines(tmp_path / "b.txt", 1000, start=1000)  # several files: one text, in file order
    held_out = numbers(lm_data.load(f"text:{tmp_path}/*.txt", "validation"))
    train = numbers(lm_data.load(f"text:{tmp_path}/*.txt", "train"))
    assert runs(held_out) == [(950, 999), (1950, 1999)]
    assert len(train) + len(held_out) == 2000 and not set(train) & set(held_out)


def test_held_out_rule_is_in_the_cache_key(tmp_path):
    write_lines(tmp_path / "a.txt", 100)
    assert lm_data.load(f"text:{tmp_path}/a.txt", "train").key["held_out"] == lm_data.HELD_OUT_RULE


def test_too_few_lines_to_hold_out_is_refused(tmp_path):
    write_lines(tmp_path / "a.txt", 10)
    with pytest.raises(DatasetError, match="10 lines: too few to hold out 1 in 20"):
        lm_data.load(f"text:{tmp_path}/a.txt", "validation")


def test_files_with_their_own_splits_keep_every_line(tmp_path):
    for split in ("train", "validation", "test"):
        write_lines(tmp_path / f"{split}.txt", 30)
    assert len(numbers(lm_data.load(f"text:{tmp_path}/{{split}}.txt", "train"))) == 30
    assert len(numbers(lm_data.load(f"text:{tmp_path}/{{split}}.txt", "validation"))) == 30


def test_default_split_is_the_held_out_share_without_split_in_the_pattern():
    assert lm_data.default_split("text:corpus/*.txt") == "validation"
    assert lm_data.default_split("text:corpus/{split}.txt") == "test"
    assert lm_data.default_split("ptb") == "test"
