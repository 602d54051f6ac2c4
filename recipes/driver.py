"""The one driver of every recipe: `run(recipe)`.

A recipe is a `Recipe`: how it reads its flags into settings, prepares a training run (its
record, data and `Task`), evaluates, loads a trained run, what its export serves, and any modes of
its own. The driver does the rest, the same way for all of them: checks the flags, makes the
tf.distribute strategy, holds the run folder, trains (only the chief writes), records the
metrics, evaluates, exports and dispatches the other modes, with the errors a user can fix shown
as one `error:` line.
"""

import contextlib
import dataclasses
import json
import os
import sys
from typing import Callable, Mapping

from absl import app, flags

from recipes import common
from recipes.native_log import NativeLog, worker_log_path
from zoo.core.config import to_yaml
from zoo.data import cache
from zoo.runs import export
from zoo.training.distribute import is_chief, make_strategy
from zoo.runs.run_dir import RunDir, RunDirError
from zoo.training.config import Task
from zoo.training.loop import Trainer

FLAGS = flags.FLAGS
LOST_WORKER_STATUS = 75  # EX_TEMPFAIL: start the workers again and the run resumes
# Besides training (and the evaluation and export that follow it): eval writes metrics.json and its
# summaries, explain its pictures.
WRITING_MODES = (*common.TRAINING_MODES, "eval", "explain")


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A training run made ready by `Recipe.prepare`: what the driver records and trains."""

    config: object  # the recipe's typed config as the run trains it: the model's derived fields and the steps
    # --epochs asked for filled in
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
class Recipe:
    """What a recipe adds to the driver. `settings` is the recipe's own frozen dataclass, made by
    `config_from_flags(mode)` (the only place the recipe reads FLAGS), with the shared
    `common.RunSettings` (the run's typed config among them) as its `run` field."""

    name: str  # config.json's "recipe"
    config_from_flags: Callable  # mode -> settings; bad flags fail here, before any work
    prepare: Callable  # (settings, strategy) -> Prepared
    load: Callable  # (model_dir, average=N) -> zoo.runs.run_dir.LoadedRun
    server: Callable  # (LoadedRun, settings) -> Serving
    evaluate: Callable | None = None  # settings -> results (--mode=eval, train_and_eval)
    modes: Mapping[str, Callable] = dataclasses.field(default_factory=dict)  # its own modes: name -> fn(settings)


def train(recipe, settings, strategy):
    """Trains (or resumes) the run in settings.run.model_dir; returns the training metrics (None when the run
    had already finished). Only the chief writes the record and the metrics."""
    shared = settings.run
    replicas = strategy.num_replicas_in_sync
    if shared.train.batch_size % replicas:
        raise ValueError(f"train.batch_size={shared.train.batch_size} is not divisible by the {replicas} replicas.")
    cache.check_writable()  # a cache that cannot take the tokens is refused before the run folder gets a file
    os.makedirs(shared.model_dir, exist_ok=True)
    prepared = recipe.prepare(settings, strategy)
    chief = is_chief(strategy)
    run_dir = RunDir(shared.model_dir)
    derived = {**prepared.derived, "epochs": shared.epochs, "replicas": replicas, "strategy": type(strategy).__name__}
    run_dir.record_training(recipe.name, prepared.config, derived, chief)
    metrics = Trainer(prepared.task, prepared.config.train, shared.model_dir, strategy).train()
    if chief and metrics is not None:
        run_dir.update_metrics(train=metrics)
    return metrics


def export_run(recipe, settings):
    """Exports the trained run in TF Serving's layout under settings.run.export_dir; returns the version's path."""
    loaded = recipe.load(settings.run.model_dir, average=settings.run.average_checkpoints)
    serving = recipe.server(loaded, settings)
    path = export.export(serving.module, serving.signatures, settings.run.export_dir, serving.examples,
                         metadata=serving.metadata)
    print(f"Exported step {loaded.step} to {path}")
    return path


def main(recipe):
    """One run of `recipe` as the flags say."""
    mode = FLAGS.mode
    if mode == "config":  # the resolved config as YAML, for a file to start from; nothing is written
        print(to_yaml(recipe.config_from_flags(mode).run.config), end="")
        return
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    training = mode in common.TRAINING_MODES
    if mode == "export" and not FLAGS.export_dir:
        raise app.UsageError("--mode=export needs --export_dir.")
    settings = recipe.config_from_flags(mode)
    shared = settings.run
    setup = shared.config.setup if training else None
    strategy = make_strategy(setup.strategy, setup.cpu_replicas, setup.tpu) if training else None
    with hold_model_dir(shared, strategy):
        if training:
            train(recipe, settings, strategy)
            if not is_chief(strategy):
                return
        if shared.evaluating and recipe.evaluate is not None:
            recipe.evaluate(settings)
        if shared.exporting:
            export_run(recipe, settings)
        if mode in recipe.modes:
            recipe.modes[mode](settings)


def hold_model_dir(shared, strategy=None):
    """A context that holds the model folder (`RunDir.hold`) while the mode writes there: the WRITING_MODES,
    and an export into a folder inside the model folder. The other modes only read it (generate,
    translate, an export elsewhere), and of a multi-worker job only the chief writes there."""
    exports_inside = shared.mode == "export" and bool(shared.export_dir) and inside(shared.export_dir, shared.model_dir)
    if not (shared.mode in WRITING_MODES or exports_inside) or (strategy is not None and not is_chief(strategy)):
        return contextlib.nullcontext()
    run_dir = RunDir(shared.model_dir)
    run_dir.read_metrics()  # a damaged metrics.json is named now, not after the work that would update it
    return run_dir.hold(create=shared.training)


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


def run(recipe):
    """absl's app.run of `main(recipe)`, with the errors a user can fix shown as one clear line
    (exit status 2) instead of a traceback; ZOO_DEBUG=1 shows the traceback.
    A multi-worker run that loses a worker ends with one line naming it (exit status 75); a multi-worker
    training run keeps TensorFlow's own log lines in a file (recipes.native_log), named when it fails.
    SIGTERM or SIGINT ends a run with one line, exit status 143 or 130 (a training run once the step it
    reached is saved: zoo.training.loop), so that a scheduler starts a stopped job again; the folder's
    lock is released."""
    import tensorflow as tf
    from absl import logging

    from zoo.runs.checkpoints import CheckpointError
    from zoo.data.datasets import DatasetError
    from zoo.training.loop import NonFiniteLossError
    from zoo.training.stopping import Stopped, stop_on_signals

    def guarded(argv):
        del argv
        logging.set_verbosity(logging.WARNING)
        log = None  # a multi-worker run's TensorFlow log (recipes.native_log)
        if FLAGS.strategy == "multi_worker_mirrored" and FLAGS.mode in common.TRAINING_MODES:
            try:
                log = NativeLog(worker_log_path(recipe.name, own_task()))
                print(f"TensorFlow's own log lines of this worker go to {log.path}", file=sys.stderr)
            except OSError as error:  # no writable temporary folder: the lines stay on the terminal
                print(f"TensorFlow's own log lines stay here: {error}", file=sys.stderr)

        def fail(message, status):
            kept = log.close(keep=True) if log else None
            note = f" (TensorFlow's log of this worker: {kept})" if kept else ""
            sys.stdout.flush()
            print(f"error: {message}{note}", file=sys.stderr, flush=True)
            if status == LOST_WORKER_STATUS:
                os._exit(status)  # TensorFlow's cluster shutdown would wait for the lost task
            sys.exit(status)

        ended_well = False
        try:
            check_directories()
            with stop_on_signals():
                result = main(recipe)
            ended_well = True
            return result
        except (DatasetError, RunDirError, CheckpointError, FileNotFoundError, ValueError, NonFiniteLossError,
                app.UsageError) as error:  # a missing flag too: its line, not absl's page of usage before it
            if os.environ.get("ZOO_DEBUG"):
                raise
            fail(error, 2)
        except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.DeadlineExceededError) as error:
            # What a collective or the coordination service raises when a peer stops answering.
            if FLAGS.strategy != "multi_worker_mirrored" or os.environ.get("ZOO_DEBUG"):
                raise
            fail(lost_worker_message(error, own_task()), LOST_WORKER_STATUS)
        except Stopped as stop:  # not an error: the run stopped as asked
            if os.environ.get("ZOO_DEBUG"):
                raise
            if log:
                log.close(keep=False)
            sys.stdout.flush()
            print(stop, file=sys.stderr, flush=True)
            if log:
                os._exit(stop.status)  # TensorFlow's cluster shutdown would complain of the peers stopping with it
            sys.exit(stop.status)
        finally:
            if log and log.open:  # not closed by fail(): a clean end, or a traceback
                kept = log.close(keep=not ended_well)
                if kept:
                    print(f"TensorFlow's log of this worker: {kept}", file=sys.stderr)

    app.run(guarded, flags_parser=common.parse_flags)
