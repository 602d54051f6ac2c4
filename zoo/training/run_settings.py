"""What one command on a run of a recipe is given (`RunSettings`), its final typed config made in one place for the
command line and `zoo.train` alike (`resolve`, for every mode, from the run's record read once), the shortcuts each mode
reads (`reads`), and the steps every recipe takes with it: starting or resuming the run's record (`start_run`), the
files a resumed run must find again (`check_same_files`), epochs counted as steps (`with_epochs`)."""

import dataclasses
import difflib
import math
import os

from zoo.core import config as cfg
from zoo.runs import record as record_module, run_dir
from zoo.runs.run_dir import RunDir, RunDirError
from zoo.training import precision

TRAINING_MODES = ("train", "train_and_eval")
MODES = ("train", "eval", "train_and_eval", "export", "config")  # and a recipe's own (explain, generate, translate)
TRAIN_SHORTCUTS = ("train_steps", "batch_size", "learning_rate", "warmup_steps", "schedule", "label_smoothing",
                   "weight_decay", "clip_norm", "checkpoint_every", "keep_checkpoints", "log_every", "jit_compile",
                   "seed", "profile_steps")
# Shortcut (a flag, or zoo.train's keyword) -> the one config field it is another name of, for every recipe whose
# config has that field; a recipe's own beside (Recipe.shortcuts). recipes/shortcuts.py makes their flags.
SHORTCUTS = {**{name: f"train.{name}" for name in TRAIN_SHORTCUTS}, "mixed_precision": "train.mixed_precision",
             "dataset": "data.dataset", "max_examples": "data.max_examples", "bad_rows": "data.bad_rows",
             "strategy": "setup.strategy", "cpu_replicas": "setup.cpu_replicas", "tpu": "setup.tpu"}
# A field given nowhere that `resolve` treats as given this (auto: this machine's dtype, or a resumed run's own).
UNSET = {"train.mixed_precision": "auto"}
EVAL = "eval"  # the section of what the modes read (evaluation, decoding, generation ...): set per command
# Beside the eval section, what a mode that reads a trained run takes at the recipe's default unless given: the split
# it evaluates is each command's own (the one a training run evaluated is not --mode=eval's).
PER_COMMAND = ("data.eval_split",)
# Fields a resumed run may change: how long and how fast it trains, what it logs, the split it evaluates and
# the devices (their number is checked with the derived replicas), and the eval section (each command's own).
# Every other field must match the record.
CHANGEABLE = tuple(f"train.{name}" for name in (
    "train_steps", "learning_rate", "warmup_steps", "schedule", "label_smoothing", "weight_decay", "layer_decay",
    "clip_norm", "checkpoint_every", "keep_checkpoints", "log_every", "profile_steps", "jit_compile",
    "precision_reason")) + ("data.eval_split", "setup.strategy", "setup.cpu_replicas", "setup.tpu")


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """One command on a run: its mode, the run folder (a RunDir, opened once and passed down: its record is read
    once), the run's typed config as `resolve` made it, and the invocation's places and counts."""

    mode: str
    folder: RunDir | None  # None only where nothing is run (a sweep's check of its points, --mode=config)
    config: object  # the recipe's typed run config, eval section included (`resolve`)
    export_dir: str | None = None
    epochs: float | None = None  # turned into train.train_steps once the data is read (`with_epochs`)
    average_checkpoints: int = 1  # the modes that load the model load the mean of the newest this many
    preset: str | None = None  # the preset config.json records (`recorded_preset`)

    def __post_init__(self):
        if self.average_checkpoints < 1:
            raise ValueError(f"average_checkpoints={self.average_checkpoints} must be at least 1 (1: the newest "
                             "alone).")
        if self.epochs is not None and not 0 < self.epochs < math.inf:
            raise ValueError(f"epochs={self.epochs} must be positive and finite.")

    @property
    def model_dir(self):
        return self.folder.path if self.folder is not None else None

    @property
    def train(self):
        return self.config.train if self.training else None

    @property
    def training(self):
        return self.mode in TRAINING_MODES

    @property
    def evaluating(self):
        return self.mode in ("eval", "train_and_eval")

    @property
    def exporting(self):
        return self.mode == "export" or (self.training and bool(self.export_dir))


def shortcuts(recipe):
    """{shortcut: its dotted field} of a `recipe` run: the shared SHORTCUTS its config has, and its own (its eval
    section's among them)."""
    def has(field):
        try:
            return bool(cfg.field_type(recipe.config_class, field))
        except cfg.ConfigError:
            return False

    return {**{name: field for name, field in SHORTCUTS.items() if has(field)}, **recipe.shortcuts}


def training_shortcuts(recipe):
    """The shortcuts of the fields a run trains with (its eval section's left out): what a sweep's trials share."""
    return {name: field for name, field in shortcuts(recipe).items() if not field.startswith(f"{EVAL}.")}


