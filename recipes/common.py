"""Flags every recipe shares, and the run-directory bookkeeping around them.

Importing this module defines the flags; a recipe's `main()` reads them once
into frozen configs (`train_config()`) and passes those down.
"""

import dataclasses
import json
import os

from absl import flags

from zoo.distribute import STRATEGIES
from zoo.training import PRECISIONS, TrainConfig

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"

flags.DEFINE_string("dataset", None, "Dataset name, or tfds:<catalog name> for a TensorFlow Datasets set.")
flags.DEFINE_string("preset", "small", "Model preset (see the recipe's model file for the list).")
flags.DEFINE_string("model_dir", None, "Run directory: checkpoints, tokenizer, config.json, metrics.json, TensorBoard.")
flags.DEFINE_string("export_dir", None, "Where to export in TF Serving's layout (<export_dir>/<version>/).")
flags.DEFINE_integer("train_steps", None, "Training steps (global batches). Default: the recipe's, or from --epochs.")
flags.DEFINE_float("epochs", None, "Train for this many passes over the training split instead of --train_steps.")
flags.DEFINE_integer("batch_size", None, "Global batch size in sequences (split across replicas).")
flags.DEFINE_float("learning_rate", None, "Peak learning rate of the warm-up / inverse-sqrt schedule.")
flags.DEFINE_integer("warmup_steps", None, "Linear warm-up steps of the learning-rate schedule.")
flags.DEFINE_float("label_smoothing", None, "Label smoothing of the cross-entropy.")
flags.DEFINE_float("clip_norm", None, "Clip the global gradient norm to this value (0 = off).")
flags.DEFINE_enum("strategy", "one_device", STRATEGIES, "tf.distribute strategy.")
flags.DEFINE_integer("cpu_replicas", 0, "Split the CPU into this many logical devices (tests mirrored on CPU).")
flags.DEFINE_string("tpu", None, "TPU address or name, for --strategy=tpu.")
flags.DEFINE_bool("jit_compile", False, "Compile the per-replica step with XLA.")
flags.DEFINE_enum("mixed_precision", "float32", list(PRECISIONS), "Compute dtype (variables stay float32).")
flags.DEFINE_integer("checkpoint_every", None, "Save a checkpoint every this many steps.")
flags.DEFINE_integer("log_every", None, "Report progress and TensorBoard summaries every this many steps.")
flags.DEFINE_integer("max_examples", None, "Train on at most this many training examples (quick runs).")
flags.DEFINE_integer("seed", 0, "Seed for initialization, data order and the tokenizer's sample.")

FLAGS = flags.FLAGS


class RunDirError(ValueError):
    """A model_dir that cannot be used as asked; the message says why and what to do."""


def train_config(defaults, num_examples=None):
    """TrainConfig from the recipe's defaults overridden by any flag the user set."""
    overrides = {
        name: getattr(FLAGS, name)
        for name in ("train_steps", "batch_size", "learning_rate", "warmup_steps", "label_smoothing")
        + ("clip_norm", "checkpoint_every", "log_every")
        if getattr(FLAGS, name) is not None
    }
    overrides.update(jit_compile=FLAGS.jit_compile, mixed_precision=FLAGS.mixed_precision, seed=FLAGS.seed)
    config = dataclasses.replace(defaults, **overrides)
    if FLAGS.epochs is not None:
        if FLAGS.train_steps is not None:
            raise ValueError("Give --train_steps or --epochs, not both.")
        if num_examples is None:
            raise ValueError("--epochs needs the training split's size.")
        steps = max(1, round(FLAGS.epochs * num_examples / config.batch_size))
        config = dataclasses.replace(config, train_steps=steps)
    return config


def read_run(model_dir, recipe):
    """The config.json of a run directory, checked to belong to `recipe`; None if absent."""
    path = os.path.join(model_dir, CONFIG_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        run = json.load(f)
    if run.get("recipe") != recipe:
        raise RunDirError(
            f"{model_dir} holds a {run.get('recipe')!r} run, not a {recipe!r} one: choose another --model_dir."
        )
    return run


def require_run(model_dir, recipe):
    if not model_dir:
        raise RunDirError("--model_dir is required.")
    run = read_run(model_dir, recipe)
    if run is None:
        raise RunDirError(f"{model_dir} holds no trained {recipe!r} run ({CONFIG_FILE} missing): train there first.")
    return run


def write_json(model_dir, name, data):
    """Writes model_dir/name atomically."""
    path = os.path.join(model_dir, name)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=2, default=str)
    os.replace(path + ".tmp", path)


def update_metrics(model_dir, **sections):
    path = os.path.join(model_dir, METRICS_FILE)
    metrics = {}
    if os.path.exists(path):
        with open(path) as f:
            metrics = json.load(f)
    metrics.update(sections)
    write_json(model_dir, METRICS_FILE, metrics)
    return metrics


def run(main):
    """absl's app.run, with the errors a user can fix shown as one clear line
    (exit status 2) instead of a traceback; ZOO_DEBUG=1 shows the traceback."""
    import sys

    from absl import app, logging

    from zoo.datasets import DatasetError

    def guarded(argv):
        logging.set_verbosity(logging.WARNING)
        try:
            return main(argv)
        except (DatasetError, RunDirError, FileNotFoundError, ValueError) as error:
            if os.environ.get("ZOO_DEBUG"):
                raise
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)

    app.run(guarded)
