"""The typed config of a translation run: its data, model, training and setup, made by `zoo.core.config`
from a preset, a file, dotted overrides and shortcut flags, and written whole into the run's config.json. Its
`dataset_spec` is data.dataset parsed, once (zoo.data.spec)."""

import dataclasses
import functools
from typing import ClassVar

from zoo.core import checks, config
from zoo.data import files, spec as dataset_spec, tokenizer
from zoo.core.config import ConfigError
from zoo.training.config import TrainConfig
from zoo.training.setup import SetupConfig
from zoo.translation import model as translation
from zoo.translation.data import FORMS
from zoo.translation.search import DecodeConfig


@dataclasses.dataclass(frozen=True)
class TranslationData:
    dataset: str | None = None  # multi30k, tfds:NAME, or your files as text:PATTERN with {lang}, or tsv:PATTERN
    source: str = "de"  # the source language's code
    target: str = "en"  # the target language's code
    eval_split: str | None = None  # the split evaluated; None: test, or the held-out share of files without {split}
    bad_rows: str = "error"  # rows that do not parse: error (refused, file:line) or skip (counted)
    max_examples: int | None = None  # train on at most this many pairs (a seeded choice)

    CHOICES: ClassVar = {"bad_rows": files.BAD_ROWS}

    def __post_init__(self):
        checks.choices(self)
        if self.source == self.target:
            raise ValueError(f"source and target are both {self.source!r}: give two languages.")
        if self.max_examples is not None and self.max_examples < 1:
            raise ValueError(f"max_examples={self.max_examples} must be at least 1.")


@dataclasses.dataclass(frozen=True)
class TranslationEval:
    """What a command reads beside the run's data and model: the search of the evaluation (after training and
    --mode=eval), of --mode=translate and of the export, and its batches. The evaluated split and rows are the data
    section's (--mode=eval: the run's own, unless given)."""

    decode: DecodeConfig = DecodeConfig()  # beam search or sampling (num_return: --mode=translate's n-best)
    batch_size: int = 100  # sentences per decoding batch (--eval_batch_size)
    jit_compile: bool = False  # the search compiled with XLA; follows train.jit_compile in a training run unless set

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError(f"batch_size={self.batch_size} must be at least 1.")


TRAIN = TrainConfig(train_steps=5000, batch_size=512, max_tokens=6144, learning_rate=1e-3, warmup_steps=800,
                    label_smoothing=0.1, checkpoint_every=500, log_every=50)


@dataclasses.dataclass(frozen=True)
class TranslateRunConfig:
    data: TranslationData = TranslationData()
    model: translation.TranslatorConfig = translation.PRESETS["small"]
    train: TrainConfig = TRAIN
    setup: SetupConfig = SetupConfig()
    eval: TranslationEval = TranslationEval()

    # A field set nowhere takes the value given to the one it follows (zoo.core.config.follow): the evaluation after
    # training searches as it trained (compiled, seeded).
    FOLLOWS: ClassVar = {"model.target_vocab_size": "model.source_vocab_size", "eval.jit_compile": "train.jit_compile",
                         "eval.decode.seed": "train.seed"}

    def __post_init__(self):
        self.setup.from_scratch("translation")
        for name in ("source_vocab_size", "target_vocab_size"):
            tokenizer.check_vocab_size(f"model.{name}", getattr(self.model, name))
        if self.train.max_tokens is not None and self.train.max_tokens < self.model.max_length:
            raise ConfigError(f"train.max_tokens={self.train.max_tokens} cannot hold one pair of up to model."
                              f"max_length={self.model.max_length} tokens: give at least {self.model.max_length}, or "
                              "a smaller model.max_length.")
        self.dataset_spec  # parsed now: a form this recipe does not read is refused with the config

    @functools.cached_property
    def dataset_spec(self):
        """data.dataset parsed (zoo.data.spec.DatasetSpec; None without one): the one place a translation run's
        dataset string is parsed."""
        return dataset_spec.parse(self.data.dataset, FORMS)


def base(preset=None, init_from=None, record=None):
    """The preset's model (None: small) with the recipe's training defaults (TranslateRunConfig refuses init_from)."""
    return config.preset(TranslateRunConfig, translation.PRESETS, preset or "small")
