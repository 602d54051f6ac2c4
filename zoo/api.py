"""The Python API, re-exported by the zoo package: `zoo.load(path)`, `zoo.train(recipe, ...)` and
`zoo.sweep(recipe, sweep_dir, space=...)` (a hyper-parameter search: zoo.sweeps).

`load` takes a trained run folder (a recipe's --model_dir) or an export (a version folder `<export_dir>/<n>`, or
the --export_dir itself: its newest version) and returns its family's model, which answers exactly as the export
answers TF Serving:

    recipe      model           methods
    sentiment   Classifier      predict(texts)
    translate   Translator      translate(texts, beam_size=None, length_penalty=None)
    lm          LanguageModel   generate(prompts, max_new_tokens, top_k, temperature, seed), score(texts)
    pretrain    Encoder         encode(texts), fill_mask(texts, top_k)

Each method takes a list of any length, answered `batch_size` texts at a time (default 32), and refuses what is
no list of texts, or an out-of-range number, by name before TensorFlow sees it (zoo.core.inputs). A run is served
by the module its export would hold (float32, the newest checkpoint), an export by its SavedModel's signatures (a
damaged one refused naming its missing file). docs/python_api.md has more.
"""

import dataclasses
import os
from collections.abc import Mapping

from zoo.classifier.load import Classifier
from zoo.core import config as cfg, inputs
from zoo.language_model.load import LanguageModel
from zoo.pretraining.load import Encoder
from zoo.runs import export
from zoo.registry import RECIPES  # noqa: F401 - zoo.api.RECIPES, as before
from zoo.runs.run_dir import CONFIG_FILE, RunDir
from zoo.translation.load import Translator

MODELS = {"sentiment": Classifier, "translate": Translator, "lm": LanguageModel, "pretrain": Encoder}
WHAT_LOAD_TAKES = (
    f"give a run folder (a recipe's --model_dir: it holds {CONFIG_FILE} and checkpoints, ckpt-N.index) or an "
    f"export (a version folder <export_dir>/<n> holding saved_model.pb and {export.MANIFEST}, or the --export_dir "
    "holding such versions: the newest is loaded)."
)


def load(path, average=1):
    """The model of a trained run or of an export (Classifier, Translator, LanguageModel or Encoder).

    Args:
        path: a run folder (--model_dir), an export's version folder, or an --export_dir (its newest version).
        average: a run only: the mean of its newest `average` checkpoints' weights (--average_checkpoints).
    """
    path = path_argument("path", path, "a run folder or an export")
    average = inputs.whole("average", average, 1)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: {WHAT_LOAD_TAKES}")
    folder = RunDir(path) if os.path.isdir(path) else None  # opened once: its record is read once
    recipe = folder.recipe() if folder is not None else None
    if recipe is not None:
        return model_of(recipe, path).from_run(folder, average)
    version = export.find_version(path)
    if version is None:
        raise ValueError(f"{path} is neither a trained run nor an export: {WHAT_LOAD_TAKES}")
    if average != 1:
        raise ValueError(f"average={average} averages a run's checkpoints, but {path} is an export (one set of "
                         "weights): load the run folder, or leave average out.")
    saved, metadata = export.load_version(version)
    return model_of(metadata.get("recipe"), version).from_export(saved, metadata)


def model_of(recipe, path):
    if recipe not in MODELS:
        raise ValueError(f"{path} holds a {recipe!r} model; zoo.load knows the recipes {', '.join(MODELS)}.")
    return MODELS[recipe]


def train(recipe, model_dir, config=None, *, preset=None, mode="train_and_eval", export_dir=None, epochs=None,
          average_checkpoints=1, overrides=(), **keywords):
    """Trains (or resumes) a `recipe` run in `model_dir`, in this process, as `python -m recipes.<recipe>` would,
    and returns `load(model_dir, average_checkpoints)`.

    Args:
        recipe: "sentiment", "translate", "lm" or "pretrain".
        config: the run's config (docs/configuration.md): a YAML or JSON file (a run's own config.json is one), a
            mapping of any subset of its fields, or the recipe's typed config (zoo.configs.RUN_CONFIGS).
        preset: the base the config goes over (default: small).
        mode: "train" or "train_and_eval" (evaluates after training); export_dir: exports too.
        epochs: passes over the training data, in place of train_steps.
        overrides: dotted fields over `config`, e.g. ["model.num_layers=6"] or [("model.num_layers", 6)].
        **keywords: the recipe's shortcuts, named as its flags (dataset="sst2", learning_rate=1e-4, max_length=128,
            beam_size=4 ...; they win over `config` and `overrides`), or a field of its eval section by name (e.g.
            translate's decode=DecodeConfig(...)).

    A bad field or value raises zoo.core.config.ConfigError (a ValueError) naming it, before anything is
    written; Ctrl-C stops the run with its checkpoint saved and raises KeyboardInterrupt."""
    from zoo.training import driver
    from zoo.training.run_settings import EVAL, shortcuts as shortcuts_of
    from zoo.training.stopping import Stopped

    if not isinstance(recipe, str) or recipe not in RECIPES:
        raise ValueError(f"Unknown recipe {recipe!r}: use one of {', '.join(RECIPES)}.")
    if mode not in ("train", "train_and_eval"):
        raise ValueError(f"mode={mode!r}: zoo.train trains (train, train_and_eval); zoo.load evaluates and serves.")
    model_dir = path_argument("model_dir", model_dir, "a folder")
    export_dir = None if export_dir is None else path_argument("export_dir", export_dir, "a folder")
    average_checkpoints = inputs.whole("average_checkpoints", average_checkpoints, 1)
    epochs = None if epochs is None else inputs.finite("epochs", epochs, 0, above=True)
    spec = RECIPES[recipe]
    # A shortcut first (dataset: the data trained on), else a field of the eval section named whole (decode=...).
    eval_section = cfg.field_type(spec.config_class, EVAL)[1]
    sections = {field.name for field in dataclasses.fields(eval_section)} - set(shortcuts_of(spec))
    whole = [(f"{EVAL}.{name}", cfg.to_dict(value) if dataclasses.is_dataclass(value) else value)
             for name, value in keywords.items() if name in sections]
    given = {name: value for name, value in keywords.items() if name not in sections}
    settings = driver.settings(spec, mode, model_dir, export_dir, preset=preset, config=config,
                               overrides=[*override_list(overrides), *whole], given=given, epochs=epochs,
                               average_checkpoints=average_checkpoints)
    try:
        driver.run(spec, settings)
    except Stopped as stop:
        raise KeyboardInterrupt(str(stop)) from stop
    return model_of(recipe, model_dir).from_run(settings.folder, average_checkpoints)  # the record read once


