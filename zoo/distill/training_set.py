"""The texts a classifier trains on beyond its labelled ones (docs/distillation.md): the training texts, then their
augmented copies (augment), then the transfer set's texts (distill.transfer), with each text's gold label (where
it has one) and, with a teacher (distill.teacher), the teacher's outputs. `plan` builds it, or returns None for a run
that has none of the three, which trains as before."""

import dataclasses
import os

import numpy as np

from zoo.classifier import data as classifier_data
from zoo.classifier.config import REGRESSION, SINGLE_LABEL
from zoo.data.datasets import DatasetError
from zoo.distill import augment as augmenting
from zoo.distill.teacher import open_teacher
from zoo.pretraining import data as corpora  # the pretraining corpora's reader: imdb_unsup, text:, csv:, jsonl:


class DistillError(ValueError):
    """A distillation setting that cannot work with this run; the message names the field."""


@dataclasses.dataclass
class TrainingSet:
    examples: object  # zoo.classifier.data.Examples over every text, each iterated as (text, its row here)
    labels: np.ndarray  # each text's gold label: a class id, a number in the labels' units, or a 0/1 row
    gold: np.ndarray  # (texts,) float32: 1 where the text's label teaches it
    teacher: np.ndarray | None  # (texts, outputs) float32, the teacher's (zoo.distill.teacher), once `label` ran
    derived: dict  # what config.json's derived part keeps: the teacher and transfer set a resumed run must find
    parts: tuple = ()  # the texts by part (labelled, copies, transfer), as `examples` iterates them
    source: object = None  # the zoo.distill.teacher.Teacher that `label` asks; None: no teacher
    summary: str = ""  # the log's line of what the run trains on

    def label(self):
        """The teacher's outputs of every text (`teacher`), each part answered and cached alone (another student
        with other copies or no transfer set shares the rest); then the summary line."""
        if self.source is not None:
            self.teacher = np.concatenate([self.source.outputs(part) for part in self.parts])
        print(self.summary, flush=True)

    def fields(self, rows, problem_type, stats=None):
        """The batch fields of the token `rows` (their labels index this set): label (standardised for a
        regression, with `stats`), gold, and teacher (standardised likewise) when there is one."""
        index = np.asarray(rows.labels)
        labels = self.labels[index]
        if problem_type == REGRESSION:
            labels = (labels - stats["mean"]) / stats["std"]
        fields = {"token_ids": rows, "label": labels if problem_type == SINGLE_LABEL else labels.astype(np.float32)}
        if self.teacher is not None:
            teacher = self.teacher[index]
            if problem_type == REGRESSION:
                teacher = (teacher - stats["mean"]) / stats["std"]
            fields.update(gold=self.gold[index], teacher=teacher.astype(np.float32))
        return fields


def gold_labels(data, problem_type):
    """Each training text (in order) and its label, as `TrainingSet.labels` holds them."""
    texts, ids = zip(*data) if data.count else ((), ())
    if problem_type == SINGLE_LABEL:
        return list(texts), np.asarray(ids, np.int32)
    return list(texts), np.asarray(data.targets.values)[np.asarray(ids)]


