"""The classifier's labelled texts: a built-in dataset (imdb, sst2, tfds:NAME) or the user's files (csv:, tsv:, jsonl:,
folder:), one split at a time, as (text, label id) pairs that can be read more than once (a file is read streaming;
`Examples` keeps only counts). `load` takes the run's zoo.data.spec.DatasetSpec (SentimentRunConfig.dataset_spec: the
files, their columns and label shape); zoo.data.files reads the rows. Token ids come from `token_rows`: tokenized once
into zoo.data.cache. Labels follow docs/data.md's rules (zoo.classifier.targets' label_name, class_order and
check_label_forms); the class names are `--classes` in its order, else the training split's labels in class_order."""

import collections
import dataclasses
import functools
import os

import numpy as np

from zoo.classifier import targets as label_shapes
from zoo.classifier.targets import class_order, label_name  # the label rules, shared with the other shapes
from zoo.classifier.config import REGRESSION, SINGLE_LABEL
from zoo.data import cache, datasets, files, spec as dataset_spec
from zoo.data.sources import Sources
from zoo.data.datasets import DatasetError
from zoo.data.spec import Columns  # the columns, label shape, classes and bad-row policy a spec reads

FORMS = ("csv", "tsv", "jsonl", "folder")
SHOWN_LABELS = 5
UNLABELLED = "unsup"  # aclImdb's train/unsup: 50,000 reviews without a label, beside its class folders


class Examples:
    """One split of labelled texts: iterate for (text, label id); `count`, `class_names`, `key` (the data's part
    of a cache key), `paths` (the files read, for a run's record) and `sources` (zoo.data.sources.Sources of the
    files, None for a built-in dataset)."""

    def __init__(self, read, count, class_names, key, paths=(), text_bytes=None, skipped=0, sources=None,
                 targets=None):
        self._read, self.count, self.class_names, self.key = read, count, tuple(class_names), key
        self.paths, self.text_bytes, self.skipped, self.sources = tuple(paths), text_bytes, skipped, sources
        self.targets = targets  # regression and multi-label (zoo.classifier.targets.Targets): ids index them

    def __iter__(self):
        return self._read()

    def texts(self):
        """Each row's text, or (text, text pair)."""
        return (text for text, _ in self)

    def strings(self):
        """Every text as a string, both of a pair: what a tokenizer or a vocabulary learns from."""
        for text in self.texts():
            yield from text if isinstance(text, tuple) else (text,)

    def tokenizer_sample(self, max_characters, seed):
        """A seeded sample of the texts with about `max_characters` in all, read in one pass."""
        return datasets.sample_share(self.strings(), self.text_bytes or 0, max_characters, seed)


