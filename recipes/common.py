"""Flags every recipe shares, read once: the run's typed config (`run_config`: the preset < --config=FILE <
--config.FIELD.PATH=VALUE < the shortcut flags) and the shared settings of the invocation (`run_settings`).

Importing this module defines the flags. A recipe's `config_from_flags` (recipes.driver) calls these and
reads its own flags beside; no other function reads FLAGS.
"""

import dataclasses
import math
import os

# TensorFlow's BFC allocator for CPU tensors keeps the memory of one step for the next, where the
# default allocator maps and zero-fills large tensors afresh each step (benchmarks/allocator.py
# measures both). Read when TensorFlow first allocates, so set before any op runs;
# ZOO_TF_ALLOCATOR=1 leaves TensorFlow's default.
if os.environ.get("ZOO_TF_ALLOCATOR") != "1":
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")

from absl import app, flags  # noqa: E402

from zoo.core import config as cfg  # noqa: E402
from zoo.runs import record  # noqa: E402
from zoo.training import precision  # noqa: E402
from zoo.training.distribute import STRATEGIES  # noqa: E402
from zoo.training.optimization import SCHEDULES  # noqa: E402
from zoo.runs.run_dir import RunDir, RunDirError  # noqa: E402

flags.DEFINE_string("dataset", None, "Dataset name, tfds:<catalog name> for a TensorFlow Datasets set, or your own "
                    "files as FORM:PATTERN (csv:, tsv:, jsonl:, folder:, text:; globs, .gz and {split} allowed).")
flags.DEFINE_string("preset", "small", "Model preset: the config's base (--mode=config --preset=NAME prints it).")
flags.DEFINE_string("config", None, "A YAML or JSON file of config fields, nested as in config.json (a run's own "
                    "config.json is one), over the preset. --config.FIELD.PATH=VALUE sets one field over it, e.g. "
                    "--config.model.num_layers=6; the shortcut flags (--learning_rate ...) win over both. "
                    "--mode=config prints the result (docs/configuration.md lists every field).")
flags.DEFINE_string("model_dir", None, "Run directory: checkpoints, tokenizer, config.json, metrics.json, TensorBoard.")
flags.DEFINE_string("export_dir", None, "Where to export in TF Serving's layout (<export_dir>/<version>/).")
flags.DEFINE_integer("train_steps", None, "Training steps (global batches). Default: the recipe's, or from --epochs.")
flags.DEFINE_float("epochs", None, "Train for this many passes over the training split instead of --train_steps.")
flags.DEFINE_integer("batch_size", None, "Global batch size in sequences (split across replicas).")
flags.DEFINE_float("learning_rate", None, "Peak learning rate of the warm-up schedule.")
flags.DEFINE_enum("schedule", None, list(SCHEDULES), "Learning rate after warm-up: 1/sqrt(step) decay, or a cosine "
                  "annealed to zero at the last step. Default: the recipe's (inverse_sqrt).")
flags.DEFINE_integer("warmup_steps", None, "Linear warm-up steps of the learning-rate schedule.")
flags.DEFINE_float("label_smoothing", None, "Label smoothing of the cross-entropy.")
flags.DEFINE_float("weight_decay", None, "AdamW's decoupled weight decay (biases and LayerNorm excluded); 0 = Adam.")
flags.DEFINE_float("clip_norm", None, "Clip the global gradient norm to this value (0 = off).")
flags.DEFINE_enum("strategy", "one_device", STRATEGIES, "tf.distribute strategy.")
flags.DEFINE_integer("cpu_replicas", 0, lower_bound=0,
                     help="Split the CPU into this many logical devices (tests mirrored on CPU).")
