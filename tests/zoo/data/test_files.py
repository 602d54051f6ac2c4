"""zoo.data.files and zoo.classifier.data: the user's csv, tsv, jsonl and folder files, read as the
libraries read them (RFC 4180, BOM, CRLF, .gz, globs, {split}), with bad rows named by file:line."""

import csv
import gzip
import io
import json
import os

import pytest

from zoo.classifier import data as classifier_data
from zoo.data import files, spec as dataset_spec
from zoo.data.datasets import DatasetError

COLUMNS = classifier_data.Columns("body", "team")


def write_csv(path, rows, header=("id", "body", "team"), bom=True, newline="\r\n"):
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator=newline)
    writer.writerow(header)
    writer.writerows(rows)
    data = (("\ufeff" if bom else "") + text.getvalue()).encode("utf-8")
    if path.endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)


def pairs(name, split="train", columns=COLUMNS, **kwargs):
    data = classifier_data.load(name, split, columns, **kwargs)
    return [(text, data.class_names[label]) for text, label in data]


def test_csv_quirks_read_as_written(tmp_path):
    """Quoted commas, doubled quotes, a newline inside a field, a BOM, CRLF, emoji and CJK."""
    rows = [(1, 'He said "hi", then left', "a"), (2, "two\r\nlines 😀", "b"), (3, "中文 text", "a")]
    write_csv(str(tmp_path / "t.csv"), rows)
    expected = [(text, label) for index, (_, text, label) in enumerate(rows) if not dataset_spec.held_out(index)]
    assert pairs(f"csv:{tmp_path}/t.csv", "train") == expected


def test_glob_of_gz_shards_in_order(tmp_path):
    expected = []
    for shard in range(3):
        rows = [(i, f"text {shard} {i}", "xy"[i % 2]) for i in range(4)]
        write_csv(str(tmp_path / f"part-{shard}.csv.gz"), rows, bom=shard == 1, newline="\n")
        expected += [(text, label) for _, text, label in rows]
    data = classifier_data.load(f"csv:{tmp_path}/part-*.csv.gz", "train", COLUMNS)
    kept = [pair for index, pair in enumerate(expected) if not dataset_spec.held_out(index)]
    assert [(t, data.class_names[label]) for t, label in data] == kept
    held = classifier_data.load(f"csv:{tmp_path}/part-*.csv.gz", "validation", COLUMNS, class_names=data.class_names)
    assert held.count == len(expected) - len(kept) > 0


def test_splits_and_no_test_split(tmp_path):
    for split in ("train", "validation"):
        write_csv(str(tmp_path / f"{split}.csv"), [(0, f"{split} one", "a"), (1, f"{split} two", "b")])
    name = f"csv:{tmp_path}/{{split}}.csv"
    assert [t for t, _ in pairs(name, "validation")] == ["validation one", "validation two"]
    with pytest.raises(DatasetError, match="test.csv matches no file"):
        classifier_data.check_split(dataset_spec.parse(name, classifier_data.FORMS), "test")
    with pytest.raises(DatasetError, match="has no test split"):
        classifier_data.check_split(dataset_spec.parse(f"csv:{tmp_path}/train.csv", classifier_data.FORMS), "test")


def test_labels_any_strings_or_integers(tmp_path):
    labels = ["10", "2", "2", "10", "3"] * 6
    write_csv(str(tmp_path / "t.csv"), [(i, f"text {i}", label) for i, label in enumerate(labels)])
    data = classifier_data.load(f"csv:{tmp_path}/t.csv", "train", COLUMNS)
    assert data.class_names == ("2", "3", "10")  # integers in numeric order
    path = tmp_path / "r.jsonl"
    lines = [json.dumps({"content": f"t{i}", "y": y}) + "\n" for i, y in enumerate(["pos", "neg", 1] * 8)]
    path.write_text("".join(lines))
    data = classifier_data.load(f"jsonl:{path}", "train", classifier_data.Columns("content", "y"))
    assert data.class_names == ("1", "neg", "pos")


def test_unknown_validation_label_named_with_its_line(tmp_path):
    write_csv(str(tmp_path / "train.csv"), [(0, "one", "a"), (1, "two", "b")])
    write_csv(str(tmp_path / "validation.csv"), [(0, "one", "a"), (1, "two", "c")])
    with pytest.raises(DatasetError, match=r"validation.csv:3: label 'c' is not one of the classes"):
        classifier_data.load(f"csv:{tmp_path}/{{split}}.csv", "validation", COLUMNS, class_names=("a", "b"))


def test_single_class_refused(tmp_path):
    write_csv(str(tmp_path / "t.csv"), [(i, f"text {i}", "a") for i in range(30)])
    with pytest.raises(DatasetError, match="two or more classes"):
        classifier_data.load(f"csv:{tmp_path}/t.csv", "train", COLUMNS)


def test_bad_rows_named_then_skipped(tmp_path):
    path = tmp_path / "t.csv"
    rows = [(i, f"text {i}", "ab"[i % 2]) for i in range(40)]
    rows[3] = (3, "   ", "a")  # an empty text: line 5
    write_csv(str(path), rows, newline="\n")
    with open(path, "a") as f:
        f.write("40,only two fields\n")  # line 42
    with pytest.raises(DatasetError, match=r"2 bad row\(s\).*t.csv:5: an empty text.*t.csv:42: 2 fields"):
        classifier_data.load(f"csv:{path}", "train", COLUMNS)
    skipping = classifier_data.Columns("body", "team", bad_rows="skip")
    data = classifier_data.load(f"csv:{path}", "train", skipping)
    assert data.skipped == 2 and "   " not in [t for t, _ in data]


