"""The typed config of a sentiment (classification) run: its data, model, training and setup, one frozen
object made by `zoo.core.config` from a preset, a file, dotted overrides and shortcut flags, and written
whole into the run's config.json. Its `dataset_spec` is data.dataset parsed, once, with the columns and the
label shape to read it with (zoo.data.spec)."""

import dataclasses
import functools
from typing import ClassVar

from zoo.classifier import model as classifier
from zoo.classifier.data import FORMS
from zoo.core import checks, config
from zoo.data import datasets, files, spec as dataset_spec, tokenizer
from zoo.classifier.distill_config import AugmentConfig, DistillConfig
from zoo.core.config import ConfigError
from zoo.training.config import TrainConfig
from zoo.training.setup import SetupConfig


@dataclasses.dataclass(frozen=True)
class SentimentData:
    dataset: str | None = None  # imdb, sst2, sst2_tune, tfds:NAME, or your files as FORM:PATTERN
    eval_split: str = "validation"  # the split evaluated after training (--mode=eval takes --eval_split)
    text_column: str = "text"  # your csv:, tsv:, jsonl: files: the text's column or key
    label_column: str = "label"  # your csv:, tsv:, jsonl: files: the label's column or key
    text_pair_column: str | None = None  # your csv:, tsv:, jsonl: files: a second text's column (text pairs)
    bad_rows: str = "error"  # rows that do not parse: error (refused, file:line) or skip (counted)
    classes: tuple[str, ...] | None = None  # the labels (folder: the class folders) to use, in order; None: all
    max_examples: int | None = None  # train on at most this many examples (a seeded choice)
    label_separator: str = "|"  # multi_label_classification: splits a csv:, tsv: label (or a jsonl: string) into labels

    CHOICES: ClassVar = {"eval_split": datasets.SPLITS, "bad_rows": files.BAD_ROWS}

    def __post_init__(self):
        checks.choices(self)
        if self.max_examples is not None and self.max_examples < 1:
            raise ValueError(f"max_examples={self.max_examples} must be at least 1.")
        if not self.label_separator or self.label_separator != self.label_separator.strip():
            raise ValueError(f"label_separator={self.label_separator!r} must be characters other than whitespace.")


@dataclasses.dataclass(frozen=True)
class SentimentEval:
    """What a command reads beside the run's data and model: --mode=eval's and the evaluation after training's batch
    and predictions file, --mode=explain's text. The evaluated dataset, split and columns are the data section's
    (--mode=eval: the run's own, unless given)."""

    batch_size: int = 64  # texts per evaluation batch; follows train.batch_size in a training run unless set
    predictions: str | None = None  # a JSON-lines file of each evaluated text's label, prediction and probabilities
    overwrite_predictions: bool = False  # let predictions replace an existing file the zoo did not write
    text: str | None = None  # the text to explain (--mode=explain)
    text_pair: str | None = None  # its second text, for a run trained on text pairs (--mode=explain)

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError(f"batch_size={self.batch_size} must be at least 1.")


TRAIN = TrainConfig(train_steps=2000, batch_size=32, learning_rate=5e-4, warmup_steps=400, checkpoint_every=500,
                    log_every=50)
# Fine-tuning a published checkpoint: BERT's (Devlin et al. 2019, appendix A.3) small rate, decayed to
# zero, with decoupled weight decay; a rate made for training from scratch would undo the pretraining.
PUBLISHED_TRAIN = dataclasses.replace(TRAIN, learning_rate=5e-5, warmup_steps=200, schedule="cosine", weight_decay=0.01)


