"""Flags every recipe shares, read once into the command's settings (`settings_from_flags`): the run's typed
config (the preset < --config=FILE ... < --config.FIELD.PATH=VALUE < the shortcut flags; a mode that reads a
trained run: its record < the shortcut flags that mode reads) and the invocation's mode and folders.

Importing this module defines the flags that are not config fields (--preset, --config, the folders, --epochs
...); a recipe's `define_flags` adds its --mode and its shortcut flags, made from its config (recipes.shortcuts),
the options of its modes (--beam_size, --prompt, --text ...) among them: fields of the config's eval section.
recipes.driver calls `settings_from_flags`, and no other function reads FLAGS. It reads only the flags the mode
uses (zoo.training.run_settings.reads), through `FLAGS` (a `Reads`), and a flag given that the mode never read is
refused: nothing given is dropped. A flag absl cannot parse is one `error:` line too, exit status 2
(`parse_flags`).
"""

import math
import os
import sys

# TensorFlow's BFC allocator for CPU tensors keeps the memory of one step for the next, where the
# default allocator maps and zero-fills large tensors afresh each step (benchmarks/allocator.py
# measures both). Read when TensorFlow first allocates, so set before any op runs;
# ZOO_TF_ALLOCATOR=1 leaves TensorFlow's default.
if os.environ.get("ZOO_TF_ALLOCATOR") != "1":
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")

from absl import app, flags  # noqa: E402

from recipes import shortcuts  # noqa: E402
from zoo.training import driver, run_settings  # noqa: E402

flags.DEFINE_string("preset", "small", "Model preset: the config's base (--mode=config --preset=NAME prints it).")
flags.DEFINE_multi_string("config", None, "A YAML or JSON file of config fields, nested as in config.json (a run's "
                          "own config.json is one), over the preset; given more than once, each file over the one "
                          "before. --config.FIELD.PATH=VALUE sets one field over them, e.g. "
                          "--config.model.num_layers=6; the shortcut flags (--learning_rate ...) win over all. "
                          "--mode=config prints the result (docs/configuration.md lists every field).")
flags.DEFINE_string("model_dir", None, "Run directory: checkpoints, tokenizer, config.json, metrics.json, TensorBoard.")
flags.DEFINE_string("export_dir", None, "Where to export in TF Serving's layout (<export_dir>/<version>/).")
flags.DEFINE_float("epochs", None, "Train for this many passes over the training split instead of --train_steps.")
flags.DEFINE_integer("average_checkpoints", 1, "Every mode that loads the trained model (eval, export, generate, "
                     "translate, explain) loads the mean of the newest this many checkpoints' weights (fairseq's "
                     "checkpoint averaging); train with --keep_checkpoints at least as large.")

flags.register_validator("epochs", lambda value: value is None or 0 < value < math.inf,
                         "--epochs must be positive and finite.")


class Reads:
    """absl's FLAGS, noting the name of each flag read (its value, or whether it was given): what a mode uses."""

    def __init__(self, values):
        self.values, self.names = values, set()

    def __getattr__(self, name):
        self.names.add(name)
        return getattr(self.values, name)

    def __getitem__(self, name):
        self.names.add(name)
        return self.values[name]

    def __contains__(self, name):
        return name in self.values


FLAGS = Reads(flags.FLAGS)  # the recipes read their flags through it (recipes/<name>.py: FLAGS = common.FLAGS)
OVERRIDES = []  # the --config.FIELD.PATH=VALUE arguments, taken out before absl parses the rest (`parse_flags`)


def parse_flags(argv):
    """absl's parser for every argument but --config.FIELD.PATH=VALUE, which absl cannot define: those go to
    OVERRIDES. A flag absl refuses (unknown, not of its type, out of its range) ends the program with one
    `error:` line, exit status 2, as every other bad argument does (docs/reliability.md)."""
    OVERRIDES[:] = [arg[len("--config."):] for arg in argv[1:] if arg.startswith("--config.")]
    try:
        return flags.FLAGS([arg for arg in argv if not arg.startswith("--config.")])
    except flags.Error as error:
        message = " ".join(str(error).split())
        print(f"error: {message} (--helpfull lists every flag)", file=sys.stderr, flush=True)
        sys.exit(2)