def plan(config, data, seed, record=None, model_dir=None):
    """The run's TrainingSet (`config`: a SentimentRunConfig; `data`: its training Examples; `record`: a resumed
    run's; `model_dir`: its folder), or None when it has no teacher, transfer set or augmentation. Bad settings are
    refused before any text is read again; the teacher answers in `TrainingSet.label`, which the recipe calls once
    its own checks have passed and before anything is written into the run's folder."""
    distill, augment, problem_type = config.distill, config.augment, config.model.problem_type
    if not (distill.teacher or distill.transfer or augment.copies):
        return None
    pairs = bool(config.data.text_pair_column)
    if distill.teacher and model_dir and os.path.realpath(distill.teacher) == os.path.realpath(model_dir):
        raise DistillError(f"distill.teacher={distill.teacher} is this run's own folder: a teacher is another, trained "
                           "classifier. Give its run folder or export.")
    teacher = open_teacher(distill.teacher, problem_type, data.class_names, pairs) if distill.teacher else None
    transfer = read_transfer(distill, seed) if distill.transfer else None
    derived = {}
    if teacher is not None:
        derived["teacher"] = teacher.record
    if transfer is not None:
        derived["transfer"] = {"count": len(transfer[0]), "files": transfer[1]}
    check_resumed(record, derived, distill.transfer)

    texts, labels = gold_labels(data, problem_type)
    copies = augmented_copies(texts, augment, seed)
    extra = transfer[0] if transfer is not None else []
    # Gold labels teach the training texts, and the copies where no teacher does; the teacher teaches every text.
    labels = np.concatenate([labels, np.repeat(labels, augment.copies, axis=0),
                             np.zeros((len(extra), *labels.shape[1:]), labels.dtype)])
    gold = np.concatenate([np.ones(len(texts), np.float32),
                           np.full(len(copies), 0.0 if teacher is not None else 1.0, np.float32),
                           np.zeros(len(extra), np.float32)])
    parts = tuple(part for part in (texts, copies, extra) if part)
    every = [text for part in parts for text in part]
    key = {"data": data.key, "augment": dataclasses.asdict(augment), "seed": seed,
           "transfer": [distill.transfer, distill.transfer_text_column, distill.max_transfer, derived.get("transfer")]}
    size = sum(classifier_data.text_size(text) for text in every)
    examples = classifier_data.Examples(lambda: ((text, row) for row, text in enumerate(every)), len(every),
                                        data.class_names, key, data.paths, size, data.skipped, data.sources)
    taught = f"; taught by {teacher.path}" if teacher is not None else ""
    summary = f"Training texts: {len(texts):,} labelled, {len(copies):,} augmented, {len(extra):,} transfer{taught}."
    return TrainingSet(examples, labels, gold, None, derived, parts, teacher, summary)


def augmented_copies(texts, augment, seed):
    """The `augment.copies` copies of each text, text after text (zoo.distill.augment)."""
    if not augment.copies:
        return []
    neighbours = None
    if any(name == "neighbours" for name, _ in augment.parsed):
        neighbours = augmenting.neighbour_table(texts, augment.vectors, augment.neighbours)
    augmenter = augmenting.Augmenter(augment, seed, neighbours)
    print(f"Augmenting {len(texts):,} training texts: {augment.copies} cop{'y' if augment.copies == 1 else 'ies'} "
          f"each ({', '.join(augment.methods)}) ...", flush=True)
    return [copy for row, text in enumerate(texts) for copy in augmenter.copies(text, row)]


def read_transfer(distill, seed):
    """The transfer set's texts (at most distill.max_transfer, a seeded choice) and its files' digest."""
    try:
        documents = corpora.load_corpora([distill.transfer], text_column=distill.transfer_text_column)
    except DatasetError as error:  # its column is the transfer set's own flag, not the labelled data's
        message = str(error).replace("--text_column", "--transfer_text_column")
        raise DistillError(f"distill.transfer={distill.transfer}: {message}") from None
    texts = list(documents)  # load_corpora refuses an empty one ("holds no text")
    if distill.max_transfer is not None and distill.max_transfer < len(texts):
        keep = np.sort(np.random.default_rng(seed).permutation(len(texts))[:distill.max_transfer])
        texts = [texts[i] for i in keep]
    return texts, documents.digest


def check_resumed(record, derived, transfer):
    """A resumed run must find the teacher and transfer set it started with (`transfer`: distill.transfer now):
    refused naming what changed."""
    started = (record.derived.get("distill") if record is not None else None)
    if started is None or started == derived:
        return
    for name, field in (("teacher", "distill.teacher"), ("transfer", "distill.transfer")):
        before, now = started.get(name) or {}, derived.get(name) or {}
        if name == "transfer":  # the record keeps its count and files; the config, what the user named
            before, now = {"path": record.config.distill.transfer, **before}, {"path": transfer, **now}
        changes = [f"{key} was {before.get(key)}, now {now.get(key)}" for key in ("path", "digest", "step", "count",
                                                                                   "files")
                   if before.get(key) != now.get(key)]
        if changes:
            raise DistillError(f"{field} changed since this run started ({'; '.join(changes)}): a resumed run learns "
                               "from what it started with. Start a new run (another --model_dir) for the new one.")
