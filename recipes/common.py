"""Flags every recipe shares, read once into frozen settings (`run_settings`).

Importing this module defines the flags. A recipe's `config_from_flags` (recipes.driver) calls
`run_settings` and reads its own flags beside; no other function reads FLAGS.
"""

import dataclasses
import os

# TensorFlow's BFC allocator for CPU tensors keeps the memory of one step for the next, where the
# default allocator maps and zero-fills large tensors afresh each step (benchmarks/allocator.py
# measures both). Read when TensorFlow first allocates, so set before any op runs;
# ZOO_TF_ALLOCATOR=1 leaves TensorFlow's default.
if os.environ.get("ZOO_TF_ALLOCATOR") != "1":
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")

from absl import flags  # noqa: E402

from zoo.training import precision  # noqa: E402
from zoo.training.distribute import STRATEGIES  # noqa: E402
from zoo.training.optimization import SCHEDULES  # noqa: E402
from zoo.runs.run_dir import RunDir, RunDirError  # noqa: E402
from zoo.training.config import TrainConfig  # noqa: E402

flags.DEFINE_string("dataset", None, "Dataset name, tfds:<catalog name> for a TensorFlow Datasets set, or your own "
                    "files as FORM:PATTERN (csv:, tsv:, jsonl:, folder:, text:; globs, .gz and {split} allowed).")
flags.DEFINE_string("preset", "small", "Model preset (see the recipe's model file for the list).")
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

flags.register_validator("epochs", lambda value: value is None or value > 0, "--epochs must be positive.")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What a recipe's run takes from the flags every recipe shares."""

    mode: str
    model_dir: str
    export_dir: str | None
    train: TrainConfig | None  # None unless the mode trains
    epochs: float | None  # --epochs, turned into train.train_steps once the data is read (`with_epochs`)
    max_examples: int | None
    batch_size: int | None  # --batch_size as given (a recipe's evaluation batch defaults to its own)
    average_checkpoints: int
    seed: int
    strategy: str  # --strategy, --cpu_replicas and --tpu: zoo.training.distribute.make_strategy's arguments
    cpu_replicas: int
    tpu: str | None

    @property
    def training(self):
        return self.mode in TRAINING_MODES

    @property
    def evaluating(self):
        return self.mode in ("eval", "train_and_eval")

    @property
    def exporting(self):
        return self.mode == "export" or (self.training and bool(self.export_dir))


def run_settings(defaults):
    """RunSettings from the shared flags; with a training mode, its TrainConfig: the recipe's
    `defaults` overridden by any flag the user set."""
    if FLAGS.batch_size is not None and FLAGS.batch_size < 1:
        raise ValueError(f"--batch_size={FLAGS.batch_size} must be at least 1.")
    training = FLAGS.mode in TRAINING_MODES
    return RunSettings(
        mode=FLAGS.mode, model_dir=FLAGS.model_dir, export_dir=FLAGS.export_dir,
        train=train_config(defaults) if training else None, epochs=FLAGS.epochs, max_examples=FLAGS.max_examples,
        batch_size=FLAGS.batch_size, average_checkpoints=FLAGS.average_checkpoints, seed=FLAGS.seed,
        strategy=FLAGS.strategy, cpu_replicas=FLAGS.cpu_replicas, tpu=FLAGS.tpu,
    )


def train_config(defaults):
    """TrainConfig from the recipe's defaults overridden by any flag the user set, in the dtype
    --mixed_precision chooses (a resumed run keeps its own)."""
    overrides = {
        name: getattr(FLAGS, name)
        for name in ("train_steps", "batch_size", "learning_rate", "warmup_steps", "schedule", "label_smoothing")
        + ("weight_decay", "clip_norm", "checkpoint_every", "keep_checkpoints", "log_every")
        if getattr(FLAGS, name) is not None
    }
    if FLAGS.epochs is not None and FLAGS.train_steps is not None:
        raise ValueError("Give --train_steps or --epochs, not both.")
    keep = overrides.get("keep_checkpoints", defaults.keep_checkpoints)
    if FLAGS.average_checkpoints > keep:
        raise ValueError(f"--average_checkpoints={FLAGS.average_checkpoints} needs at least that many checkpoints "
                         f"kept: train with --keep_checkpoints={FLAGS.average_checkpoints} (now {keep}).")
    if FLAGS.profile_steps is not None:
        overrides["profile_steps"] = profile_range(FLAGS.profile_steps)
    resumed = RunDir(FLAGS.model_dir).trained_dtype()
    dtype, reason = precision.choose(FLAGS.mixed_precision, resumed, tpu=FLAGS.strategy == "tpu")
    config = dataclasses.replace(defaults, **overrides, jit_compile=FLAGS.jit_compile, mixed_precision=dtype,
                                 precision_reason=reason, seed=FLAGS.seed)
    print(f"Compute dtype: {dtype} ({reason}).", flush=True)
    return config


