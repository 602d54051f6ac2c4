"""The one driver of every recipe: `run(recipe, settings)`, from the command line (recipes/) and from Python
(`zoo.train`) alike.

A recipe is a `Recipe`: its typed config and base, its shortcuts, how it prepares a training run (its record, data
and `Task`), evaluates, loads a trained run, what its export serves, and any modes of its own. The driver does the
rest, the same way for all of them: makes the tf.distribute strategy, holds the run folder, trains (only the chief
writes), records the metrics, evaluates, exports and dispatches the other modes.
"""

import contextlib
import dataclasses
import functools
import os
from typing import Callable, Mapping

from zoo.data import cache
from zoo.runs import export, outputs, run_dir
from zoo.training import run_settings
from zoo.training.config import Task
from zoo.training.distribute import is_chief, make_strategy
from zoo.training.loop import Trainer
from zoo.training.run_settings import TRAINING_MODES, RunSettings

# Besides training (and the evaluation and export that follow it): eval writes metrics.json and its
# summaries, explain its pictures.
WRITING_MODES = (*TRAINING_MODES, "eval", "explain")


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A training run made ready by `Recipe.prepare`: what the driver records and trains."""

    config: object  # the recipe's typed config as the run trains it (derived model fields, the epochs' steps)
    derived: dict  # what the run found out (class names, the files' digest, data sizes: zoo.runs.record)
    task: Task


@dataclasses.dataclass(frozen=True)
class Serving:
    """What a recipe's export serves: `zoo.runs.export.export`'s arguments."""

    module: object  # a tf.Module
    signatures: dict  # name -> tf.function
    examples: dict  # input name -> example values the export is checked with
    metadata: dict


@dataclasses.dataclass(frozen=True)
class Figures:
    """What a recipe's evaluation after training writes to metrics.json's `eval_<split>` section: the figures a sweep
    ranks its trials by (zoo.sweeps.metrics, SPLIT.FIGURE), and the split evaluated. Which figures a run writes may
    follow one config field, its kind (a classifier's model.problem_type: regression writes mse, not accuracy)."""

    names: tuple | Mapping  # the figures, the headline first; or by kind: {the kind field's value: its figures}
    split: Callable  # config -> the split a training run evaluates: its data.eval_split, else the recipe's default
    kind: str | None = None  # the dotted config field whose value picks the entry of `names`
    within: str | None = None  # the key of eval_<split> that holds them (the LM's: train_memory), None: the section

    def every(self):
        """Every figure some run of the recipe writes, in order, each once."""
        groups = self.names.values() if isinstance(self.names, Mapping) else [self.names]
        return tuple(dict.fromkeys(name for group in groups for name in group))

    def kind_of(self, config):
        """The value of the kind field in `config`, None where the figures have no kind or it is not yet known."""
        return None if self.kind is None else functools.reduce(getattr, self.kind.split("."), config)

    def of(self, config):
        """The figures a run of `config` writes (every figure, where its kind is not yet known)."""
        kind = self.kind_of(config)
        return self.names[kind] if isinstance(self.names, Mapping) and kind in self.names else self.every()


@dataclasses.dataclass(frozen=True)
class Recipe:
    """What a recipe adds to the driver. Each of its functions takes the command's `RunSettings` (mode, run folder,
    places) and the run's typed config, eval section included (run_settings.resolve)."""

    name: str  # config.json's "recipe"
    config_class: type  # its typed run config (data, model, train, setup, eval)
    base: Callable  # (preset, init_from, record or None) -> the config before any file or override
    shortcuts: Mapping  # shortcut name -> the one config field it is another name of, beside run_settings.SHORTCUTS
    prepare: Callable  # (run, config, strategy) -> Prepared
    load: Callable  # (model_dir or RunDir, average=N) -> zoo.runs.run_dir.LoadedRun
    server: Callable  # (LoadedRun, config) -> Serving
    evaluate: Callable | None = None  # (run, config) -> results (mode eval, train_and_eval)
    modes: Mapping[str, Callable] = dataclasses.field(default_factory=dict)  # its own modes: name -> fn(run, config)
    # mode -> {shortcut: field} of the eval section's (and, for a mode that reads a trained run, the data's) fields
    # it reads (run_settings.reads); "export" also for a training run that exports
    reads: Mapping[str, Mapping] = dataclasses.field(default_factory=dict)
    check: Callable | None = None  # (run, config) -> None: what the mode's options need, checked before any work
    finish: Callable | None = None  # (config, base, mode) -> config: what the layers cannot check
    figures: Figures | None = None  # what its evaluation writes to metrics.json, and the split it evaluates


def settings(recipe, mode="train_and_eval", model_dir=None, export_dir=None, *, preset=None, config=None,
             overrides=(), given=None, epochs=None, average_checkpoints=1):
    """The command's RunSettings: its run folder opened once (its record read once and passed down) and the run's
    typed config (`run_settings.resolve`), checked with the recipe's `check` before any work, after the folders it
    writes (zoo.runs.outputs: no output lands on the run's own files)."""
    training = mode in TRAINING_MODES
    outputs.check_folders(model_dir, export_dir, training)
    folder = run_dir.opened(model_dir) if model_dir else None
    typed = run_settings.resolve(recipe, preset, config, overrides, given, folder, mode)
    if training and average_checkpoints > typed.train.keep_checkpoints:  # what the config's own checks cannot see
        raise ValueError(f"average_checkpoints={average_checkpoints} needs at least that many checkpoints kept: "
                         f"train with train.keep_checkpoints={average_checkpoints} (now "
                         f"{typed.train.keep_checkpoints}).")
    if training and epochs is not None and "train_steps" in (given or {}):
        raise ValueError("Give train_steps or epochs, not both.")
    chosen = run_settings.recorded_preset(preset, config, typed) if training or mode == "config" else None
    run = RunSettings(mode, folder, typed, export_dir, epochs, average_checkpoints, chosen)
    if recipe.check is not None and mode != "config":
        recipe.check(run, typed)
    return run


def prepare(recipe, run, strategy):
    """The training run in run.folder made ready (`Recipe.prepare`: its data read, tokenizer made, tokens cached,
    batches planned), not trained. A sweep prepares its first trial so before any trial runs."""
    replicas = strategy.num_replicas_in_sync
    if run.train.batch_size % replicas:
        raise ValueError(f"train.batch_size={run.train.batch_size} is not divisible by the {replicas} replicas.")
    cache.check_writable()  # a cache that cannot take the tokens is refused before the run folder gets a file
    os.makedirs(run.model_dir, exist_ok=True)
    return recipe.prepare(run, run.config, strategy)


def train(recipe, run, strategy):
    """Trains (or resumes) the run in run.folder; returns the training metrics (None when the run had already
    finished). Only the chief writes the record and the metrics."""
    prepared = prepare(recipe, run, strategy)
    chief = is_chief(strategy)
    derived = {**prepared.derived, "epochs": run.epochs, "replicas": strategy.num_replicas_in_sync,
               "strategy": type(strategy).__name__, "preset": run.preset}
    run.folder.record_training(recipe.name, prepared.config, derived, chief)
    metrics = Trainer(prepared.task, prepared.config.train, run.model_dir, strategy).train()
    if chief and metrics is not None:
        run.folder.update_metrics(train=metrics)
    return metrics


def export_run(recipe, run):
    """Exports the trained run in TF Serving's layout under run.export_dir; returns the version's path.
    An unchanged checkpoint already exported there (the newest version) is not exported again."""
    loaded = recipe.load(run.folder, average=run.average_checkpoints)
    serving = recipe.server(loaded, run.config)
    source = export.source_digest(run.model_dir, run.average_checkpoints, serving.metadata, loaded.step)
    same = export.unchanged_version(run.export_dir, source)
    if same is not None:
        print(f"{same} already holds step {loaded.step} of {run.model_dir} with the same settings, unchanged "
              "since: not exported again (remove that version, or give another --export_dir, to export anew).",
              flush=True)
        return same
    print(f"Exporting step {loaded.step} to {run.export_dir} ...", flush=True)
    path = export.export(serving.module, serving.signatures, run.export_dir, serving.examples,
                         metadata=serving.metadata, source=source)
    print(f"Exported step {loaded.step} to {path}")
    return path


def run(recipe, settings):
    """One command of `recipe` as its RunSettings say: trains, evaluates, exports and runs the recipe's own mode,
    each given the run's one typed config."""
    if not settings.model_dir:
        raise ValueError("--model_dir is required.")
    if settings.mode == "export" and not settings.export_dir:
        raise ValueError("--mode=export needs --export_dir.")
    setup = settings.config.setup if settings.training else None
    strategy = make_strategy(setup.strategy, setup.cpu_replicas, setup.tpu) if settings.training else None
    with hold_model_dir(settings, strategy):
        if settings.training:
            print(f"Compute dtype: {settings.train.mixed_precision} ({settings.train.precision_reason}).", flush=True)
            train(recipe, settings, strategy)
            if not is_chief(strategy):
                return
        if settings.evaluating and recipe.evaluate is not None:
            recipe.evaluate(settings, settings.config)
        if settings.exporting:
            export_run(recipe, settings)
        if settings.mode in recipe.modes:
            recipe.modes[settings.mode](settings, settings.config)


def hold_model_dir(run, strategy=None):
    """A context that holds the model folder (`RunDir.hold`) while the mode writes there: the WRITING_MODES,
    and an export into a folder inside the model folder. The other modes only read it (generate,
    translate, an export elsewhere), and of a multi-worker job only the chief writes there."""
    folder = os.path.realpath(run.model_dir)
    exports_inside = (run.mode == "export" and bool(run.export_dir)
                      and os.path.commonpath([os.path.realpath(run.export_dir), folder]) == folder)
    if not (run.mode in WRITING_MODES or exports_inside) or (strategy is not None and not is_chief(strategy)):
        return contextlib.nullcontext()
    run.folder.read_metrics()  # a damaged metrics.json is named now, not after the work that would update it
    return run.folder.hold(create=run.training)