flags.DEFINE_string("tpu", None, "TPU address or name, for --strategy=tpu.")
flags.DEFINE_bool("jit_compile", False, "Compile the per-replica step with XLA.")
flags.DEFINE_enum("mixed_precision", "auto", list(precision.CHOICES), "Compute dtype (variables stay float32). auto: "
                  "bfloat16 where the device runs it fast (a GPU of compute capability 8.0 or more, a TPU, a CPU with "
                  "avx512_bf16 or amx_bf16), float32 elsewhere, and a resumed run's own; printed and kept in config.json.")
flags.DEFINE_integer("checkpoint_every", None, "Save a checkpoint every this many steps.")
flags.DEFINE_integer("keep_checkpoints", None, "Keep this many of the newest checkpoints (default 3).")
flags.DEFINE_integer("average_checkpoints", 1, "Every mode that loads the trained model (eval, export, generate, "
                     "translate, explain) loads the mean of the newest this many checkpoints' weights (fairseq's "
                     "checkpoint averaging); train with --keep_checkpoints at least as large.")
flags.DEFINE_integer("log_every", None, "Report progress and TensorBoard summaries every this many steps.")
flags.DEFINE_list("profile_steps", None, "Trace these training steps with TensorFlow's profiler, e.g. 11,20 "
                  "(first,last: after the first step, which traces the loop, and between two checkpoints) into "
                  "<model_dir>/train/plugins/profile (TensorBoard with tensorboard-plugin-profile; "
                  "benchmarks/traces.py reads it).")
flags.DEFINE_integer("max_examples", None, lower_bound=1,
                     help="Train on at most this many training examples (quick runs).")
flags.DEFINE_integer("seed", 0, "Seed for initialization, data order and the tokenizer's sample.")
flags.DEFINE_string("text_column", "text", "Your own data (csv:, tsv:, jsonl:): the column or key of the text.")
flags.DEFINE_string("label_column", "label", "Your own data (csv:, tsv:, jsonl:): the column or key of the label.")
flags.DEFINE_enum("bad_rows", "error", ["error", "skip"], "Your own data: refuse rows that do not parse (naming "
                  "the first few, file:line), or skip them (counted in the log and config.json).")

flags.register_validator("epochs", lambda value: value is None or 0 < value < math.inf,
                         "--epochs must be positive and finite.")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What one invocation of a recipe takes from the flags every recipe shares: the mode, its folders and,
    when it trains (or prints the config), the run's typed config."""

    mode: str
    model_dir: str | None
    export_dir: str | None
    config: object | None  # the recipe's typed run config; None unless the mode trains or prints it
    epochs: float | None  # --epochs, turned into train.train_steps once the data is read (`with_epochs`)
    batch_size: int | None  # --batch_size as given (a recipe's evaluation batch defaults to its own)
    average_checkpoints: int
    seed: int  # --seed: sampling's in the modes that generate (training's is config.train.seed)

    @property
    def train(self):
        return self.config.train if self.config is not None and self.training else None

    @property
    def max_examples(self):
        return self.config.data.max_examples if self.config is not None else None

    @property
    def training(self):
        return self.mode in TRAINING_MODES

    @property
    def evaluating(self):
        return self.mode in ("eval", "train_and_eval")

    @property
    def exporting(self):
        return self.mode == "export" or (self.training and bool(self.export_dir))


def run_settings(config=None):
    """RunSettings from the shared flags, holding `config` (the run's typed config, from `run_config`)."""
    if FLAGS.batch_size is not None and FLAGS.batch_size < 1:
        raise ValueError(f"--batch_size={FLAGS.batch_size} must be at least 1.")
    return RunSettings(mode=FLAGS.mode, model_dir=FLAGS.model_dir, export_dir=FLAGS.export_dir, config=config,
                       epochs=FLAGS.epochs, batch_size=FLAGS.batch_size,
                       average_checkpoints=FLAGS.average_checkpoints, seed=FLAGS.seed)