def test_missing_column_names_the_columns(tmp_path):
    write_csv(str(tmp_path / "t.csv"), [(0, "x", "a")])
    with pytest.raises(DatasetError, match=r"no column 'text'.*\['id', 'body', 'team'\].*--text_column"):
        classifier_data.load(f"csv:{tmp_path}/t.csv", "train", classifier_data.Columns("text", "team"))


def test_invalid_utf8_named_with_its_offset(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes(b"sentence\tlabel\ngood\t1\nbad \xe9t\xe9\t0\n")
    with pytest.raises(DatasetError, match=r"t.tsv is not UTF-8 \(an invalid byte at offset 26\)"):
        classifier_data.load(f"tsv:{path}", "train", classifier_data.Columns("sentence", "label"))


def test_pattern_without_files_and_wrong_form(tmp_path):
    with pytest.raises(DatasetError, match="matches no file"):
        classifier_data.load(f"csv:{tmp_path}/nothing*.csv", "train", COLUMNS)
    with pytest.raises(DatasetError, match="reads csv:, tsv:, jsonl:, folder: files, not text:"):
        classifier_data.load(f"text:{tmp_path}/x.txt", "train", COLUMNS)


def test_tsv_keeps_bare_quotes(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text('sentence\tlabel\nit \'s a "great" film\t1\nawful\t0\n' * 3)
    data = classifier_data.load(f"tsv:{path}", "train", classifier_data.Columns("sentence", "label"))
    assert 'it \'s a "great" film' in [t for t, _ in data]


def test_folder_one_subfolder_per_class(tmp_path):
    for split in ("train", "test"):
        for label in ("neg", "pos"):
            os.makedirs(tmp_path / split / label)
            for i in range(3):
                (tmp_path / split / label / f"{i}.txt").write_text(f"{label} review {i}\nline two")
    data = classifier_data.load(f"folder:{tmp_path}/{{split}}", "test", class_names=("neg", "pos"))
    got = [(t, data.class_names[label]) for t, label in data]
    assert got[0] == ("neg review 0\nline two", "neg") and len(got) == 6


@pytest.mark.parametrize("form, header", [("csv", "text,text,label"), ("tsv", "text\ttext\tlabel")])
def test_a_header_naming_a_column_twice_is_refused_naming_it(tmp_path, form, header):
    separator = "," if form == "csv" else "\t"
    path = tmp_path / f"t.{form}"
    path.write_text(header + "\n" + "".join(separator.join(["x", f"t{i}", "ab"[i % 2]]) + "\n" for i in range(8)))
    with pytest.raises(DatasetError, match=r"t\.%s: its header names 'text' more than once" % form):
        classifier_data.load(f"{form}:{path}", "train", classifier_data.Columns())
    spec = dataset_spec.parse(f"{form}:{path}", dataset_spec.FORMS)
    with pytest.raises(DatasetError, match="'text' more than once"):
        list(files.rows(spec, "train", files.BadRows()))


@pytest.mark.parametrize("form, content", [("csv", b""), ("tsv", b"\n\n"), ("jsonl", b"\n  \n"), ("csv.gz", None)])
def test_an_empty_file_is_refused_as_empty_not_as_missing_a_column(tmp_path, form, content):
    path = tmp_path / f"t.{form}"
    path.write_bytes(gzip.compress(b"") if content is None else content)
    with pytest.raises(DatasetError, match=r"t\.%s is empty: it holds no rows" % form.replace(".", r"\.")) as raised:
        classifier_data.load(f"{form.split('.')[0]}:{path}", "train", COLUMNS)
    assert "column" not in str(raised.value)


def test_a_blank_header_line_above_rows_is_named(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("\nid,body,team\n0,x,a\n")
    with pytest.raises(DatasetError, match=r"t\.csv: its first line, the header, is blank"):
        classifier_data.load(f"csv:{path}", "train", COLUMNS)


def rows_of(form, count, text="body"):
    texts = [f"text {i}" for i in range(count)]
    if form == "jsonl":
        return texts, "".join(json.dumps({text: t, "team": "ab"[i % 2]}) + "\n" for i, t in enumerate(texts))
    separator = "," if form == "csv" else "\t"
    return texts, "".join(separator.join(row) + "\n" for row in [("id", text, "team"), *(
        (str(i), t, "ab"[i % 2]) for i, t in enumerate(texts))])


@pytest.mark.parametrize("form", ["csv", "tsv", "jsonl"])
def test_an_empty_file_among_full_ones_is_skipped_as_the_reader_skips_it(tmp_path, form):
    texts, content = rows_of(form, 8)
    (tmp_path / f"a.{form}").write_text("")  # first in sorted order: the one the columns used to be read from
    (tmp_path / f"b.{form}").write_text(content)
    data = classifier_data.load(f"{form}:{tmp_path}/*.{form}", "train", COLUMNS)
    got = [text for text, _ in data]
    assert got and set(got) <= set(texts)
    (tmp_path / f"b.{form}").write_text(rows_of(form, 8, text="review")[1])
    with pytest.raises(DatasetError, match=r"b\.%s has no column 'body': its columns are \[.*'review'" % form):
        classifier_data.load(f"{form}:{tmp_path}/*.{form}", "train", COLUMNS)
    (tmp_path / f"b.{form}").write_text("")
    empty = r"all 2 of its files are empty \(.*a\.%s, \.\.\.\): they hold no rows" % form
    with pytest.raises(DatasetError, match=empty):
        classifier_data.load(f"{form}:{tmp_path}/*.{form}", "train", COLUMNS)