def sweep(recipe, sweep_dir, space, config=None, *, preset=None, overrides=(), storage=None, epochs=None,
          retry_failed=False, **shortcuts):
    """Runs a hyper-parameter search of `recipe` runs in `sweep_dir`, in this process (docs/sweep.md): each trial a
    run folder `sweep_dir/trial-NNN` trained and evaluated as zoo.train would, until no trial is left; returns the
    sweep's zoo.sweeps.results.Results (`best`: the best trial's row). Started again, it resumes the sweep; started
    in several processes (or machines, on a shared folder or database), they share its trials.

    Args:
        recipe: "sentiment", "translate", "lm" or "pretrain".
        space: a space file (YAML: method, metric, max_trials, space of dotted fields), or its mapping.
        config, preset, overrides, epochs, **shortcuts: what every trial shares, as zoo.train takes them; a searched
            field may not be given in `overrides` or as a shortcut.
        storage: the study's: a journal file (default sweep_dir/study.journal) or an RDB URL (sqlite:///a.db,
            postgresql://...).
        retry_failed: run the sweep's failed trials again, each in its own folder.

    A bad space, field or value raises zoo.core.config.ConfigError (a ValueError) naming it before anything is
    written, as does a `sweep_dir` holding files no sweep wrote; a trial that fails is recorded as failed and the
    sweep goes on; once every trial has failed, zoo.sweeps.worker.SweepFailed (a ValueError) gives the error they
    share; Ctrl-C stops the trial under way with its checkpoint saved and raises KeyboardInterrupt."""
    from zoo.sweeps import trials, worker
    from zoo.training.stopping import Stopped

    if not isinstance(recipe, str) or recipe not in RECIPES:
        raise ValueError(f"Unknown recipe {recipe!r}: use one of {', '.join(RECIPES)}.")
    sweep_dir = path_argument("sweep_dir", sweep_dir, "a folder")
    space = space if isinstance(space, Mapping) else path_argument("space", space, "a space file (YAML)")
    storage = None if storage is None else path_argument("storage", storage, "a journal file, or an RDB URL")
    epochs = None if epochs is None else inputs.finite("epochs", epochs, 0, above=True)
    if not isinstance(retry_failed, bool):
        raise TypeError(f"retry_failed={inputs.shown(retry_failed)} must be True or False.")
    fixed = trials.Fixed(RECIPES[recipe], preset, config, tuple(override_list(overrides)), shortcuts, epochs)
    try:
        return worker.run(fixed, space, sweep_dir, storage, retry_failed)
    except Stopped as stop:
        raise KeyboardInterrupt(str(stop)) from stop


def path_argument(name, value, what):
    """`value` (a str or os.PathLike) as a str, else a TypeError naming the argument `name` (`what`: what the
    path names)."""
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}={inputs.shown(value)} must be the path of {what} (a str or os.PathLike), not "
                        f"{type(value).__name__}.")
    path = os.fsdecode(value)  # a PathLike may give bytes
    if not path:
        raise ValueError(f"{name}='' names no path: give the path of {what}.")
    return path


def override_list(overrides):
    """`overrides` as a list of 'field=value' strings and (field, value) pairs (a mapping gives its items; None
    none), else a TypeError naming the argument or the item."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        raise TypeError(f"overrides={inputs.shown(overrides)} must be a list of dotted fields, e.g. "
                        f"[{inputs.shown(overrides)}], not one string.")
    if isinstance(overrides, Mapping):
        overrides = list(overrides.items())
    if not isinstance(overrides, (list, tuple)):
        raise TypeError(f"overrides={inputs.shown(overrides)} must be a list of dotted fields, e.g. "
                        f"['model.num_layers=6'] or [('model.num_layers', 6)], not {type(overrides).__name__}.")
    for index, item in enumerate(overrides):
        pair = isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
        if not (isinstance(item, str) or pair):
            raise TypeError(f"overrides[{index}]={inputs.shown(item)} must be 'field=value' or a (field, value) pair, "
                            "e.g. 'model.num_layers=6' or ('model.num_layers', 6).")
    return list(overrides)