def given_shortcuts(recipe, names=None):
    """{name: value} of the shortcut flags the user gave among `names` (default: the fields a run trains with,
    run_settings.training_shortcuts): they win over the preset, --config and --config.FIELD.PATH=VALUE. Each of
    `names` is noted as read."""
    names = run_settings.training_shortcuts(recipe) if names is None else names
    given = {name: FLAGS[name].value for name in names if FLAGS[name].present}
    if "profile_steps" in given:  # list flags' values are typed by their fields (zoo.core.config); these are text
        given["profile_steps"] = profile_range(given["profile_steps"])
    return given


def settings_from_flags(recipe):
    """The command's settings as the flags say: the run's typed config (zoo.training.run_settings.resolve) from
    --preset, --config, --config.FIELD.PATH=VALUE and the shortcut flags in the modes that make one, else from the
    trained run's record and the shortcut flags the mode reads (run_settings.reads: --mode=eval's split, columns
    and batch, the search, the prompt ...). Each flag is read only where the mode uses it, and one given that it
    never read is refused (`refuse_unread`)."""
    FLAGS.names.clear()
    mode = FLAGS.mode
    makes_config = mode in (*run_settings.TRAINING_MODES, "config")
    training = mode in run_settings.TRAINING_MODES
    if not makes_config and (flags.FLAGS.config or OVERRIDES):
        raise app.UsageError(f"--config and --config.FIELD.PATH=VALUE set a run to train (or --mode=config); "
                             f"--mode={mode} reads the trained run's own config.json: leave them out.")
    exports = mode == "export" or (training and bool(FLAGS.export_dir))
    loads = mode not in ("config", "train") or exports  # the modes that load the trained model
    read = dict(model_dir=FLAGS.model_dir, export_dir=FLAGS.export_dir if exports else None,
                epochs=FLAGS.epochs if training else None,
                average_checkpoints=FLAGS.average_checkpoints if loads else 1,
                given=given_shortcuts(recipe, run_settings.reads(recipe, mode, exports)))
    if makes_config:
        read.update(preset=FLAGS.preset if FLAGS["preset"].present else None, config=FLAGS.config,
                    overrides=list(OVERRIDES))
    refuse_unread(recipe, mode, makes_config)
    return driver.settings(recipe, mode, **read)


def refuse_unread(recipe, mode, makes_config):
    """Refuses the recipe's flags given on the command line that `mode` did not read: it would drop them."""
    unread = sorted(name for name in recipe_flags() if flags.FLAGS[name].present and name not in FLAGS.names)
    if not unread:
        return
    fields = run_settings.training_shortcuts(recipe)
    sets = [f"--{name} sets {fields[name]}" for name in unread if name in fields]
    named, one = ", ".join(f"--{name}" for name in unread), len(unread) == 1
    why = (f": {'; '.join(sets)} of a run to train, and --mode={mode} reads the trained run's config.json"
           if sets and not makes_config else "")
    read = ", ".join(f"--{name}" for name in sorted(FLAGS.names & set(recipe_flags()) - {"mode"}))
    listed = "" if makes_config else f" (--mode={mode} reads {read or 'no other flag'})"
    raise app.UsageError(f"{named} {'is' if one else 'are'} not used by --mode={mode}{why}. Leave "
                         f"{'it' if one else 'them'} out{listed}.")


def recipe_flags():
    """The names of the flags recipes/ defines (this module's and the recipe's), not absl's or TensorFlow's."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [flag.name for module, defined in flags.FLAGS.flags_by_module_dict().items()
            if module.startswith("recipes.") or os.path.dirname(os.path.abspath(module)) == here
            for flag in defined]


def profile_range(values):
    """--profile_steps as (first, last)."""
    try:
        first, last = (int(v) for v in values)
    except ValueError:
        given = ",".join(values)
        raise ValueError(f"--profile_steps={given} must be two step numbers, first,last (e.g. 11,20).") from None
    return first, last


def define_flags(recipe, *own):
    """The recipe's shortcut flags (recipes.shortcuts), and --mode: the modes every recipe has and the recipe's
    `own` (generate, translate, explain)."""
    shortcuts.define(recipe)
    flags.DEFINE_enum("mode", "train_and_eval", [*run_settings.MODES, *own], "What to do (config: print the "
                      "resolved config as YAML and exit, writing nothing).")

