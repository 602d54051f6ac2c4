"""The classifier's labelled texts: a built-in dataset (imdb, sst2, tfds:NAME) or the user's files
(csv:, tsv:, jsonl:, folder:; see zoo.data.files), one split at a time, as (text, label id) pairs that
can be read more than once. Token ids come from `token_rows`: tokenized once into zoo.data.cache.

Labels may be any strings or integers: the class names are the training split's labels, integers in
numeric order, others in string order. A file is read streaming; `Examples` keeps only counts.
"""

import collections
import dataclasses

import numpy as np

from zoo.data import cache, datasets, files
from zoo.data.datasets import DatasetError

FORMS = ("csv", "tsv", "jsonl", "folder")


@dataclasses.dataclass(frozen=True)
class Columns:
    """Which columns (csv, tsv) or keys (jsonl) hold the text and the label, and what to do with bad rows."""

    text: str = "text"
    label: str = "label"
    bad_rows: str = "error"


def label_name(value):
    """A label as its class name: integers (and their strings) as decimal strings, other strings as they are."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    if isinstance(value, int) or value.strip().lstrip("-").isdigit():
        return str(int(value))
    return value


def class_order(names):
    """The class names in a stable order: numeric for integers, else by string."""
    if all(name.lstrip("-").isdigit() for name in names):
        return tuple(sorted(names, key=int))
    return tuple(sorted(names))


class Examples:
    """One split of labelled texts: iterate for (text, label id); `count`, `class_names`, `key` (the data's part
    of a cache key), `paths` (the files read, for a run's record) and `sources` (zoo.data.cache.Sources of the
    files, None for a built-in dataset)."""

    def __init__(self, read, count, class_names, key, paths=(), text_bytes=None, skipped=0, sources=None):
        self._read, self.count, self.class_names, self.key = read, count, tuple(class_names), key
        self.paths, self.text_bytes, self.skipped, self.sources = tuple(paths), text_bytes, skipped, sources

    def __iter__(self):
        return self._read()

    def texts(self):
        return (text for text, _ in self)

    def tokenizer_sample(self, max_characters, seed):
        """A seeded sample of the texts with about `max_characters` in all, read in one pass."""
        if self.text_bytes is None or self.text_bytes <= max_characters:
            return list(self.texts())
        share, rng = max_characters / self.text_bytes, np.random.default_rng(seed)
        return [text for text in self.texts() if rng.random() < share]


def load(name, split, columns=Columns(), class_names=None, max_examples=None, seed=0):
    """The `split` of dataset `name`. With `class_names` (a trained model's), labels are numbered in that
    order and one the model does not know is refused; else the split's own labels are the classes.
    Every row is read once here, so a bad one is refused (file:line) before any work starts."""
    spec = files.parse(name, FORMS)
    if spec is None:
        return _built_in(name, split, class_names, max_examples, seed)
    files.check_split(spec, split)
    if spec.form != "folder":
        files.check_columns(spec, split, (columns.text, columns.label))
    bad = files.BadRows(columns.bad_rows)
    counts, count, text_bytes = collections.Counter(), 0, 0
    for row in _rows(spec, split, columns, bad):
        counts[row[1]] += 1
        count += 1
        text_bytes += len(row[0])
    bad.check(f"{spec} ({split})")
    if count == 0:
        raise DatasetError(f"--dataset={spec} has no rows in its {split} split.")
    known = class_order(counts) if class_names is None else tuple(class_names)
    if class_names is None and len(known) < 2:
        raise DatasetError(f"--dataset={spec}: every {split} row has the label {known[0]!r}; a classifier needs "
                           "two or more classes.")
    unknown = [name for name in counts if name not in known]
    if unknown:
        where = next(row[2] for row in _rows(spec, split, columns, files.BadRows("skip")) if row[1] in unknown)
        raise DatasetError(f"{where}: label {unknown[0]!r} is not one of the classes training saw {list(known)}"
                           f"{f' ({len(unknown)} unknown labels in all)' if len(unknown) > 1 else ''}.")
    ids = {name: i for i, name in enumerate(known)}
    keep = None
    if max_examples is not None and max_examples < count:
        keep = set(np.sort(np.random.default_rng(seed).permutation(count)[:max_examples]).tolist())

    def read():
        index = 0
        for text, label, _ in _rows(spec, split, columns, files.BadRows("skip")):
            if keep is None or index in keep:
                yield text, ids[label]
            index += 1

    paths = files.paths(spec, split)
    sources = cache.Sources(lambda: _all_files(spec, files.paths(spec, split)))
    key = {"files": sources.digest, "spec": str(spec), "split": split,
           "columns": dataclasses.asdict(columns), "max_examples": max_examples, "seed": seed, "classes": known}
    skipped = bad.count if columns.bad_rows == "skip" else 0
    return Examples(read, len(keep) if keep is not None else count, known, key, paths, text_bytes, skipped, sources)


def _all_files(spec, paths):
    """The files whose contents a split's rows come from (a folder's files for folder:)."""
    if spec.form != "folder":
        return paths
    import os

    return [os.path.join(root, name) for path in paths for root, _, names in sorted(os.walk(path))
            for name in sorted(names)]


def _rows(spec, split, columns, bad):
    """(text, class name, where) of every good row; bad ones go to `bad`."""
    text_column, label_column = ("text", "label") if spec.form == "folder" else (columns.text, columns.label)
    for row in files.rows(spec, split, bad):
        text, label = row.values.get(text_column), row.values.get(label_column)
        if not isinstance(text, str):
            bad.add(row.where, f"no text in {text_column!r}" if text is None else f"{text_column!r} is not text")
            continue
        if not text.strip():
            bad.add(row.where, "an empty text")
            continue
        name = label_name(label)
        if not name:
            bad.add(row.where, f"no label in {label_column!r}" if label in (None, "") else
                    f"label {label!r} is neither a string nor an integer")
            continue
        yield text, name, row.where


def _built_in(name, split, class_names, max_examples, seed):
    data = datasets.subsample(datasets.load_classification(name, split), max_examples, seed)
    if class_names is not None and tuple(data.class_names) != tuple(class_names):
        raise DatasetError(f"{name} has classes {data.class_names}; the model knows {list(class_names)}.")
    key = {"dataset": name, "split": split, "max_examples": max_examples, "seed": seed}
    pairs = lambda: zip(data.texts, data.labels.tolist())  # noqa: E731
    return Examples(pairs, len(data.texts), data.class_names, key, text_bytes=None)


def check_split(name, split):
    """Refuses early (before any training) a split that dataset `name` does not have."""
    spec = files.parse(name, FORMS)
    if spec is None:
        datasets.check_split(name, split)
    else:
        files.check_split(spec, split)


def token_rows(examples, preprocessor, tokenizer_key):
    """The examples' framed token ids (`preprocessor.framed`) and labels, from the cache (a file that changes
    while it is tokenized is refused)."""
    key = {"data": examples.key, "tokenizer": tokenizer_key, "max_length": preprocessor.max_length,
           "framing": [preprocessor.start_id, preprocessor.end_id]}
    return cache.token_rows(key, iter(examples), preprocessor.framed, "tokenizing", examples.text_bytes,
                            sources=examples.sources)