def load(dataset, split, columns=None, class_names=None, max_examples=None, seed=0):
    """The `split` of `dataset`: a zoo.data.spec.DatasetSpec (a run's, read with its columns), or a dataset string
    read with `columns` (Columns(): text and label). With `class_names` (a trained model's), labels are numbered
    in that order and one the model does not know is refused; else the split's own labels are the classes. With
    `columns.classes`, only those labels (or class folders) are read, in that order.
    Every row is read once here, so a bad one is refused (file:line) before any work starts."""
    spec = dataset_spec.given(dataset, FORMS, columns or Columns())
    columns = spec.columns
    label_shapes.check_problem_type(spec)
    classes = _classes(columns.classes, spec)
    if columns.text_pair and spec.form in (None, "folder"):
        raise DatasetError(f"--text_pair_column={columns.text_pair} reads a second text from csv:, tsv: or jsonl: "
                           f"files; {spec} holds one text a row: leave it out, or give your pairs as such files.")
    if not spec.files:
        return _built_in(spec.name, split, class_names, max_examples, seed)
    dataset_spec.check_split(spec, split)
    dataset_spec.say_held_out(spec, split)
    what = f"--dataset={spec} ({split})"
    if classes is not None and class_names is not None and set(classes) != set(class_names):
        raise DatasetError(f"--classes={_joined(classes)} are not the classes the run trained on "
                           f"({_joined(class_names)}): a trained model answers with its own, and evaluation reads "
                           f"them all. Leave --classes out, or train a run with --classes={_joined(classes)}.")
    if spec.form == "folder" and split == "train" and class_names is None:
        _check_class_folders(spec, classes)
    if spec.form != "folder":
        _check_columns(spec, split, columns)
    if columns.problem_type != SINGLE_LABEL:
        return _load_targets(spec, split, class_names, classes, max_examples, seed)
    bad = files.BadRows(columns.bad_rows)
    counts, left_out, text_bytes = collections.Counter(), collections.Counter(), 0
    for text, label, _ in _rows(spec, split, bad, classes):
        if classes is not None and label not in classes:
            left_out[label] += 1
            continue
        counts[label] += 1
        text_bytes += text_size(text)
    bad.check(f"{spec} ({split})")
    _say_left_out(spec, split, classes, left_out)
    count = sum(counts.values())
    if count == 0:
        raise DatasetError(f"--dataset={spec} has no rows in its {split} split"
                           f"{f' with a label of --classes={_joined(classes)}' if classes else ''}.")
    label_shapes.check_label_forms(counts, what)
    known = tuple(class_names) if class_names is not None else classes or class_order(counts)
    unknown = [name for name in counts if name not in known]  # none in training's split: its labels are `known`
    if unknown:
        where = next(row[2] for row in _rows(spec, split, files.BadRows("skip"), classes)
                     if row[1] in unknown)
        raise DatasetError(f"{where}: label {unknown[0]!r} is not one of the classes training saw {list(known)}"
                           f"{f' ({len(unknown)} unknown labels in all)' if len(unknown) > 1 else ''}.")
    _check_classes(known, counts, what, training=class_names is None)
    ids = {name: i for i, name in enumerate(known)}
    keep = None
    if max_examples is not None and max_examples < count:
        keep = set(np.sort(np.random.default_rng(seed).permutation(count)[:max_examples]).tolist())

    def read():
        index = 0
        for text, label, _ in _rows(spec, split, files.BadRows("skip"), classes):
            if label not in ids:  # left out by --classes
                continue
            if keep is None or index in keep:
                yield text, ids[label]
            index += 1

    count = len(keep) if keep is not None else count
    return _examples(spec, split, read, count, known, text_bytes, bad, max_examples, seed, classes)


def _check_columns(spec, split, columns):
    """A file form's columns: the text, label and second text each its own, each found in the split's files."""
    if columns.text == columns.label:
        raise DatasetError(f"--text_column and --label_column both name {columns.text!r}: the model would read "
                           "its label. Name the text's column and the label's.")
    if columns.text_pair in (columns.text, columns.label):
        which = "--text_column" if columns.text_pair == columns.text else "--label_column"
        raise DatasetError(f"--text_pair_column and {which} both name {columns.text_pair!r}: a pair's second "
                           "text must come from a column of its own. Name the second text's column.")
    files.check_columns(spec, split, (columns.text, columns.label, columns.text_pair))


def _load_targets(spec, split, names, classes, max_examples, seed):
    """A regression or multi-label split (zoo.classifier.targets): its rows iterate as (text, row number), the
    number indexing `Examples.targets`, which holds the kept rows' labels in order."""
    columns = spec.columns
    bad = files.BadRows(columns.bad_rows)
    read_label = label_shapes.number if columns.problem_type == REGRESSION else \
        functools.partial(label_shapes.label_set, separator=columns.label_separator)
    labels, text_bytes = [], 0
    for text, label, _ in _rows(spec, split, bad, read_label=read_label):
        labels.append(label)
        text_bytes += text_size(text)
    bad.check(f"{spec} ({split})")
    if not labels:
        raise DatasetError(f"--dataset={spec} has no rows in its {split} split.")
    keep = None
    if max_examples is not None and max_examples < len(labels):
        keep = np.sort(np.random.default_rng(seed).permutation(len(labels))[:max_examples])
        labels = [labels[i] for i in keep]
    targets = label_shapes.collect(columns.problem_type, labels, f"--dataset={spec} ({split})", names, classes)
    kept = None if keep is None else set(keep.tolist())

    def read():
        rows = _rows(spec, split, files.BadRows("skip"), read_label=read_label)
        kept_rows = (text for index, (text, _, _) in enumerate(rows) if kept is None or index in kept)
        return ((text, index) for index, text in enumerate(kept_rows))

    return _examples(spec, split, read, len(labels), targets.names, text_bytes, bad, max_examples, seed,
                     targets=targets)


