"""The dataset a run reads, parsed once: `--dataset` (the config's `data.dataset`, pretraining's each `data.corpus`) as
a `DatasetSpec`, and where each of its splits' files are. The run's config parses it when it is built, so a form the
recipe does not read is refused there; each family's reader (zoo.<family>.data) takes the spec and reads what it needs
of it, and zoo.data.files reads its rows.

A spec names a built-in or tfds: dataset, or the user's files as `FORM:PATTERN` (csv:, tsv:, jsonl:, folder:, text:). A
PATTERN may hold globs (`*`, `**`), `.gz` files and `{split}` (train, validation, test); translation's `text:` form also
holds `{lang}`. Without `{split}`, or with it but no validation files, validation is a seeded 1 in HELD_OUT_EVERY of the
training rows, left out of training, as IMDB's held-out share (`in_split`).
"""

import dataclasses
import glob
import os
import zlib

from zoo.data.datasets import HELD_OUT_EVERY, SPLITS, DatasetError

FORMS = ("csv", "tsv", "jsonl", "folder", "text")
HELD_OUT_SEED = 0  # the held-out rows are a function of their position alone: eval finds the same ones


@dataclasses.dataclass(frozen=True)
class Columns:
    """Which column (csv:, tsv:) or key (jsonl:) holds each part of a row, and how its label reads: the
    classifier's text, label and second text (text pairs), its label shape (`problem_type`, zoo.classifier.model's
    names, and the multi-label `label_separator`), the labels (or class folders) to keep (`classes`, in that order,
    rows of other labels left out) and what to do with bad rows. The language model and pretraining read `text`."""

    text: str = "text"
    label: str = "label"
    bad_rows: str = "error"
    classes: tuple | None = None
    problem_type: str = "single_label_classification"  # regression, multi_label_classification: zoo.classifier.targets
    label_separator: str = "|"  # multi_label_classification: what splits a csv:, tsv: (or jsonl: string) label
    text_pair: str | None = None  # a second text's column (text pairs: rows are (text, text pair)), or None


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """A dataset string, parsed: a built-in or tfds: dataset (`name` alone), or the user's files (`form` and
    `pattern`), with the columns to read of them."""

    name: str  # as given: imdb, tfds:glue/sst2, csv:tickets/{split}.csv
    form: str | None = None  # csv, tsv, jsonl, folder, text: the user's files; None: a built-in or tfds: dataset
    pattern: str | None = None  # the files' path or glob, `{split}` (and translation's `{lang}`) in it
    columns: Columns = Columns()

    @property
    def files(self):
        """Whether the spec names the user's files."""
        return self.form is not None

    @property
    def has_splits(self):
        return self.files and "{split}" in self.pattern

    def __str__(self):
        return self.name


def parse(name, forms, columns=Columns()):
    """The DatasetSpec of dataset `name` (None for no name): the user's files when it reads `FORM:PATTERN`, else
    a built-in or tfds: name. A form this recipe does not read (`forms`) is refused, naming those it does, and so is
    a form without a pattern."""
    if not name:
        return None
    form, colon, pattern = name.partition(":")
    if not colon or form not in FORMS:
        return DatasetSpec(name, columns=columns)
    if form not in forms:
        raise DatasetError(f"--dataset={name}: this recipe reads {', '.join(f + ':' for f in forms)} files, "
                           f"not {form}:.")
    if not pattern:
        raise DatasetError(f"--dataset={name} names no files: give a path or glob after '{form}:'.")
    return DatasetSpec(name, form, pattern, columns)


def given(dataset, forms, columns=Columns()):
    """`dataset` as a DatasetSpec: a spec as it is (a run's config parsed it, with its columns), a dataset string
    parsed with `columns` (a caller from Python outside a run: a benchmark, a test)."""
    return dataset if isinstance(dataset, DatasetSpec) else parse(dataset, forms, columns)


def _matches(spec, split, **fields):
    """The files (or, for folder:, the folders) that `split`'s pattern matches, sorted, and the pattern."""
    pattern = spec.pattern.replace("{split}", split) if spec.has_splits else spec.pattern
    for name, value in fields.items():
        pattern = pattern.replace("{" + name + "}", value)
    pattern = os.path.expanduser(pattern)
    wanted = os.path.isdir if spec.form == "folder" else os.path.isfile
    return sorted(p for p in glob.glob(pattern, recursive=True) if wanted(p)), pattern


def holds_out(spec, **fields):
    """Whether validation is a held-out share of the training rows: without {split}, or with {split} and no
    validation files (aclImdb's train and test folders)."""
    return not spec.has_splits or not _matches(spec, "validation", **fields)[0]


def paths(spec, split, **fields):
    """The files (or, for folder:, the folders) of `split`, sorted (train's for a held-out validation); none is
    an error naming the pattern."""
    if split == "validation" and holds_out(spec, **fields):
        split = "train"
    found, pattern = _matches(spec, split, **fields)
    if not found:
        kind = "folder" if spec.form == "folder" else "file"
        raise DatasetError(f"{pattern} matches no {kind} (--dataset={spec}, split {split!r}): check the path, "
                           "or the {split} field's files (train, validation, test).")
    return found


def check_split(spec, split, **fields):
    """A split the files do not have is refused: a test split needs {split} in the pattern."""
    if split not in SPLITS:
        raise DatasetError(f"split={split!r} is not one of {SPLITS}.")
    if not spec.has_splits and split == "test":
        raise DatasetError(f"--dataset={spec} has no test split: without {{split}} in its pattern every file is "
                           f"training data and validation is a held-out 1 in {HELD_OUT_EVERY} of its rows. Use "
                           "--eval_split=validation, or name the files with {split} (train, validation, test).")
    if spec.has_splits:
        paths(spec, split, **fields)


def default_split(spec):
    """The split evaluated when none is asked for: test, or the held-out share (validation) of files without
    {split}, which have no test split."""
    return "validation" if spec is not None and spec.files and not spec.has_splits else "test"


def say_held_out(spec, split, **fields):
    """Says in the log that validation is train's held-out share when {split} finds no validation files."""
    if spec.has_splits and split in ("train", "validation") and holds_out(spec, **fields):
        print(f"No validation files match {_matches(spec, 'validation', **fields)[1]}: validation is a held-out "
              f"1 in {HELD_OUT_EVERY} of the train split's rows (seeded), left out of training.", flush=True)


def held_out(index):
    """Whether row `index` (counted over all files, in order) is in the validation share."""
    return zlib.crc32(f"{HELD_OUT_SEED}:{index}".encode()) % HELD_OUT_EVERY == 0


def in_split(spec, split, **fields):
    """A predicate on a row's index: which rows of `split`'s files belong to it."""
    if split == "test" or not holds_out(spec, **fields):
        return lambda index: True
    return held_out if split == "validation" else (lambda index: not held_out(index))