@dataclasses.dataclass(frozen=True)
class SentimentRunConfig:
    data: SentimentData = SentimentData()
    model: classifier.ClassifierConfig = classifier.PRESETS["small"]
    train: TrainConfig = TRAIN
    setup: SetupConfig = SetupConfig()
    distill: DistillConfig = DistillConfig()  # a teacher and a transfer set (docs/distillation.md)
    augment: AugmentConfig = AugmentConfig()  # augmented copies of the training texts
    eval: SentimentEval = SentimentEval()

    # A field set nowhere takes the value given to the one it follows (zoo.core.config.follow).
    FOLLOWS: ClassVar = {"eval.batch_size": "train.batch_size"}

    def __post_init__(self):
        if self.model.max_length < 2:
            raise ConfigError(f"model.max_length={self.model.max_length} leaves no room for text beside the start "
                              "token: use at least 2.")
        if self.data.text_pair_column and self.model.max_length < 4:
            raise ConfigError(f"model.max_length={self.model.max_length} leaves no room for a text pair "
                              "(data.text_pair_column) beside [CLS] and two [SEP]: use at least 4.")
        if self.model.num_segments and not self.data.text_pair_column:
            raise ConfigError(f"model.num_segments={self.model.num_segments} embeds the segments of text pairs: "
                              "set data.text_pair_column too, or leave model.num_segments out (it is set from it).")
        if self.model.problem_type == classifier.REGRESSION and self.data.classes:
            raise ConfigError(f"data.classes={list(self.data.classes)} picks classes, and a regression "
                              "(model.problem_type) has none: leave it out.")
        self.check_multi_label_fields()
        transfer = self.distill.transfer
        if transfer and not self.distill.teacher:
            raise ConfigError(f"distill.transfer={transfer} holds unlabelled texts, and only a teacher can label them: "
                              "give distill.teacher too (--teacher), or leave the transfer set out.")
        if transfer and self.data.text_pair_column:
            raise ConfigError(f"distill.transfer={transfer} holds single texts, and this run reads text pairs "
                              "(data.text_pair_column): leave the transfer set out.")
        if self.setup.init_from is None:  # the run trains its own tokenizer (else the encoder's vocabulary)
            tokenizer.check_vocab_size("model.vocab_size", self.model.vocab_size)
        self.dataset_spec  # parsed now: a form this recipe does not read is refused with the config

    def check_multi_label_fields(self):
        """model.threshold and data.label_separator are read by a multi-label run only: another problem type given
        one other than its default (what a user set; a record holds the default) is refused, as data.classes is
        for a regression, rather than recorded in config.json and never used."""
        if self.model.problem_type == classifier.MULTI_LABEL:
            return
        kind = f"a {'regression' if self.model.problem_type == classifier.REGRESSION else self.model.problem_type} " \
               "(model.problem_type)"
        if self.model.threshold != classifier.ClassifierConfig.threshold:  # a dataclass field's default
            answer = "a number" if self.model.problem_type == classifier.REGRESSION else "its likeliest class"
            raise ConfigError(f"model.threshold={self.model.threshold} is the probability at which a multi-label run "
                              f"predicts a label, and {kind} answers {answer}: leave it out.")
        if self.data.label_separator != SentimentData.label_separator:
            raise ConfigError(f"data.label_separator={self.data.label_separator!r} splits a multi-label run's labels, "
                              f"and {kind} reads one label a row: leave it out.")

    @functools.cached_property
    def dataset_spec(self):
        """data.dataset parsed (zoo.data.spec.DatasetSpec; None without one), as `spec_of` reads it."""
        return spec_of(self.data, self.model.problem_type)


def spec_of(data, problem_type):
    """The DatasetSpec of a SentimentData: its dataset, read with its columns, classes and bad-row policy, labels
    read as `problem_type` (model.problem_type). The one place a sentiment run's dataset string is parsed (its
    config's, and --mode=eval's)."""
    columns = dataset_spec.Columns(data.text_column, data.label_column, data.bad_rows, data.classes, problem_type,
                                   data.label_separator, data.text_pair_column)
    return dataset_spec.parse(data.dataset, FORMS, columns)


def base(preset, init_from=None, encoder=None, published=False):
    """The config a run starts from, before any file or override: the preset's model and the recipe's
    training defaults; with `init_from`, the pretrained `encoder`'s model (a ClassifierConfig), and for a
    `published` checkpoint BERT's fine-tuning defaults."""
    if init_from is None:
        return config.preset(SentimentRunConfig, classifier.PRESETS, preset)
    train = PUBLISHED_TRAIN if published else TRAIN
    return SentimentRunConfig(model=encoder, train=train, setup=SetupConfig(init_from=init_from))


def check_encoder(model, encoder, section="model"):
    """A model config must keep the pretrained encoder's shape: every field but the head's (dropout, num_classes,
    problem_type, threshold), num_segments (a pair run adds a segment embedding) and a max_length no longer than
    the encoder's."""
    free = {"dropout", "num_classes", "max_length", "problem_type", "threshold", "num_segments"}
    wrong = [f"{section}.{f.name}={getattr(model, f.name)!r} (the encoder of setup.init_from has "
             f"{getattr(encoder, f.name)!r})" for f in dataclasses.fields(model)
             if f.name not in free and getattr(model, f.name) != getattr(encoder, f.name)]
    if model.max_length > encoder.max_length:
        wrong.append(f"{section}.max_length={model.max_length} (the encoder has {encoder.max_length} positions: "
                     f"at most {encoder.max_length})")
    if wrong:
        raise ConfigError(f"setup.init_from's encoder contradicts {'; '.join(wrong)}: leave those fields out (they "
                          "come from the encoder) or pretrain with them.")
