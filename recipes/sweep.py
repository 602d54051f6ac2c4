r"""Hyper-parameter search over any config field of a recipe's runs (docs/sweep.md): the command line of
zoo.sweeps (zoo.sweep(...) runs the same from Python).

Every flag that sets the recipe's run config (--dataset, --preset, --config, --config.FIELD.PATH=VALUE, the
shortcut flags --train_steps, --vocab_size ...) is applied to every trial; the space file names the searched
fields. Each trial is a run folder, <sweep_dir>/trial-NNN: --model_dir, --export_dir, --mode and the modes' own
flags are refused. `--recipe=NAME --helpfull` lists the flags of that recipe's trials.

  python -m recipes.sweep --recipe=sentiment --space=space.yaml --sweep_dir=sweeps/sst2 --dataset=sst2_tune
  python -m recipes.sweep --recipe=sentiment --space=space.yaml --sweep_dir=sweeps/sst2 --dataset=sst2_tune \
      --storage=postgresql://user@db-host/sweeps     # one worker of several, on any number of machines
"""

import importlib
import os
import sys

from absl import app, flags

from recipes import common, driver
from zoo.registry import RECIPES as REGISTRY
from zoo.training import run_settings

RECIPES = tuple(REGISTRY)  # the recipe registry's names; recipes/<name>.py defines each one's flags
TAKEN = ("preset", "config", "epochs")  # recipes.common's flags every trial takes, beside the recipe's shortcuts
HELP = ("-?", "--help", "--helpshort", "--helpfull", "--helpxml")
MISSING = (f"--recipe is required: the recipe whose runs are searched ({', '.join(RECIPES)}), e.g. "
           "python -m recipes.sweep --recipe=sentiment --space=space.yaml --sweep_dir=sweeps/a --dataset=sst2_tune; "
           "its flags (--dataset, --train_steps ...) are known once it is given.")


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
flags.DEFINE_enum("recipe", None, RECIPES, "The recipe whose runs are searched; its flags apply to every trial "
                  "(give it with --helpfull to list them: --dataset, --train_steps, --vocab_size ...).")
flags.DEFINE_string("space", None, "The space file (YAML): method (grid, random, bayesian), metric, max_trials and "
                    "the searched dotted fields (docs/sweep.md).")
flags.DEFINE_string("sweep_dir", None, "The sweep's folder: its trials (trial-NNN, each a run folder), study "
                    "journal, results.csv, results.md, plot.png and best. Started again, the sweep resumes.")
flags.DEFINE_string("storage", None, "The study's storage: a journal file (default <sweep_dir>/study.journal) or an "
                    "RDB URL (sqlite:///sweeps/a.db, postgresql://user@host/db), shared by every worker.")
flags.DEFINE_bool("retry_failed", False, "Run the sweep's failed trials again, each under its own number in its own "
                  "folder (where its run resumes from its newest checkpoint).")
FLAGS = common.FLAGS


def main():
    """One worker of the sweep the flags name (zoo.sweeps.worker.run)."""
    from zoo.sweeps import study, trials, worker

    for name in ("recipe", "space", "sweep_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(MISSING if name == "recipe" else f"--{name} is required (python -m recipes.sweep "
                                 "--recipe=sentiment --space=space.yaml --sweep_dir=sweeps/a ...).")
    recipe = REGISTRY[FLAGS.recipe]
    refuse_unread(recipe)
    fixed = trials.Fixed(recipe, FLAGS.preset if FLAGS["preset"].present else None, FLAGS.config,
                         tuple(common.OVERRIDES), common.given_shortcuts(recipe), FLAGS.epochs)
    space, sweep_dir, storage = FLAGS.space, FLAGS.sweep_dir, FLAGS.storage
    optuna = study.optuna_module()  # or the line saying to install it
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the worker says what each trial did, once
    worker.run(fixed, space, sweep_dir, storage, FLAGS.retry_failed)


def own_flags():
    """The flags this module defines (absl files them under its name, or its path when it runs as __main__)."""
    here = os.path.abspath(__file__)
    return {flag.name for module, defined in flags.FLAGS.flags_by_module_dict().items()
            if module == __name__ or os.path.abspath(module) == here for flag in defined}


def refused(recipe):
    """The recipes' flags no trial reads (--model_dir, --export_dir, --mode, a mode's own option ...): all but this
    module's, TAKEN and the shortcut flags of `recipe` (a zoo.training.driver.Recipe; None: none given yet)."""
    taken = {*own_flags(), *TAKEN, *(run_settings.training_shortcuts(recipe) if recipe is not None else ())}
    return sorted(name for name in common.recipe_flags() if name not in taken)


def refuse_unread(recipe):
    """A flag given that no trial uses is refused: it would be dropped."""
    unread = [name for name in refused(recipe) if flags.FLAGS[name].present]
    if unread:
        named = ", ".join(f"--{name}" for name in unread)
        raise app.UsageError(f"{named} {'is' if len(unread) == 1 else 'are'} not used by recipes.sweep: each trial "
                             "trains and evaluates in <sweep_dir>/trial-NNN. Leave it out; evaluate or export a "
                             f"trial with recipes.{recipe.name} --model_dir=<sweep_dir>/trial-NNN.")


def hide_refused(argv):
    """absl's --help and --helpfull list every flag defined: those the sweep refuses are taken out first."""
    for name in refused(REGISTRY.get(chosen_recipe(argv))):
        delattr(flags.FLAGS, name)


def asks_help(argv):
    return any(argument.partition("=")[0] in HELP for argument in argv[1:])


if __name__ == "__main__":
    if asks_help(sys.argv):
        hide_refused(sys.argv)
    elif chosen_recipe(sys.argv) not in RECIPES:  # absl would name the first recipe flag given as unknown
        given = chosen_recipe(sys.argv)
        wrong = f"--recipe={given} is not a recipe: give one of {', '.join(RECIPES)}." if given is not None else MISSING
        print(f"error: {wrong}", file=sys.stderr, flush=True)
        sys.exit(2)
    driver.run(None, program=main)