def profile_range(values):
    """--profile_steps as (first, last)."""
    try:
        first, last = (int(v) for v in values)
    except ValueError:
        given = ",".join(values)
        raise ValueError(f"--profile_steps={given} must be two step numbers, first,last (e.g. 11,20).") from None
    return first, last


def preset_config(presets, preset, **overrides):
    """`presets[preset]` with the fields given (not None) replaced; a clear error for an unknown name."""
    if preset not in presets:
        raise ValueError(f"Unknown preset {preset!r}: use one of {sorted(presets)}.")
    overrides = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(presets[preset], **overrides)


def with_epochs(config, epochs, num_examples, per_batch=None):
    """`config` with train_steps covering `epochs` passes over `num_examples` examples, `per_batch`
    (default: config.batch_size) a step (if epochs is given); an --epochs too small for one step is refused."""
    if epochs is None:
        return config
    per_batch = per_batch or config.batch_size
    steps = round(epochs * num_examples / per_batch)
    if steps < 1:
        raise ValueError(f"--epochs={epochs} is less than one step: {num_examples} examples make "
                         f"{num_examples / per_batch:.2f} steps of {per_batch} a pass. Give at least "
                         f"--epochs={per_batch / num_examples:.3g} (one step), or --train_steps.")
    return dataclasses.replace(config, train_steps=steps)


TRAINING_MODES = ("train", "train_and_eval")
SHARED_MODES = ("train", "eval", "train_and_eval", "export")


def define_mode(*own):
    """--mode: the modes every recipe has, and the recipe's `own` (generate, translate, explain)."""
    flags.DEFINE_enum("mode", "train_and_eval", [*SHARED_MODES, *own], "What to do.")


def start_run(model_dir, recipe, fresh, write_tokenizer, last_file, chief, derived=()):
    """The run's record: the one `model_dir` holds when resuming, else `fresh` (the record these flags make);
    its tokenizer written now by the chief (`write_tokenizer()`) or waited for by the other workers (its
    `last_file`). A resumed run whose record disagrees with `fresh` is refused, naming the keys (and model
    fields) that differ; `derived` names model fields that come from the data (the LM's vocab_size)."""
    run_dir = RunDir(model_dir)
    run = run_dir.read_run(recipe)
    if run is not None:
        differ = _differences(run, fresh, derived)
        if differ:
            raise RunDirError(f"{model_dir} holds a {recipe} run with other settings ({'; '.join(differ)}): resume "
                              "it with the same flags, or use another --model_dir.")
        if run_dir.holds(last_file):
            return run
    if chief:
        write_tokenizer()
    else:
        run_dir.wait_for(last_file)
    return run or fresh


def _differences(run, fresh, derived):
    """'key: recorded -> asked' for every key of `fresh` the record holds otherwise (model fields one by one)."""
    differ = []
    for key, asked in fresh.items():
        recorded = run.get(key)
        if key == "model" and isinstance(recorded, dict) and isinstance(asked, dict):
            differ += [f"model.{k}: {recorded.get(k)!r} -> {v!r}" for k, v in asked.items()
                       if k not in derived and recorded.get(k) != v]
        elif recorded != asked:
            differ.append(f"{key}: {recorded!r} -> {asked!r}")
    return differ


def check_same_files(model_dir, recipe, digest):
    """A resumed run must read the files it started with (`digest`: zoo.data.cache.files_digest of them, None
    for a built-in dataset): a changed file is refused, not trained on."""
    run = RunDir(model_dir).read_run(recipe) if digest else None
    started = (run or {}).get("files", {}).get("digest")
    if started and started != digest:
        raise RunDirError(f"The files of {run['dataset']} changed since {model_dir} started training on them: "
                          "resuming would read other data. Restore them, or train in another --model_dir.")