def reads(recipe, mode, exports=False):
    """{shortcut: its dotted field} of the shortcuts `mode` takes: a training mode its training fields and the eval
    fields it uses (Recipe.reads: the evaluation after training, and an export's with `exports`), --mode=config
    every field; a mode that reads a trained run the fields of Recipe.reads[mode] (a name may set another field
    there: --batch_size sets eval.batch_size of --mode=eval)."""
    if mode == "config":
        return shortcuts(recipe)
    own = dict(recipe.reads.get(mode, {}))
    if mode not in TRAINING_MODES:
        return own
    if exports:
        own.update(recipe.reads.get("export", {}))
    every = shortcuts(recipe)
    return {**{name: every.get(name, field) for name, field in own.items()}, **training_shortcuts(recipe)}


def resolve(recipe, preset=None, source=None, overrides=(), given=None, model_dir=None, mode="train"):
    """The one place a run's final config is made, for every mode, from the run's record read once (`model_dir`: a
    path or the command's RunDir). A training mode (and config): recipe.base(preset (None: the small one),
    init_from, the record) < `source` (a file, a mapping, a typed config, or a list of them, each over the one
    before) < `overrides` ('model.num_layers=6' or (name, value)) < `given` (shortcuts by name: `reads(recipe,
    mode)` names their fields); a field the config class FOLLOWS takes the value of the one it follows unless asked
    for (zoo.core.config.follow); train.mixed_precision decided (`choose_dtype`); then recipe.finish. A mode that
    reads a trained run: the record's config (the recipe's defaults where there is none yet: the mode then says
    so) with its eval section and PER_COMMAND fields at their defaults, and `given` over them."""
    folder = run_dir.opened(model_dir) if model_dir else None
    names = shortcuts(recipe) if mode in (*TRAINING_MODES, "config") else reads(recipe, mode)
    given = dict(given or {})
    unknown = [name for name in given if name not in names]
    if unknown:
        near = difflib.get_close_matches(unknown[0], list(names), n=3)
        raise cfg.ConfigError(f"{unknown[0]} is not a setting of {recipe.name} runs"
                              f"{': did you mean ' + ', '.join(near) + '?' if near else ''} (the config's fields are "
                              "in docs/configuration.md; set any of them with config= or overrides=).")
    fields = cfg.nested({names[name]: value for name, value in given.items()})
    record = folder.read_record(recipe.name, recipe.config_class) if folder is not None else None
    if mode not in (*TRAINING_MODES, "config"):
        defaults = cfg.to_dict(recipe.base(None, None, None))
        trained = cfg.to_dict(record.config) if record else defaults
        trained.pop(EVAL, None)  # the command's evaluation, not the one after training
        for section, name in (field.split(".") for field in PER_COMMAND):
            if name in trained.get(section, {}):
                trained[section][name] = defaults[section][name]
        return cfg.from_dict(recipe.config_class, cfg.merge(trained, fields))
    layers = [record_module.source_layer(item, recipe.name, recipe.config_class)
              for item in (source if isinstance(source, list) else [source])]
    asked = cfg.follow(recipe.config_class, cfg.merge(*layers, cfg.nested(override_fields(overrides)), fields))
    asked = cfg.merge(asked, {"train": choose_dtype(asked, given, record)})
    setup = asked.get("setup") if isinstance(asked.get("setup"), dict) else {}
    base = recipe.base(preset, setup.get("init_from"), record)
    config = cfg.from_dict(recipe.config_class, cfg.merge(cfg.to_dict(base), asked))
    return recipe.finish(config, base, mode) if recipe.finish is not None else config


def choose_dtype(asked, given, record):
    """{mixed_precision, precision_reason} of the run, decided here once: a shortcut's dtype, else a config's (file,
    mapping, override), else auto: this machine's, or the resumed run's own (`record`). A config's own
    precision_reason (a copied config.json's) is not this run's, so it is said anew."""
    train, setup = (asked.get(name) if isinstance(asked.get(name), dict) else {} for name in ("train", "setup"))
    wanted = given.get("mixed_precision", train.get("mixed_precision", UNSET["train.mixed_precision"]))
    kept = record is not None and wanted == "auto" and "train.mixed_precision" in record.fields
    resumed = record.config.train.mixed_precision if kept else None
    try:
        dtype, reason = precision.choose(wanted, resumed, tpu=setup.get("strategy") == "tpu")
    except ValueError as error:  # the dtype asked for: named as the field it sets
        raise cfg.ConfigError(f"train.{error}") from None
    if wanted != "auto" and "mixed_precision" not in given:
        reason = "set in the config (train.mixed_precision)"
    return {"mixed_precision": dtype, "precision_reason": reason}


