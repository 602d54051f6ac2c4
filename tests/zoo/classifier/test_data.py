"""zoo.classifier.data: no silent data. One label rule (docs/data.md), the text and label columns apart,
--classes picking labels or class folders, and a class the evaluated split lacks said in the log."""

import json
import os

import pytest

from zoo.classifier import data
from zoo.data import spec as dataset_spec
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
    unsup = sum(1 for i in range(40) if i % 4 > 1 and not dataset_spec.held_out(i))  # the train split's unsup rows
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
    data.check_split(dataset_spec.parse(name, data.FORMS), "validation")
    train = data.load(name, "train", columns)
    validation = data.load(name, "validation", columns, class_names=train.class_names)
    test = data.load(name, "test", columns, class_names=train.class_names)
    held = sum(dataset_spec.held_out(i) for i in range(60))
    assert train.class_names == ("neg", "pos") and (train.count, validation.count, test.count) == (60 - held, held, 6)
    assert not {text for text, _ in train} & {text for text, _ in validation}
    out = capsys.readouterr().out
    assert "Left out the class folder(s) unsup" in out and "No validation files match" in out


def test_a_training_class_the_evaluated_split_lacks_is_said_with_the_classes_to_give(tmp_path, capsys):
    """Said as training reads its folders (test has no neutral/), and again when test is evaluated."""
    write_tree(tmp_path, {"train/neg": 3, "train/pos": 3, "train/neutral": 3, "test/neg": 2, "test/pos": 2})
    name = f"folder:{tmp_path}/{{split}}"
    train = data.load(name, "train")
    assert train.class_names == ("neg", "neutral", "pos")
    assert (f"--dataset={name}: the test split has no class folder 'neutral', so its figures will not cover it. To "
            "train on the others alone, pass --classes=neg,pos.") in capsys.readouterr().out
    assert data.load(name, "test", class_names=train.class_names).count == 4
    assert ("has no row of training's class(es) 'neutral': its figures cover ['neg', 'pos'] only. To train on those "
            "alone, pass --classes=neg,pos.") in capsys.readouterr().out


def test_an_unsup_folder_is_refused_at_training_unless_classes_name_the_classes(tmp_path, capsys):
    """aclImdb's train/unsup holds 50,000 reviews without a label: trained as a third class unless --classes."""
    write_tree(tmp_path, {"train/neg": 3, "train/pos": 3, "train/unsup": 3, "test/neg": 2, "test/pos": 2})
    name = f"folder:{tmp_path}/{{split}}"
    with pytest.raises(DatasetError, match=r"the class folder 'unsup' holds unlabelled texts \(aclImdb's "
                                           r"train/unsup\), not a class. Pass --classes=neg,pos to leave it out, "
                                           "or --classes=neg,pos,unsup to train it as a class."):
        data.load(name, "train")
    assert data.load(name, "train", data.Columns(classes=("neg", "pos"))).class_names == ("neg", "pos")
    asked = data.load(name, "train", data.Columns(classes=("neg", "pos", "unsup")))
    assert asked.class_names == ("neg", "pos", "unsup") and "no class folder 'unsup'" in capsys.readouterr().out


def test_evaluation_refuses_classes_other_than_the_runs(tmp_path):
    """--mode=eval --classes=neg,pos on a run of neg, pos and unsup was dropped: the report still scored unsup."""
    write_tree(tmp_path, {"test/neg": 2, "test/pos": 2, "test/unsup": 2})
    name = f"folder:{tmp_path}/{{split}}"
    with pytest.raises(DatasetError, match=r"--classes=neg,pos are not the classes the run trained on "
                                           r"\(neg,pos,unsup\)"):
        data.load(name, "test", data.Columns(classes=("neg", "pos")), class_names=("neg", "pos", "unsup"))
    same = data.load(name, "test", data.Columns(classes=("pos", "neg")), class_names=("neg", "pos"))
    assert same.count == 4 and same.class_names == ("neg", "pos")  # the run's classes, its unsup folder left out


def test_the_readmes_folder_example_trains_on_the_real_aclimdb_tree(tmp_path):
    """README's `--dataset=folder:aclImdb/{split}` line on aclImdb as its tarballs unpack (a few reviews of each
    folder, the url lists beside them, train/unsup from the unlabelled tarball): two classes, unsup left out."""
    import re
    import shlex
    import tarfile

    imdb = os.path.join(os.environ["ZOO_DATA_DIR"], "imdb")
    tarballs = [os.path.join(imdb, f"aclImdb_v1_{part}.tar.gz") for part in ("labeled", "unsup")]
    if not all(os.path.exists(path) for path in tarballs):
        pytest.skip("no aclImdb tarballs in ZOO_DATA_DIR")
    for path in tarballs:
        with tarfile.open(path, "r|gz") as tar:
            taken = {}
            for member in tar:
                folder = os.path.dirname(member.name)
                if member.isfile() and (taken.setdefault(folder, 0) < 4 or "urls_" in member.name):
                    taken[folder] += 1
                    tar.extract(member, tmp_path, filter="data")
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")).read()
    line = next(line for line in readme.splitlines() if "--dataset=folder:aclImdb/{split}" in line)
    flags = dict(re.match(r"--(\w+)=(.*)", arg).groups() for arg in shlex.split(line) if arg.startswith("--"))
    name = flags["dataset"].replace("folder:", f"folder:{tmp_path}/", 1)
    with pytest.raises(DatasetError, match="'unsup' holds unlabelled texts"):
        data.load(name, "train")
    columns = data.Columns(classes=tuple(flags["classes"].split(",")))
    train = data.load(name, "train", columns)
    held_out = data.load(name, "validation", columns, class_names=train.class_names)
    assert train.class_names == ("neg", "pos") and train.count + held_out.count == 8  # 4 reviews a class
    assert data.load(name, "test", columns, class_names=train.class_names).count == 8


def test_an_empty_class_folder_is_refused_with_what_to_do(tmp_path):
    write_tree(tmp_path, {"train/neg": 3, "train/pos": 3})
    os.makedirs(tmp_path / "train" / "neutral")
    with pytest.raises(DatasetError, match=r"class folder .*neutral holds no texts: remove it, or name the classes "
                                           "to use with --classes"):
        data.load(f"folder:{tmp_path}/{{split}}", "train")
    assert data.load(f"folder:{tmp_path}/{{split}}", "train", data.Columns(classes=("neg", "pos"))).count
    with pytest.raises(DatasetError, match=r"has no class folder 'mixed': its class folders are \['neg', 'neutral'"):
        data.load(f"folder:{tmp_path}/{{split}}", "train", data.Columns(classes=("neg", "mixed")))
