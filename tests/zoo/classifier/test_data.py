"""zoo.classifier.data: no silent data. One label rule (docs/data.md), the text and label columns apart,
--classes picking labels or class folders, and a class the evaluated split lacks said in the log."""

import json
import os

import pytest

from zoo.classifier import data
from zoo.data import files
from zoo.data.datasets import DatasetError


def write_jsonl(path, labels):
    path.write_text("".join(json.dumps({"text": f"text {i}", "label": label}) + "\n" for i, label in enumerate(labels)))
    return f"jsonl:{path}"


def write_tree(root, folders):
    """A folder: dataset, e.g. {"train/neg": 3}: that many one-line texts in each class folder."""
    for folder, count in folders.items():
        os.makedirs(root / folder, exist_ok=True)
        for i in range(count):
            (root / folder / f"{i}.txt").write_text(f"{folder} {i}")


def test_labels_are_stripped_and_integers_written_in_decimal(tmp_path):
    name = write_jsonl(tmp_path / "t.jsonl", ["1", " 1", 1, "01 ", "2", " pos", "pos "] * 4)
    assert data.load(name, "train").class_names == ("1", "2", "pos")


def test_one_number_written_two_ways_is_refused_naming_both(tmp_path):
    name = write_jsonl(tmp_path / "t.jsonl", ["1", " 1", "1.0", "2"] * 6)
    with pytest.raises(DatasetError, match=r"the labels '1' and '1.0' are one number written two ways"):
        data.load(name, "train")
    assert data.load(write_jsonl(tmp_path / "u.jsonl", ["1.0", "2.0"] * 6), "train").class_names == ("1.0", "2.0")


def test_the_text_and_label_columns_must_differ(tmp_path):
    name = write_jsonl(tmp_path / "t.jsonl", ["a", "b"] * 4)
    with pytest.raises(DatasetError, match="--text_column and --label_column both name 'label'"):
        data.load(name, "train", data.Columns("label", "label"))


def test_classes_pick_labels_in_their_order_and_say_what_is_left_out(tmp_path, capsys):
    name = write_jsonl(tmp_path / "t.jsonl", ["neg", "pos", "unsup", "unsup"] * 10)
    picked = data.load(name, "train", data.Columns(classes=("pos", "neg")))
    assert picked.class_names == ("pos", "neg") and picked.count == sum(1 for _ in picked) < 20
    assert {picked.class_names[label] for _, label in picked} == {"neg", "pos"}
    unsup = sum(1 for i in range(40) if i % 4 > 1 and not files.held_out(i))  # the train split's unsup rows
    assert f"Left out {unsup} row(s) of {name} (train) whose label is not in --classes=pos,neg: 'unsup' ({unsup})" \
        in capsys.readouterr().out
    with pytest.raises(DatasetError, match="has no row labelled 'neutral'"):
        data.load(name, "train", data.Columns(classes=("pos", "neutral")))
    with pytest.raises(DatasetError, match="--classes picks the labels of your own files"):
        data.load("sst2", "train", data.Columns(classes=("0", "1")))


def test_aclimdb_tree_trains_on_the_classes_given_and_holds_out_validation(tmp_path, capsys):
    """The README's folder:aclImdb/{split} on aclImdb's layout: train/{neg,pos,unsup}, test/{neg,pos}, files beside
    the class folders, no validation folder."""
    write_tree(tmp_path, {"train/neg": 30, "train/pos": 30, "train/unsup": 20, "test/neg": 3, "test/pos": 3})
    (tmp_path / "train" / "urls_neg.txt").write_text("not a class")
    name, columns = f"folder:{tmp_path}/{{split}}", data.Columns(classes=("neg", "pos"))
    data.check_split(name, "validation")
    train = data.load(name, "train", columns)
    validation = data.load(name, "validation", columns, class_names=train.class_names)
    test = data.load(name, "test", columns, class_names=train.class_names)
    held = sum(files.held_out(i) for i in range(60))
    assert train.class_names == ("neg", "pos") and (train.count, validation.count, test.count) == (60 - held, held, 6)
    assert not {text for text, _ in train} & {text for text, _ in validation}
    out = capsys.readouterr().out
    assert "Left out the class folder(s) unsup" in out and "No validation files match" in out


def test_a_training_class_the_evaluated_split_lacks_is_said_with_the_classes_to_give(tmp_path, capsys):
    write_tree(tmp_path, {"train/neg": 3, "train/pos": 3, "train/unsup": 3, "test/neg": 2, "test/pos": 2})
    name = f"folder:{tmp_path}/{{split}}"
    train = data.load(name, "train")
    assert train.class_names == ("neg", "pos", "unsup")
    capsys.readouterr()
    assert data.load(name, "test", class_names=train.class_names).count == 4
    assert ("has no row of training's class(es) 'unsup': its figures cover ['neg', 'pos'] only. To train on those "
            "alone, pass --classes=neg,pos.") in capsys.readouterr().out


def test_an_empty_class_folder_is_refused_with_what_to_do(tmp_path):
    write_tree(tmp_path, {"train/neg": 3, "train/pos": 3})
    os.makedirs(tmp_path / "train" / "neutral")
    with pytest.raises(DatasetError, match=r"class folder .*neutral holds no texts: remove it, or name the classes "
                                           "to use with --classes"):
        data.load(f"folder:{tmp_path}/{{split}}", "train")
    assert data.load(f"folder:{tmp_path}/{{split}}", "train", data.Columns(classes=("neg", "pos"))).count
    with pytest.raises(DatasetError, match=r"has no class folder 'mixed': its class folders are \['neg', 'neutral'"):
        data.load(f"folder:{tmp_path}/{{split}}", "train", data.Columns(classes=("neg", "mixed")))
