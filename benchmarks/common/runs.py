"""Runs a recipe as a user would, in a child process: trains a run folder unless it holds a finished run of the
benchmark's flags, evaluates it, reads its metrics.json. Every benchmark that trains a model goes through here."""

import os
import shutil
import subprocess
import sys
import time

from benchmarks.common.report import ROOT, finished_run

REUSE = (None, "any", "current")


def run_recipe(module, run_dir, *flags_, env=None, program=None):
    """`python -m recipes.<module> FLAGS --model_dir=run_dir` at the repository root, `env` its environment (default
    this one's); `program`, a module and its first arguments, in place of recipes.<module> (a benchmark that runs the
    recipe itself, as a worker). Raises CalledProcessError when it fails. Returns the run's metrics.json."""
    subprocess.run([sys.executable, "-m", *(program or [f"recipes.{module}"]), *flags_, f"--model_dir={run_dir}"],
                   cwd=ROOT, env=env, check=True)
    return read_metrics(run_dir)


def read_metrics(run_dir):
    from zoo.runs.run_dir import RunDir

    return RunDir(run_dir).read_metrics()


def train_unless_finished(module, run_dir, flags_, checked=None, **how):
    """Trains (`--mode=train` with flags_) unless run_dir holds a finished run whose record has the `checked` flags
    (default: all of flags_; `report.finished_run`, which refuses a finished run of other flags). `how`: run_recipe's
    env and program. True when it trained."""
    if finished_run(run_dir, flags_ if checked is None else checked):
        return False
    run_recipe(module, run_dir, *flags_, "--mode=train", **how)
    return True


def evaluation(module, run_dir, key, *eval_flags, reuse=None, **how):
    """metrics.json's `key` entry (eval_test, eval_sst2_validation ...) after `--mode=eval EVAL_FLAGS`. `reuse`:
    None evaluates always; "any" keeps an entry already there; "current" keeps one of the run's last training step
    and its last checkpoint alone (evaluation is deterministic, and can be long)."""
    if reuse not in REUSE:
        raise ValueError(f"reuse={reuse!r}: use one of {REUSE}.")
    metrics = read_metrics(run_dir)
    entry = metrics.get(key)
    kept = entry is not None and (reuse == "any" or reuse == "current" and entry.get("step") == metrics["train"][
        "step"] and entry.get("average_checkpoints") == 1)
    if not kept:
        entry = run_recipe(module, run_dir, "--mode=eval", *eval_flags, **how)[key]
    return entry


def fresh_run(module, run_dir, *flags_, **how):
    """The recipe run in an emptied run_dir (an earlier run there removed: the time is a whole run's):
    (metrics.json, seconds from launch to exit)."""
    shutil.rmtree(run_dir, ignore_errors=True)
    began = time.time()
    metrics = run_recipe(module, run_dir, *flags_, **how)
    return metrics, time.time() - began


def command(module, flags_, run_dir):
    """The command a reader runs again, as BENCHMARKS.md prints it."""
    return " ".join([f"python -m recipes.{module}", *flags_, f"--model_dir={run_dir}"])


def relative(text):
    """A path or command with the repository root left out, as a reader's checkout has it."""
    return text.replace(ROOT + os.sep, "")