OVERRIDES = []  # the --config.FIELD.PATH=VALUE arguments, taken out before absl parses the rest (`parse_flags`)
TRAIN_SHORTCUTS = ("train_steps", "batch_size", "learning_rate", "warmup_steps", "schedule", "label_smoothing",
                   "weight_decay", "clip_norm", "checkpoint_every", "keep_checkpoints", "log_every", "jit_compile",
                   "seed")
# Flag -> the config field (or fields) it sets, over the preset, --config and --config.FIELD.PATH=VALUE.
SHORTCUTS = {**{name: f"train.{name}" for name in TRAIN_SHORTCUTS}, "dataset": "data.dataset",
             "max_examples": "data.max_examples", "bad_rows": "data.bad_rows", "strategy": "setup.strategy",
             "cpu_replicas": "setup.cpu_replicas", "tpu": "setup.tpu"}


def parse_flags(argv):
    """absl's parser for every argument but --config.FIELD.PATH=VALUE, which absl cannot define: those go to
    OVERRIDES, read by `run_config`."""
    OVERRIDES[:] = [arg[len("--config."):] for arg in argv[1:] if arg.startswith("--config.")]
    return app.parse_flags_with_usage([arg for arg in argv if not arg.startswith("--config.")])


def run_config(cls, base, recipe, shortcuts=None):
    """The run's typed config (`cls`): `base(preset, init_from)` < --config=FILE < --config.FIELD.PATH=VALUE <
    the shortcut flags the user gave (SHORTCUTS and the recipe's own `shortcuts`). Without a dtype asked
    for anywhere, train.mixed_precision is --mixed_precision's choice (auto: this machine's, or a resumed run's)."""
    given = {}
    for flag, fields in {**SHORTCUTS, **(shortcuts or {})}.items():
        if FLAGS[flag].present:
            given.update({field: FLAGS[flag].value for field in (fields if isinstance(fields, tuple) else (fields,))})
    if FLAGS.profile_steps is not None:
        given["train.profile_steps"] = profile_range(FLAGS.profile_steps)
    source = record.source_layer(FLAGS.config, recipe, cls)
    overrides = [cfg.parse_override(item) for item in OVERRIDES]
    asked = cfg.merge(source, cfg.nested(dict(overrides))).get("train", {})
    if FLAGS["mixed_precision"].present or not isinstance(asked, dict) or "mixed_precision" not in asked:
        resumed = RunDir(FLAGS.model_dir).trained_dtype() if FLAGS.model_dir else None
        dtype, reason = precision.choose(FLAGS.mixed_precision, resumed, tpu=FLAGS.strategy == "tpu")
        given.update({"train.mixed_precision": dtype, "train.precision_reason": reason})
    config = record.resolve(cls, base, recipe, FLAGS.preset, source, overrides, cfg.nested(given))
    if FLAGS.average_checkpoints > config.train.keep_checkpoints and FLAGS.mode in TRAINING_MODES:
        raise ValueError(f"--average_checkpoints={FLAGS.average_checkpoints} needs at least that many checkpoints "
                         f"kept: train with --keep_checkpoints={FLAGS.average_checkpoints} (now "
                         f"{config.train.keep_checkpoints}).")
    if FLAGS.epochs is not None and FLAGS["train_steps"].present:
        raise ValueError("Give --train_steps or --epochs, not both.")
    if FLAGS.mode in TRAINING_MODES:
        print(f"Compute dtype: {config.train.mixed_precision} ({config.train.precision_reason}).", flush=True)
    return config


def profile_range(values):
    """--profile_steps as (first, last)."""
    try:
        first, last = (int(v) for v in values)
    except ValueError:
        given = ",".join(values)
        raise ValueError(f"--profile_steps={given} must be two step numbers, first,last (e.g. 11,20).") from None
    return first, last


