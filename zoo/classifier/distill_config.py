"""The two sections of a classifier run's config that teach it from more than its labels (docs/distillation.md):
`distill`, a teacher whose outputs the student learns (knowledge distillation) and unlabelled texts it labels
(a transfer set); `augment`, augmented copies of each training text."""

import dataclasses
from typing import ClassVar

from zoo.core import checks

LOSSES = ("soft", "mse")  # Hinton et al.'s softened cross-entropy; Tang et al.'s squared error of the logits
METHODS = ("mask", "swap", "delete", "ngram", "neighbours")  # zoo.distill.augment says what each does


@dataclasses.dataclass(frozen=True)
class DistillConfig:
    teacher: str | None = None  # a classifier's run folder or export (what zoo.load reads); None: no teacher
    loss: str = "soft"  # soft: cross-entropy of the teacher's softened outputs; mse: squared error of the logits
    temperature: float = 2.0  # soft: both sides' logits divided by it (the loss times its square, as Hinton's)
    weight: float = 0.5  # the teacher's share of the loss; the gold labels' the rest (texts that have one)
    transfer: str | None = None  # unlabelled texts the teacher labels: imdb_unsup, text:, csv:, jsonl:, tfds:
    transfer_text_column: str = "text"  # the transfer set's csv:, jsonl: text column
    max_transfer: int | None = None  # use at most this many transfer texts (a seeded choice)

    CHOICES: ClassVar = {"loss": LOSSES}

    def __post_init__(self):
        checks.choices(self)
        checks.positive(self, "temperature", "max_transfer")
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"weight={self.weight} must be in [0, 1]: the teacher's share of the loss.")
        if self.teacher is not None and not self.teacher:
            raise ValueError("teacher='' names no teacher: give a classifier's run folder or export, or leave it out.")
        if self.transfer is not None and not self.transfer:
            raise ValueError("transfer='' names no texts: give a dataset (imdb_unsup, text:PATTERN ...) or leave it "
                             "out.")


@dataclasses.dataclass(frozen=True)
class AugmentConfig:
    methods: tuple[str, ...] = ()  # "name:rate", each applied to every copy in this order, e.g. mask:0.1 ngram:0.25
    copies: int = 0  # augmented copies of each training text
    vectors: str | None = None  # neighbours: the word-vectors file whose nearest neighbours replace words
    neighbours: int = 10  # neighbours: how many nearest neighbours a word may be replaced by

    def __post_init__(self):
        checks.non_negative(self, "copies")
        checks.positive(self, "neighbours")
        try:
            parsed = self.parsed
        except ValueError as error:  # an unknown method or a rate outside [0, 1], named with the field
            raise ValueError(f"methods={list(self.methods)}: {error}") from None
        if self.copies and not parsed:
            raise ValueError(f"copies={self.copies} makes augmented copies, and no method is given: name them, e.g. "
                             "methods=[mask:0.1, ngram:0.25] (one of " + ", ".join(METHODS) + ").")
        if parsed and not self.copies:
            raise ValueError(f"methods={list(self.methods)} augment the copies, and copies=0 makes none: set copies "
                             "(e.g. 2) or leave methods out.")
        uses_vectors = any(name == "neighbours" for name, _ in parsed)
        if uses_vectors and not self.vectors:
            raise ValueError(f"methods={list(self.methods)} has neighbours, which replaces words by their nearest "
                             "neighbours in a word-vectors file: give vectors (--augment_vectors, e.g. "
                             "glove.6B.50d.txt).")
        if self.vectors and not uses_vectors:
            raise ValueError(f"vectors={self.vectors} is read by the neighbours method alone: add neighbours:RATE to "
                             "methods, or leave vectors out.")

    @property
    def parsed(self):
        """The methods as (name, rate) pairs."""
        return tuple(parse_method(text) for text in self.methods)


def parse_method(text):
    """A "name:rate" method as (name, rate), else ValueError saying what to write."""
    name, _, rate = str(text).partition(":")
    name = name.strip()
    if name not in METHODS:
        raise ValueError(f"{text!r} names an unknown augmentation method {name!r}: use one of "
                         f"{', '.join(METHODS)}, each as name:rate (e.g. mask:0.1).")
    try:
        value = float(rate)
    except ValueError:
        raise ValueError(f"{text!r}: give the method's rate after a colon, e.g. {name}:0.1.") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{text!r}: the rate {value:g} must be in [0, 1].")
    return name, value
