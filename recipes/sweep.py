r"""Hyper-parameter search over any config field of a recipe's runs (docs/sweep.md): the command line of
zoo.sweeps (zoo.sweep(...) runs the same from Python).

Every flag of the recipe (--dataset, --preset, --config, --config.FIELD.PATH=VALUE, --train_steps ...) is applied
to every trial; the space file names the searched fields. Each trial is a run folder, <sweep_dir>/trial-NNN.

  python -m recipes.sweep --recipe=sentiment --space=space.yaml --sweep_dir=sweeps/sst2 --dataset=sst2
  python -m recipes.sweep --recipe=sentiment --space=space.yaml --sweep_dir=sweeps/sst2 --dataset=sst2 \
      --storage=postgresql://user@db-host/sweeps     # one worker of several, on any number of machines
"""

import importlib
import sys

from absl import app, flags

from recipes import common, driver

RECIPES = ("sentiment", "translate", "lm", "pretrain")
OWN = ("recipe", "space", "sweep_dir", "storage")


def chosen_recipe(argv):
    """--recipe's value, looked for before absl parses the command line: importing the recipe's module defines
    its flags."""
    for index, argument in enumerate(argv[1:], 1):
        if argument.startswith("--recipe="):
            return argument.partition("=")[2]
        if argument == "--recipe" and index + 1 < len(argv):
            return argv[index + 1]
    return None


if chosen_recipe(sys.argv) in RECIPES:
    importlib.import_module(f"recipes.{chosen_recipe(sys.argv)}")
flags.DEFINE_enum("recipe", None, RECIPES, "The recipe whose runs are searched; its flags apply to every trial.")
flags.DEFINE_string("space", None, "The space file (YAML): method (grid, random, bayesian), metric, max_trials and "
                    "the searched dotted fields (docs/sweep.md).")
flags.DEFINE_string("sweep_dir", None, "The sweep's folder: its trials (trial-NNN, each a run folder), study "
                    "journal, results.csv, results.md, plot.png and best. Started again, the sweep resumes.")
flags.DEFINE_string("storage", None, "The study's storage: a journal file (default <sweep_dir>/study.journal) or an "
                    "RDB URL (sqlite:///sweeps/a.db, postgresql://user@host/db), shared by every worker.")
FLAGS = common.FLAGS


def main():
    """One worker of the sweep the flags name (zoo.sweeps.worker.run)."""
    from zoo.api import RECIPES as SPECS
    from zoo.sweeps import study, trials, worker

    FLAGS.names.clear()
    for name in ("recipe", "space", "sweep_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required (python -m recipes.sweep --recipe=sentiment "
                                 "--space=space.yaml --sweep_dir=sweeps/a ...).")
    recipe = SPECS[FLAGS.recipe]
    fixed = trials.Fixed(recipe, FLAGS.preset if FLAGS["preset"].present else None, FLAGS.config,
                         tuple(common.OVERRIDES), common.given_shortcuts(recipe), FLAGS.epochs)
    space, sweep_dir, storage = FLAGS.space, FLAGS.sweep_dir, FLAGS.storage
    refuse_unread()
    optuna = study.optuna_module()  # or the line saying to install it
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the worker says what each trial did, once
    worker.run(fixed, space, sweep_dir, storage)


def refuse_unread():
    """A flag given that no trial uses (--model_dir, --mode, a mode's own option) is refused: it would be dropped."""
    unread = sorted(name for name in common.recipe_flags() if flags.FLAGS[name].present and name not in FLAGS.names)
    if unread:
        named = ", ".join(f"--{name}" for name in unread)
        raise app.UsageError(f"{named} {'is' if len(unread) == 1 else 'are'} not used by recipes.sweep: each trial "
                             "trains and evaluates in <sweep_dir>/trial-NNN. Leave it out; evaluate or export a "
                             f"trial with recipes.{FLAGS.recipe} --model_dir=<sweep_dir>/trial-NNN.")


if __name__ == "__main__":
    driver.run(None, None, program=main)