def _examples(spec, split, read, count, names, text_bytes, bad, max_examples, seed, classes=None, targets=None):
    """The Examples of a split of the user's files, keyed by the files' contents and how they were read."""
    sources = Sources(lambda: _all_files(spec, dataset_spec.paths(spec, split), classes))
    key = {"files": sources.digest, "spec": str(spec), "split": split, "columns": dataclasses.asdict(spec.columns),
           "max_examples": max_examples, "seed": seed, "classes": names, "held_out": dataset_spec.holds_out(spec)}
    skipped = bad.count if spec.columns.bad_rows == "skip" else 0
    return Examples(read, count, names, key, dataset_spec.paths(spec, split), text_bytes, skipped, sources, targets)


def text_size(text):
    """The characters of a row's text, both of a pair."""
    return sum(map(len, text)) if isinstance(text, tuple) else len(text)


def _joined(names):
    return ",".join(names)


def _classes(given, spec):
    """--classes as a tuple of class names (labels by the label rule; folder names as they are), or None."""
    if not given:
        return None
    if not spec.files:
        raise DatasetError(f"--classes picks the labels of your own files (csv:, tsv:, jsonl:, folder:); {spec} "
                           "has its own classes: leave --classes out.")
    classes = tuple(given) if spec.form == "folder" else tuple(label_name(c) for c in given)
    repeated = sorted({c for c in classes if classes.count(c) > 1})
    if repeated or not all(classes) or len(classes) < 2:
        raise DatasetError(f"--classes={_joined(given)} must name two or more different classes, each once.")
    return classes


def _check_class_folders(spec, classes):
    """Training on folder:: a class folder named unsup (aclImdb's unlabelled reviews) is refused unless --classes
    names the classes; a class folder that an evaluation split (validation or test folders) lacks is said now,
    with the --classes that leaves it out, not only when that split is evaluated."""
    trained = classes or sorted({name for path in dataset_spec.paths(spec, "train")
                                 for name in files.class_folders(path)})
    if classes is None and UNLABELLED in trained:
        labelled = [name for name in trained if name != UNLABELLED]
        raise DatasetError(f"--dataset={spec}: the class folder {UNLABELLED!r} holds unlabelled texts (aclImdb's "
                           f"train/unsup), not a class. Pass --classes={_joined(labelled)} to leave it out, or "
                           f"--classes={_joined(trained)} to train it as a class.")
    for split in ("validation", "test"):
        if not spec.has_splits or (split == "validation" and dataset_spec.holds_out(spec)):
            continue
        try:
            found = {name for path in dataset_spec.paths(spec, split) for name in files.class_folders(path)}
        except DatasetError:  # the pattern has no such split
            continue
        absent, present = [n for n in trained if n not in found], [n for n in trained if n in found]
        if absent:
            hint = f" To train on the others alone, pass --classes={_joined(present)}." if len(present) > 1 else ""
            print(f"--dataset={spec}: the {split} split has no class folder {', '.join(map(repr, absent))}, so its "
                  f"figures will not cover {'it' if len(absent) == 1 else 'them'}.{hint}", flush=True)


def _check_classes(known, counts, what, training):
    """Training needs two classes or more, each with rows; an evaluated split without a row of some of training's
    classes is said: its figures do not cover them."""
    if training and len(known) < 2:
        raise DatasetError(f"{what}: every row has the label {known[0]!r}; a classifier needs two or more classes.")
    absent = [name for name in known if not counts[name]]
    if absent and training:
        raise DatasetError(f"{what} has no row labelled {', '.join(repr(name) for name in absent)}: "
                           f"--classes names only labels that training has ({sorted(counts)}).")
    if absent:
        present = [name for name in known if counts[name]]
        hint = f" To train on those alone, pass --classes={_joined(present)}." if len(present) > 1 else ""
        print(f"{what} has no row of training's class(es) {', '.join(repr(name) for name in absent)}: its "
              f"figures cover {present} only.{hint}", flush=True)


