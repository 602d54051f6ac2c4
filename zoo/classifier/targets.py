"""The label rules (docs/data.md, and docs/tasks.md for the problem types): a single-label class name (`label_name`,
`class_order`, `check_label_forms`), a regression's number (`number`, at most MAX_LABEL) and a multi-label set
(`label_set`, split on data.label_separator), read from the user's files by zoo.classifier.data; `Targets` holds a
split's numbers or label sets. Training standardises a regression's targets with its labels' mean and standard
deviation (`Targets.stats`, recorded in config.json's derived part); the model answers in the labels' units."""

import collections
import dataclasses
import math
import re

import numpy as np

from zoo.classifier.config import MULTI_LABEL, REGRESSION
from zoo.data.datasets import DatasetError

# The largest label magnitude read: training and evaluation square the labels' errors and spread, and float32 holds
# squares up to 3.4e38 (|x| < 1.8e19); 1e15 leaves room for sums over many rows. docs/tasks.md says it.
MAX_LABEL = 1e15
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
SHOWN_SETS = 3  # the first rows' label sets said in the log


def number(value, column):
    """A regression label as a float, or (None, why the row is bad)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        parsed = float(value)
    elif isinstance(value, str) and NUMBER.fullmatch(value.strip()):
        parsed = float(value.strip())
    else:
        return None, f"no label in {column!r}" if value is None or value == "" else \
            f"label {value!r} is not a number (a regression's labels are finite numbers, written as 3, -0.25 or 1e3)"
    if not math.isfinite(parsed):
        return None, f"label {value!r} is not a finite number"
    if abs(parsed) > MAX_LABEL:
        return None, (f"label {value!r} is beyond +-{MAX_LABEL:g}, the largest magnitude a regression reads (its "
                      "squared errors must fit float32): rescale the labels (e.g. to thousands or millions)")
    return parsed, None


def label_name(value):
    """A label as its class name: a string stripped of surrounding whitespace, integers (JSON integers and
    strings of decimal digits) in decimal; None for anything else (a float, a list, null)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    name = str(value).strip()
    return str(int(name)) if re.fullmatch(r"-?[0-9]+", name) else name


def class_order(names):
    """The class names in a stable order: numeric for integers, else by string."""
    if all(re.fullmatch(r"-?[0-9]+", name) for name in names):
        return tuple(sorted(names, key=int))
    return tuple(sorted(names))


def label_set(value, column, separator):
    """A multi-label row's label names as a tuple (each once, as read), or (None, why the row is bad)."""
    if isinstance(value, str):
        names = [label_name(part) for part in value.split(separator)]
        if not value.strip():
            return None, f"no label in {column!r}"
        if not all(names):
            return None, f"an empty label in {value!r} (split on --label_separator={separator!r})"
    elif isinstance(value, list):
        names = [label_name(item) for item in value]
        if not value:
            return None, f"an empty label list in {column!r} (a row needs one label or more)"
        if not all(names):
            return None, (f"label list {value!r} holds an item that is not a label name (a non-empty string or an "
                          "integer)")
        inside = next((name for name in names if separator in name), None)
        if inside is not None:
            return None, (f"label {inside!r} holds --label_separator={separator!r}: as csv the row would read as "
                          "other labels. Pass another --label_separator, or rename the label")
    else:
        return None, f"no label in {column!r}" if value is None else \
            f"label {value!r} is neither a list nor a string of labels"
    return tuple(dict.fromkeys(names)), None


@dataclasses.dataclass(frozen=True)
class Targets:
    """A split's targets in row order: regression's numbers (rows,) float64, or multi-label's 0/1 matrix (rows,
    labels) uint8 over `names`; `unseen`: labels of the split that `names` lacks, with their row counts."""

    values: np.ndarray
    names: tuple = ()
    unseen: dict = dataclasses.field(default_factory=dict)

    @property
    def stats(self):
        """Regression's mean and standard deviation of the labels (population), what training standardises with."""
        return {"mean": float(self.values.mean()), "std": float(self.values.std())}


def collect(problem_type, labels, what, names=None, classes=None):
    """The Targets of a split's labels (numbers, or label sets, in row order). With `names` (a trained run's label
    set) or `classes` (--classes), those are the labels and others are left out of the rows' sets, said and
    counted; else the split's own, sorted."""
    if problem_type == REGRESSION:
        values = np.asarray(labels, np.float64)
        if names is None and values.std() == 0:
            raise DatasetError(f"{what}: every label is {values[0]:g}; a regression needs labels that differ.")
        return Targets(values)
    counts = collections.Counter(name for row in labels for name in row)
    known = tuple(names) if names is not None else tuple(classes) if classes else class_order(counts)
    index = {name: i for i, name in enumerate(known)}
    values = np.zeros((len(labels), len(known)), np.uint8)
    for row, names_of_row in enumerate(labels):
        values[row, [index[name] for name in names_of_row if name in index]] = 1
    unseen = {name: count for name, count in counts.most_common() if name not in index}
    outside = "the model was not trained on" if names is not None else "--classes leaves out" if classes else None
    say_read(labels, known, unseen, what, outside)
    return Targets(values, known, unseen)


def say_read(labels, known, unseen, what, outside=None):
    """Says what was read: the label count, the first rows' sets (a separator that splits what the user did not
    mean shows here), a doubt when no training row holds two labels, and the labels left out, `outside` saying why
    (None: the split's own labels are the label set)."""
    shown = "; ".join(repr(list(row)) for row in labels[:SHOWN_SETS])
    many = sum(len(row) > 1 for row in labels)
    print(f"{what}: {len(labels)} rows, {len(known)} labels, {many} row(s) with more than one; the first rows' "
          f"label sets: {shown}.", flush=True)
    if outside is None and not many:
        print(f"{what}: no row holds more than one label: if they should, check --label_separator.", flush=True)
    if unseen:
        listed = ", ".join(f"{name!r} ({count})" for name, count in list(unseen.items())[:5])
        print(f"Warning: {what} has {len(unseen)} label(s) {outside}, left out of the rows' sets (an evaluation "
              f"counts them in metrics.json, unseen_labels): {listed}{' ...' if len(unseen) > 5 else ''}.", flush=True)


def check_problem_type(spec):
    """Regression and multi-label (the zoo.data.spec.DatasetSpec's columns.problem_type) read the user's csv:, tsv:
    and jsonl: files: a built-in dataset and folder: hold one class a text."""
    problem_type = spec.columns.problem_type
    if problem_type in (REGRESSION, MULTI_LABEL) and spec.form in (None, "folder"):
        raise DatasetError(f"--problem_type={problem_type} reads your own csv:, tsv: or jsonl: files; --dataset={spec} "
                           "has one class a text (single_label_classification).")


def check_label_forms(names, what):
    """Refuses two labels that are one number written two ways (`1` and `1.0`): the rule is that labels are
    compared as written, so they would be two classes."""
    by_value = collections.defaultdict(list)
    for name in names:
        try:
            value = float(name)
        except ValueError:
            continue
        if math.isfinite(value):
            by_value[value].append(name)
    same = next((sorted(group) for group in by_value.values() if len(group) > 1), None)
    if same:
        raise DatasetError(f"{what}: the labels {' and '.join(repr(name) for name in same)} are one number written "
                           "two ways, and labels are compared as written: write every label of a class the same "
                           "way.")