def with_epochs(config, epochs, num_examples, per_batch=None):
    """`config` with train_steps covering `epochs` passes over `num_examples` examples, `per_batch`
    (default: config.batch_size) a step (if epochs is given); an --epochs too small for one step, or too large
    to count, is refused. A warm-up longer than the training is said in the log."""
    if epochs is not None:
        per_batch = per_batch or config.batch_size
        steps = epochs * num_examples / per_batch
        if not math.isfinite(steps):
            raise ValueError(f"--epochs={epochs} makes more steps than can be counted: give fewer epochs.")
        if round(steps) < 1:
            raise ValueError(f"--epochs={epochs} is less than one step: {num_examples} examples make "
                             f"{num_examples / per_batch:.2f} steps of {per_batch} a pass. Give at least "
                             f"--epochs={per_batch / num_examples:.3g} (one step), or --train_steps.")
        config = dataclasses.replace(config, train_steps=round(steps))
    warn_long_warmup(config)
    return config


def warn_long_warmup(config):
    """Says when the warm-up outlasts training: the learning rate would never reach its peak."""
    if config.warmup_steps > config.train_steps:
        print(f"Warning: --warmup_steps={config.warmup_steps} is longer than training's {config.train_steps} "
              f"steps: the learning rate rises to only {config.train_steps / config.warmup_steps:.2g} of "
              f"--learning_rate={config.learning_rate:g} by the last step. Give a shorter --warmup_steps.", flush=True)


TRAINING_MODES = ("train", "train_and_eval")
SHARED_MODES = ("train", "eval", "train_and_eval", "export", "config")


def define_mode(*own):
    """--mode: the modes every recipe has, and the recipe's `own` (generate, translate, explain)."""
    flags.DEFINE_enum("mode", "train_and_eval", [*SHARED_MODES, *own], "What to do (config: print the resolved "
                      "config as YAML and exit, writing nothing).")


# Fields a resumed run may change: how long and how fast it trains, what it logs, the split it evaluates and
# the devices (their number is checked with the derived replicas). Every other field must match the record.
CHANGEABLE = tuple(f"train.{name}" for name in (
    "train_steps", "learning_rate", "warmup_steps", "schedule", "label_smoothing", "weight_decay", "layer_decay",
    "clip_norm", "checkpoint_every", "keep_checkpoints", "log_every", "profile_steps", "jit_compile",
    "precision_reason")) + ("data.eval_split", "setup.strategy", "setup.cpu_replicas", "setup.tpu")


def start_run(model_dir, recipe, config, write_tokenizer, last_file, chief, derived=()):
    """The run's config: `config`, with the model of the record `model_dir` holds when resuming; its tokenizer
    written now by the chief (`write_tokenizer()`) or waited for by the other workers (its `last_file`). A
    resumed run whose record differs from `config` is refused, naming each dotted field (less CHANGEABLE and
    the `derived` fields, which come from the data: the LM's model.vocab_size)."""
    run_dir = RunDir(model_dir)
    existing = run_dir.read_record(recipe, type(config))
    if existing is not None:
        differ = cfg.differences(existing.config, config, skip=CHANGEABLE + tuple(derived))
        if differ:
            raise RunDirError(f"{model_dir} holds a {recipe} run with other settings ({'; '.join(differ)}): resume "
                              "it with the same config, or use another --model_dir.")
        config = dataclasses.replace(config, model=existing.config.model)
        if run_dir.holds(last_file):
            return config
    if chief:
        write_tokenizer()
    else:
        run_dir.wait_for(last_file)
    return config


def check_same_files(model_dir, recipe, cls, digest):
    """A resumed run must read the files it started with (`digest`: zoo.data.cache.files_digest of them, None
    for a built-in dataset): a changed file is refused, not trained on."""
    existing = RunDir(model_dir).read_record(recipe, cls) if digest else None
    started = existing.derived.get("files", {}).get("digest") if existing else None
    if started and started != digest:
        raise RunDirError(f"The files of {existing.config.data.dataset} changed since {model_dir} started training on "
                          "them: resuming would read other data. Restore them, or train in another --model_dir.")
