"""The typed config of a language-modelling (Transformer-XL) run: its data, model, training and setup, made
by `zoo.core.config` from a preset, a file, dotted overrides and shortcut flags, and written whole into the
run's config.json. Its `dataset_spec` is data.dataset parsed, once (zoo.data.spec)."""

import dataclasses
import functools
import math
from typing import ClassVar

from zoo.core import checks, config
from zoo.data import datasets, files, spec as dataset_spec
from zoo.core.config import ConfigError
from zoo.language_model import corpora, model as lm, subword
from zoo.language_model.data import FILE_LEVELS, FORMS
from zoo.training.config import TrainConfig
from zoo.training.setup import SetupConfig


@dataclasses.dataclass(frozen=True)
class LMData:
    dataset: str | None = None  # ptb, wikitext2, tinyshakespeare ..., or your files as text:, csv:, jsonl:PATTERN
    eval_split: str | None = None  # the split evaluated; None: test, or the held-out share of files without {split}
    level: str | None = None  # your files' tokens: subword (the default), word, char or byte
    vocab_size: int = 8000  # pieces of a subword vocabulary, at least 262 (model.vocab_size is the vocabulary's size)
    text_column: str = "text"  # your csv:, jsonl: files: the text's column or key
    bad_rows: str = "error"  # rows that do not parse: error (refused, file:line) or skip (counted)
    random_offset: bool = False  # start every pass at a random offset, so segment boundaries move (seeded)
    max_examples: int | None = None  # not for a language model: it trains on the whole text

    CHOICES: ClassVar = {"eval_split": datasets.SPLITS, "level": FILE_LEVELS, "bad_rows": files.BAD_ROWS}

    def __post_init__(self):
        checks.choices(self)
        subword.check_vocab_size("vocab_size", self.vocab_size)
        if self.max_examples is not None:
            raise ValueError(f"max_examples={self.max_examples} picks training examples (sentiment, translation); a "
                             "language model trains on the whole text: shorten a quick run with train_steps instead.")


# Longer is refused before any allocation: attention's scores alone hold segment_length x (segment_length +
# memory_length) floats a head and a sequence (64 GiB at 65,536 each).
MAX_POSITIONS = 65_536
@dataclasses.dataclass(frozen=True)
class LMEval:
    """What a command reads beside the run's data and model: the evaluation's memory and streams (after training and
    --mode=eval), --mode=generate's prompt and sampling, and the export's sampling defaults. The evaluated split
    and rows are the data section's (--mode=eval: the run's own, unless given)."""

    memory_length: int | None = None  # cached positions per layer at evaluation (--eval_memory_length; None: trained)
    batch_size: int = 10  # streams the evaluated text is laid out as (--eval_batch_size)
    prompt: str | None = None  # the text to continue (--mode=generate)
    max_new_tokens: int = 100  # tokens to generate
    top_k: int = 0  # sample from the k most likely tokens (0: all)
    temperature: float = 1.0  # sampling's
    greedy: bool = False  # the most likely token each step instead of sampling (--mode=generate)
    seed: int = 0  # sampling's (--mode=generate)

    def __post_init__(self):
        checks.seed(self)
        if self.memory_length is not None and not 0 <= self.memory_length <= MAX_POSITIONS:
            raise ValueError(f"eval_memory_length={self.memory_length} must be in [0, {MAX_POSITIONS:,}] "
                             f"(eval.memory_length={self.memory_length}: attention's scores grow with segment_length x "
                             "(segment_length + memory_length)).")
        if self.batch_size < 1:
            raise ValueError(f"batch_size={self.batch_size} must be at least 1.")
        if self.max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens={self.max_new_tokens} must be positive.")
        if not 0 < self.temperature < math.inf or self.top_k < 0:
            raise ValueError(f"temperature={self.temperature} must be positive and finite, and top_k={self.top_k} "
                             "non-negative.")


TRAIN = TrainConfig(train_steps=4000, batch_size=32, learning_rate=1e-3, warmup_steps=400, label_smoothing=0.0,
                    clip_norm=0.25, checkpoint_every=500, log_every=50)


@dataclasses.dataclass(frozen=True)
class LMRunConfig:
    data: LMData = LMData()
    model: lm.LMConfig = lm.PRESETS["small"]
    train: TrainConfig = TRAIN
    setup: SetupConfig = SetupConfig()
    eval: LMEval = LMEval()

    def __post_init__(self):
        self.setup.from_scratch("a language model")
        for name in ("segment_length", "memory_length"):
            if getattr(self.model, name) > MAX_POSITIONS:
                raise ConfigError(f"model.{name}={getattr(self.model, name)} must be at most {MAX_POSITIONS:,} tokens "
                                  "(attention's scores grow with segment_length x (segment_length + memory_length)).")
        self.dataset_spec  # parsed now: a form this recipe does not read is refused with the config
        self.check_word_vectors()

    @functools.cached_property
    def dataset_spec(self):
        """data.dataset parsed (zoo.data.spec.DatasetSpec, its columns.text data.text_column; None without one): the
        one place an LM run's dataset string is parsed."""
        return dataset_spec.parse(self.data.dataset, FORMS, dataset_spec.Columns(text=self.data.text_column))

    def check_word_vectors(self):
        """Word vectors are a word's: model.word_vectors needs word-level text (a built-in corpus's own level, your
        files' data.level; not known without a dataset, or for a name finish() refuses)."""
        data = self.data
        files_named = self.dataset_spec is not None and self.dataset_spec.files
        level = data.level or corpora.LEVELS.get(data.dataset) or ("subword" if files_named else None)
        if self.model.word_vectors is None or level in (None, "word"):
            return
        words = sorted(name for name, its in corpora.LEVELS.items() if its == "word")
        whose = "" if data.level else f" ({data.dataset}'s own)" if data.dataset in corpora.LEVELS else \
            " (your files' default)"
        raise ConfigError(f"model.word_vectors={self.model.word_vectors!r} holds vectors of words, but data.level is "
                          f"{level}{whose}: train on word-level text ({', '.join(words)}, or your files with "
                          "--level=word), or leave model.word_vectors out.")


def base(preset=None, init_from=None, record=None):
    """The preset's model (None: small) with the recipe's training defaults (init_from is refused by LMRunConfig)."""
    return config.preset(LMRunConfig, lm.PRESETS, preset or "small")
