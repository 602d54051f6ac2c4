"""The command line of every recipe: `run(recipe)`, absl's app.run of zoo.training.driver.

The flags are read once into the command's settings (recipes.common.settings_from_flags: its mode, run folder and
typed config, the modes' options among its fields); zoo.training.driver runs them. Here: the errors a user
can fix shown as one `error:` line, a multi-worker run's lost worker named, SIGTERM and SIGINT ending a run
cleanly, and --mode=config printing the resolved config.
"""

import json
import os
import sys

from absl import app, flags

from recipes import common
from recipes.native_log import NativeLog, worker_log_path
from zoo.core.config import to_yaml
from zoo.runs.run_dir import RunDirError
from zoo.training import driver

FLAGS = flags.FLAGS
LOST_WORKER_STATUS = 75  # EX_TEMPFAIL: start the workers again and the run resumes


def settings_of(recipe):
    """The command's settings as the flags say."""
    if FLAGS.mode != "config" and not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    if FLAGS.mode == "export" and not FLAGS.export_dir:
        raise app.UsageError("--mode=export needs --export_dir.")
    return common.settings_from_flags(recipe)


def main(recipe, settings):
    """One run of `recipe` as its settings say; --mode=config prints the resolved config, writing nothing."""
    if settings.mode == "config":
        print(to_yaml(settings.config), end="")
        return
    driver.run(recipe, settings)


def multi_worker(settings):
    """Whether the run trains with MultiWorkerMirroredStrategy (its setup.strategy, from any source)."""
    return settings.training and settings.config.setup.strategy == "multi_worker_mirrored"


def native_log(recipe):
    """A multi-worker run's TensorFlow log (recipes.native_log), or None where no temporary folder takes it."""
    try:
        log = NativeLog(worker_log_path(recipe.name, own_task()))
        print(f"TensorFlow's own log lines of this worker go to {log.path}", file=sys.stderr)
        return log
    except OSError as error:  # no writable temporary folder: the lines stay on the terminal
        print(f"TensorFlow's own log lines stay here: {error}", file=sys.stderr)
        return None


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


def run(recipe, program=None):
    """absl's app.run of `main(recipe, settings)`, the settings as the flags say (or of `program()`, a program of its own over the recipe's
    flags: recipes.sweep), with the errors a user can fix shown as one clear line
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
        workers = False  # whether the run is one of a multi-worker job

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
                if program is not None:
                    result = program()
                else:
                    settings = settings_of(recipe)
                    workers = multi_worker(settings)
                    log = native_log(recipe) if workers else None  # before TensorFlow's cluster starts
                    result = main(recipe, settings)
            ended_well = True
            return result
        except (DatasetError, RunDirError, CheckpointError, FileNotFoundError, ValueError, NonFiniteLossError,
                app.UsageError) as error:  # a missing flag too: its line, not absl's page of usage before it
            if os.environ.get("ZOO_DEBUG"):
                raise
            fail(error, 2)
        except (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.DeadlineExceededError) as error:
            # What a collective or the coordination service raises when a peer stops answering.
            if not workers or os.environ.get("ZOO_DEBUG"):
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
