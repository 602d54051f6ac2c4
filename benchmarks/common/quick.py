"""`--quick`, every benchmark program's smoke run: a tiny slice of the data, a few training steps, short timings,
its sections written to --quick_report (a temporary file), never to BENCHMARKS.md. tests/benchmarks/test_smoke.py
runs each program so, so that none can rot unseen until someone needs its figure."""

import os
import tempfile

from absl import flags

FLAGS = flags.FLAGS

# What a quick run's recipes train: the tiny preset for two steps, a checkpoint at the end; a classifier on the
# first EXAMPLES examples with a vocabulary of VOCABULARY pieces; a pretraining on PRETRAINING's corpus and sizes.
TRAINING = {"preset": "tiny", "train_steps": "2", "checkpoint_every": "2", "warmup_steps": "1", "log_every": "1"}
EXAMPLES, VOCABULARY = 200, 300
PRETRAINING = {"corpus": "sst2", "vocab_size": "1000", "sequence_length": "64", "batch_size": "8"}


def define(values=FLAGS):
    """Defines --quick and --quick_report on `values` unless a program imported here already did (several
    benchmark modules share one process in the tests)."""
    if "quick" in values:
        return
    flags.DEFINE_bool("quick", False, "A smoke run: a tiny slice of the data, a few training steps, short timings; "
                      "its sections go to --quick_report, never to BENCHMARKS.md.", flag_values=values)
    flags.DEFINE_string("quick_report", None, "Where --quick writes its sections (default: benchmarks_quick.md in "
                        "the temporary folder).", flag_values=values)


define()


def active(values=FLAGS):
    """Whether this is a --quick run (read from the flag itself: a program's flags may be parsed or not yet)."""
    return "quick" in values and bool(values["quick"].value)


def shrink(values=FLAGS, **small):
    """With --quick, the flags named in `small` take those values unless given on the command line."""
    if not active(values):
        return
    for name, value in small.items():
        if not values[name].present:
            values[name].value = value


def report_path(values=FLAGS):
    return values["quick_report"].value or os.path.join(tempfile.gettempdir(), "benchmarks_quick.md")


def folder(name):
    """A fresh temporary folder for a quick run's runs (never a benchmark's real run folder under runs/)."""
    return tempfile.mkdtemp(prefix=f"bench_quick_{name}_")


def training(flags_, values=FLAGS, **small):
    """`flags_` (recipe flags) with TRAINING's and `small`'s values put in and any --epochs left out (the recipes
    take --epochs or --train_steps), when this is a --quick run; else `flags_` as they are. A run that starts
    from a checkpoint (--init_from) keeps the checkpoint's model: no --preset."""
    if not active(values):
        return list(flags_)
    from benchmarks.common.recipe_flags import with_values

    small = {**TRAINING, **small}
    if any(f.startswith("--init_from=") for f in flags_):
        del small["preset"]
    return with_values([f for f in flags_ if not f.startswith("--epochs=")], small)
