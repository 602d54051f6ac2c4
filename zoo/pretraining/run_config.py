"""The typed config of a pretraining run: its corpora, model (encoder and objective), training and setup,
made by `zoo.core.config` from a preset, a file, dotted overrides and shortcut flags, and written whole into
the run's config.json. Its `corpus_specs` are data.corpus parsed, once (zoo.data.spec)."""

import dataclasses
import functools
from typing import ClassVar

from zoo.classifier.model import ClassifierConfig
from zoo.core import checks, config
from zoo.data import files, spec as dataset_spec, tokenizer, word_tokenizer
from zoo.core.config import ConfigError
from zoo.pretraining import model as pretraining
from zoo.pretraining.data import FORMS
from zoo.training.config import TrainConfig
from zoo.training.setup import SetupConfig

@dataclasses.dataclass(frozen=True)
class PretrainData:
    corpus: tuple[str, ...] = ()  # imdb_unsup, imdb, sst2, tfds:NAME, or your files: text:, csv:, jsonl:GLOB
    document_per_file: bool = False  # text: files hold one document each (else one per line)
    text_column: str = "text"  # your csv:, jsonl: files: the text's column or key
    bad_rows: str = "error"  # rows that do not parse: error (refused, file:line) or skip (counted)
    eval_fraction: float = 0.01  # share of the documents held out for evaluation (seeded by train.seed)
    max_examples: int | None = None  # not for pretraining: it reads every document

    CHOICES: ClassVar = {"bad_rows": files.BAD_ROWS}

    def __post_init__(self):
        checks.choices(self)
        if not 0.0 < self.eval_fraction < 1.0:
            raise ValueError(f"eval_fraction={self.eval_fraction} must be in (0, 1).")
        if self.max_examples is not None:
            raise ValueError(f"max_examples={self.max_examples} is not for pretraining, which reads every document: "
                             "shorten a quick run with train_steps instead.")


VOCAB_SIZE = 16000  # SentencePiece pieces (or words) trained on the corpus; a published checkpoint: its own


def with_vocabulary(model):
    """A preset's model with pretraining's vocabulary size."""
    return dataclasses.replace(model, encoder=dataclasses.replace(model.encoder, vocab_size=VOCAB_SIZE))


TRAIN = TrainConfig(train_steps=6000, batch_size=32, learning_rate=1e-3, warmup_steps=400, schedule="cosine",
                    label_smoothing=0.0, weight_decay=0.01, checkpoint_every=250, log_every=50)


@dataclasses.dataclass(frozen=True)
class PretrainEval:
    """What --mode=eval and the evaluation after training read beside the run: the held-out documents' batches."""

    batch_size: int = 64  # sequences per evaluation batch; follows train.batch_size in a training run unless set

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError(f"batch_size={self.batch_size} must be at least 1.")


# Fields of the encoder's config that only a classifier's head reads, and the values they must keep here.
HEAD_FIELDS = ("problem_type", "threshold")  # num_segments: PretrainConfig refuses it
BARE_ENCODER = ClassifierConfig()


@dataclasses.dataclass(frozen=True)
class PretrainRunConfig:
    data: PretrainData = PretrainData()
    model: pretraining.PretrainConfig = with_vocabulary(pretraining.PRESETS["small"])
    train: TrainConfig = TRAIN
    setup: SetupConfig = SetupConfig()
    eval: PretrainEval = PretrainEval()

    # A field set nowhere takes the value given to the one it follows (zoo.core.config.follow): the sequences are as
    # long as the longest text the encoder will take, unless said.
    FOLLOWS: ClassVar = {"model.sequence_length": "model.encoder.max_length", "eval.batch_size": "train.batch_size"}

    def __post_init__(self):
        head = {name: getattr(self.model.encoder, name) for name in HEAD_FIELDS}
        set_fields = [f"model.encoder.{name}={value!r}" for name, value in head.items()
                      if value != getattr(BARE_ENCODER, name)]
        if set_fields:  # the encoder's classifier-head fields: a fine-tuning run's (recipes.sentiment --init_from)
            raise ConfigError(f"{', '.join(set_fields)} configures a classifier's head, which pretraining does not "
                              "build: leave it out here and give it to the fine-tuning run (recipes.sentiment "
                              "--init_from=<this run>).")
        if self.setup.init_from is not None and self.model.objective != "mlm":
            raise ConfigError(f"model.objective={self.model.objective} cannot continue a published checkpoint: "
                              "setup.init_from continues masked-LM training (model.objective=mlm).")
        words = self.model.encoder.words  # the vocabulary is the corpus's words (docs/word_vectors.md)
        if words and self.setup.init_from is not None:
            raise ConfigError("model.encoder.word_vectors and model.encoder.tokenizer=words cannot go with "
                              f"setup.init_from={self.setup.init_from}: continued pretraining keeps the checkpoint's "
                              "WordPiece vocabulary and embedding. Leave them out, or pretrain from scratch.")
        if words:
            check_word_ids(self.model)
        elif self.setup.init_from is None:  # the run trains its own SentencePiece model (else the checkpoint's)
            tokenizer.check_vocab_size("model.encoder.vocab_size", self.model.encoder.vocab_size,
                                       (pretraining.MASK_TOKEN,))
        self.corpus_specs  # parsed now: a form this recipe does not read is refused with the config

    @functools.cached_property
    def corpus_specs(self):
        """data.corpus parsed, each name a zoo.data.spec.DatasetSpec (its columns.text data.text_column): the one
        place a pretraining run's corpus names are parsed."""
        columns = dataset_spec.Columns(text=self.data.text_column)
        return tuple(dataset_spec.parse(name, FORMS, columns) for name in self.data.corpus)


def check_word_ids(model):
    """Refuses special ids (a PretrainConfig's) that are not a word vocabulary's: zoo.data.word_tokenizer's
    <pad>, <unk>, <s>, </s> and [MASK], then the words."""
    specials = (*word_tokenizer.SPECIALS, word_tokenizer.MASK)
    own = {"mask_id": specials.index(word_tokenizer.MASK), "start_id": specials.index("<s>"),
           "separator_id": specials.index("</s>"), "first_regular_id": len(specials)}
    wrong = [f"model.{name}={getattr(model, name)} (the word vocabulary's is {value})"
             for name, value in own.items() if getattr(model, name) != value]
    if wrong:
        raise ConfigError(f"A word vocabulary has its own special ids: {'; '.join(wrong)}. Leave them out.")


def base(preset, init_from=None, model=None):
    """The preset's model with the recipe's training defaults; with `init_from` (a published checkpoint), its
    `model` (the PretrainConfig continuing its masked-LM training)."""
    if init_from is not None:
        return PretrainRunConfig(model=model, setup=SetupConfig(init_from=init_from))
    run = config.preset(PretrainRunConfig, pretraining.PRESETS, preset)
    return dataclasses.replace(run, model=with_vocabulary(run.model))