def recorded_preset(preset, source, config):
    """The preset config.json records as the one the run started from: the one asked for; else, with a config
    source, the preset the last run record among them recorded (a run trained again from its config.json keeps
    it), or None (the source gave the model); else the recipes' default (small) unless setup.init_from's
    checkpoint gave the model's shape."""
    if preset is not None:
        return preset
    sources = [item for item in (source if isinstance(source, list) else [source]) if item is not None]
    if sources:
        recorded = [item.get("derived", {}).get("preset") for item in map(_mapping_of, sources)]
        return next((name for name in reversed(recorded) if name is not None), None)
    return None if getattr(config.setup, "init_from", None) else "small"


def _mapping_of(source):
    """A config source's mapping as given (a run record keeps its derived part), {} for a typed config."""
    if isinstance(source, (str, os.PathLike)):
        return cfg.read_file(os.fspath(source))
    return source if isinstance(source, dict) else {}


def override_fields(overrides):
    """{dotted field: value} of `overrides` ('model.num_layers=6' or (name, value)); a field overridden twice is
    refused, naming both values, rather than one of them dropped."""
    pairs = [cfg.parse_override(item) if isinstance(item, str) else tuple(item) for item in overrides]
    fields = {}
    for name, value in pairs:
        if name in fields:
            raise cfg.ConfigError(f"{name} is overridden twice ({str(fields[name])!r} and {str(value)!r}): give it "
                                  "once.")
        fields[name] = value
    return fields


def start_run(folder, recipe, config, write_tokenizer, last_file, chief, derived=()):
    """The run's config: `config`, with the model of the record the run folder `folder` (a RunDir) holds when
    resuming; its tokenizer written now by the chief (`write_tokenizer()`) or waited for by the other workers (its
    `last_file`). A resumed run whose record differs from `config` is refused, naming each dotted field (less
    CHANGEABLE, the eval section, and the `derived` fields, which come from the data: the LM's model.vocab_size,
    and the fields a record of format 1 did not hold)."""
    existing = check_settings(folder, recipe, config, derived)
    if existing is not None:
        config = dataclasses.replace(config, model=existing.config.model)
        if folder.holds(last_file):
            return config
    if chief:
        write_tokenizer()
    else:
        folder.wait_for(last_file)
    return config


def check_settings(folder, recipe, config, derived=(), resume=None):
    """The record of the run `folder` holds (None: a new run), refused when its settings differ from `config`'s (as
    `start_run` compares them) or, with `resume` (zoo.runs.run_dir.RESUME_KEYS' values), when it cannot resume as
    asked (as the driver's record_training refuses it): a recipe with long work before start_run (a teacher's
    labelling) calls it first."""
    existing = folder.read_record(recipe, type(config))
    if existing is None:
        return None
    if resume:
        run_dir.check_resumable(existing.derived, resume)
    names = tuple(record_module.dotted_names(cfg.to_dict(config)))
    skip = tuple(name for name in names if name not in existing.fields or name.startswith(f"{EVAL}."))
    differ = cfg.differences(existing.config, config, skip=CHANGEABLE + tuple(derived) + skip)
    if differ:
        raise RunDirError(f"{folder.path} holds a {recipe} run with other settings ({'; '.join(differ)}): resume it "
                          "with the same config, or use another --model_dir.")
    return existing


def check_same_files(folder, recipe, cls, digest):
    """A resumed run must read the files it started with (`digest`: zoo.data.sources.files_digest of them, None
    for a built-in dataset): a changed file is refused, not trained on. `folder`: the run's RunDir."""
    existing = folder.read_record(recipe, cls) if digest else None
    started = existing.derived.get("files", {}).get("digest") if existing else None
    if started and started != digest:
        raise RunDirError(f"The files of {existing.config.data.dataset} changed since {folder.path} started training "
                          "on them: resuming would read other data. Restore them, or train in another --model_dir.")


def with_epochs(config, epochs, num_examples, per_batch=None):
    """`config` with train_steps covering `epochs` passes over `num_examples` examples, `per_batch` (default:
    config.batch_size) a step (if epochs is given); an epochs too small for one step, or too large to count, is
    refused. A warm-up longer than the training is said in the log."""
    if epochs is not None:
        per_batch = per_batch or config.batch_size
        steps = epochs * num_examples / per_batch
        if not math.isfinite(steps):
            raise ValueError(f"epochs={epochs} makes more steps than can be counted: give fewer epochs.")
        if round(steps) < 1:
            raise ValueError(f"epochs={epochs} is less than one step: {num_examples} examples make "
                             f"{num_examples / per_batch:.2f} steps of {per_batch} a pass. Give at least "
                             f"epochs={per_batch / num_examples:.3g} (one step), or train_steps.")
        config = dataclasses.replace(config, train_steps=round(steps))
    if config.warmup_steps > config.train_steps:  # the learning rate would never reach its peak
        print(f"Warning: train.warmup_steps={config.warmup_steps} is longer than training's {config.train_steps} "
              f"steps: the learning rate rises to only {config.train_steps / config.warmup_steps:.2g} of "
              f"train.learning_rate={config.learning_rate:g} by the last step. Give a shorter train.warmup_steps.",
              flush=True)
    return config