def _say_left_out(spec, split, classes, left_out):
    """Says which labels --classes left out of the split (class folders not read, or rows counted)."""
    if spec.form == "folder" and classes is not None:
        for path in dataset_spec.paths(spec, split):
            others = [name for name in files.class_folders(path) if name not in classes]
            if others:
                print(f"Left out the class folder(s) {', '.join(others)} of {path}: not in --classes="
                      f"{_joined(classes)}.", flush=True)
    elif left_out:
        labels = ", ".join(f"{name!r} ({number})" for name, number in left_out.most_common(SHOWN_LABELS))
        print(f"Left out {sum(left_out.values())} row(s) of {spec} ({split}) whose label is not in --classes="
              f"{_joined(classes)}: {labels}{' ...' if len(left_out) > SHOWN_LABELS else ''}.", flush=True)


def _all_files(spec, paths, classes=None):
    """The files whose contents a split's rows come from (the class folders' files for folder:)."""
    if spec.form != "folder":
        return paths
    return [file for path in paths for label in files.class_folders(path, classes)
            for file in files.class_files(os.path.join(path, label))]


def class_label(label, column):
    """A single-label row's class name (`label_name`), or (None, why the row is bad)."""
    name = label_name(label)
    if name:
        return name, None
    return None, (f"no label in {column!r}" if name == "" or label is None else
                  f"label {label!r} is neither a string nor an integer")


def _rows(spec, split, bad, classes=None, read_label=class_label):
    """(text, label, where) of every good row, its label as `read_label` reads it (a class name, or
    zoo.classifier.targets' number or label set); bad ones go to `bad`. Folders not in `classes` are not read."""
    columns = spec.columns
    text_column, label_column = ("text", "label") if spec.form == "folder" else (columns.text, columns.label)
    for row in files.rows(spec, split, bad, classes=classes if spec.form == "folder" else None):
        text, label = files.text_of(row, text_column, bad), row.values.get(label_column)
        if text is None:
            continue
        if not text.strip():
            bad.add(row.where, "an empty text")
            continue
        if columns.text_pair:  # csv:, tsv:, jsonl: (`load` refuses pairs of folder:)
            pair = row.values.get(columns.text_pair)
            if not isinstance(pair, str) or not pair.strip():
                bad.add(row.where, f"no second text in {columns.text_pair!r}" if pair is None else
                        f"{columns.text_pair!r} is not text" if not isinstance(pair, str) else
                        f"an empty second text in {columns.text_pair!r}")
                continue
            text = (text, pair)
        name, why = read_label(label, label_column)
        if why:
            bad.add(row.where, why)
            continue
        yield text, name, row.where


def _built_in(name, split, class_names, max_examples, seed):
    data = datasets.subsample(datasets.load_classification(name, split), max_examples, seed)
    if class_names is not None and tuple(data.class_names) != tuple(class_names):
        raise DatasetError(f"{name} has classes {data.class_names}; the model knows {list(class_names)}.")
    key = {"dataset": name, "split": split, "max_examples": max_examples, "seed": seed}
    pairs = lambda: zip(data.texts, data.labels.tolist())  # noqa: E731
    return Examples(pairs, len(data.texts), data.class_names, key, text_bytes=None)


def check_split(spec, split):
    """Refuses early (before any training) a split that the dataset (a zoo.data.spec.DatasetSpec) does not have."""
    if spec.files:
        dataset_spec.check_split(spec, split)
    else:
        datasets.check_split(spec.name, split)


def token_rows(examples, preprocessor, tokenizer_key):
    """The examples' framed token ids (`preprocessor.framed`) and labels, from the cache (a file that changes
    while it is tokenized is refused)."""
    key = {"data": examples.key, "tokenizer": tokenizer_key, "max_length": preprocessor.max_length,
           "framing": [preprocessor.start_id, preprocessor.end_id]}
    return cache.token_rows(key, iter(examples), preprocessor.framed, "tokenizing", examples.text_bytes,
                            sources=examples.sources)
