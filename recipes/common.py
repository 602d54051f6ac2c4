"""Flags every recipe shares, and the checks and error handling around a recipe's run.

Importing this module defines the flags; a recipe's `main()` reads them once
into frozen configs (`train_config()`) and passes those down.
"""

import contextlib
import dataclasses
import json
import os

# TensorFlow's BFC allocator for CPU tensors: it keeps the memory of one step for the next, where
# the default allocator maps and zero-fills large tensors afresh each time (page faults took over a
# third of a training run's CPU time here, and the zoo's settings doubled tokens/s:
# benchmarks/allocator.py). Read when TensorFlow first allocates, so set before any op runs;
# ZOO_TF_ALLOCATOR=1 leaves TensorFlow's default.
if os.environ.get("ZOO_TF_ALLOCATOR") != "1":
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")

from absl import flags  # noqa: E402

from zoo import precision  # noqa: E402
from zoo.distribute import STRATEGIES, is_chief  # noqa: E402
from zoo.optimization import SCHEDULES  # noqa: E402
from zoo.run_dir import RunDir, RunDirError  # noqa: E402
from zoo.training import TrainConfig  # noqa: E402

flags.DEFINE_string("dataset", None, "Dataset name, or tfds:<catalog name> for a TensorFlow Datasets set.")
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

flags.register_validator("epochs", lambda value: value is None or value > 0, "--epochs must be positive.")
FLAGS = flags.FLAGS


def train_config(defaults):
    """TrainConfig from the recipe's defaults overridden by any flag the user set,
    and --epochs (None unless given; turn it into steps with `with_epochs`)."""
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
    return config, FLAGS.epochs


def profile_range(values):
    """--profile_steps as (first, last)."""
    try:
        first, last = (int(v) for v in values)
    except ValueError:
        given = ",".join(values)
        raise ValueError(f"--profile_steps={given} must be two step numbers, first,last (e.g. 11,20).") from None
    return first, last


def averaged():
    """--average_checkpoints, or 1 where the flags are not parsed (a recipe's functions called from Python)."""
    return FLAGS.average_checkpoints if FLAGS.is_parsed() else 1


def preset_config(presets, preset, **overrides):
    """`presets[preset]` with the fields given (not None) replaced; a clear error for an unknown name."""
    if preset not in presets:
        raise ValueError(f"Unknown preset {preset!r}: use one of {sorted(presets)}.")
    overrides = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(presets[preset], **overrides)


def with_epochs(config, epochs, num_examples):
    """`config` with train_steps covering `epochs` passes over `num_examples` (if epochs is given)."""
    if epochs is None:
        return config
    return dataclasses.replace(config, train_steps=max(1, round(epochs * num_examples / config.batch_size)))


TRAINING_MODES = ("train", "train_and_eval")
# Besides training (and the evaluation and export that follow it): eval writes metrics.json and its
# summaries, explain its pictures.
WRITING_MODES = (*TRAINING_MODES, "eval", "explain")


def hold_model_dir(mode, strategy=None):
    """A context that holds --model_dir (`RunDir.hold`) while `mode` writes there: the WRITING_MODES,
    and an export into a folder inside the model folder. The other modes only read it (generate,
    translate, an export elsewhere), and of a multi-worker job only the chief writes there."""
    model_dir, export_dir = FLAGS.model_dir, FLAGS.export_dir
    exports_inside = mode == "export" and bool(export_dir) and inside(export_dir, model_dir)
    if not (mode in WRITING_MODES or exports_inside) or (strategy is not None and not is_chief(strategy)):
        return contextlib.nullcontext()
    run_dir = RunDir(model_dir)
    run_dir.read_metrics()  # a damaged metrics.json is named now, not after the work that would update it
    return run_dir.hold(create=mode in TRAINING_MODES)


def inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def check_directories():
    """--model_dir and --export_dir name folders (made if missing), not files; --average_checkpoints >= 1."""
    if FLAGS.average_checkpoints < 1:
        raise ValueError(f"--average_checkpoints={FLAGS.average_checkpoints} must be at least 1 (1: the newest alone).")
    for name in ("model_dir", "export_dir"):
        path = getattr(FLAGS, name)
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise RunDirError(f"--{name}={path} is a file, not a folder: give a folder path (it is made if missing).")


LOST_WORKER_STATUS = 75  # EX_TEMPFAIL: start the workers again and the run resumes


def lost_worker_message(error, own_task=None):
    """The one line for a multi-worker run whose cluster lost a task: which one (the tasks the error
    names, less `own_task`, e.g. "/job:worker/task:0"), and what to do."""
    import re

    named = {re.sub(r"/replica:\d+", "", t) for t in re.findall(r"/job:\w+(?:/replica:\d+)?/task:\d+", str(error))}
    tasks = sorted(named - {own_task})
    first = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
    who = f"lost {', '.join(tasks)}" if tasks else "lost a worker"
    return (
        f"the cluster {who} ({type(error).__name__}: {first}). Start all the workers again with the same flags: "
        f"they resume from the last checkpoint in --model_dir."
    )


def own_task():
    """This process's task in TF_CONFIG, as "/job:<type>/task:<index>", or None."""
    try:
        task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
        return f"/job:{task['type']}/task:{task['index']}"
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def run(main):
    """absl's app.run, with the errors a user can fix shown as one clear line
    (exit status 2) instead of a traceback; ZOO_DEBUG=1 shows the traceback.
    A multi-worker run that loses a worker ends with one line naming it (exit status 75)."""
    import sys

    import tensorflow as tf
    from absl import app, logging

    from zoo.checkpoints import CheckpointError
    from zoo.datasets import DatasetError
    from zoo.training import NonFiniteLossError

    def guarded(argv):
        logging.set_verbosity(logging.WARNING)
        try:
            check_directories()
            return main(argv)
        except (DatasetError, RunDirError, CheckpointError, FileNotFoundError, ValueError, NonFiniteLossError) as error:
            if os.environ.get("ZOO_DEBUG"):
                raise
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)
        except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.DeadlineExceededError) as error:
            # What a collective or the coordination service raises when a peer stops answering.
            if FLAGS.strategy != "multi_worker_mirrored" or os.environ.get("ZOO_DEBUG"):
                raise
            sys.stdout.flush()
            print(f"error: {lost_worker_message(error, own_task())}", file=sys.stderr, flush=True)
            os._exit(LOST_WORKER_STATUS)  # TensorFlow's cluster shutdown would wait for the lost task

    app.run(guarded)
