"""A run stopped by SIGTERM (a scheduler taking the machine back) or SIGINT (Ctrl-C) ends with one line, its
folder's lock released: in training, once the step it reached is saved, however far the next checkpoint was.
Run again, it resumes from that step and ends bit for bit where an uninterrupted run ends (the comparison of
tests/recipes/test_exact_resumption.py). The workers of a multi-worker job all stop after the same step."""

import glob
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tests.recipes.test_multi_worker_faults as multi_worker
import zoo
from tests.conftest import HANG, ROOT, as_flags
from tests.recipes.test_exact_resumption import RECIPES, saved_tensors
from zoo.runs.checkpoints import checkpoint_steps
from zoo.runs.run_lock import LOCK_FILE

pytestmark = pytest.mark.slow  # outside the default run: python -m pytest -m slow

STEPS = {"mode": "train", "train_steps": 40, "checkpoint_every": 1000, "log_every": 2}
STOPPED = re.compile(r"stopped at step (\d+) by (another worker's )?(SIGTERM|SIGINT); the checkpoint is saved; "
                     r"run again to resume")
SAVE_COUNTER = "save_counter/.ATTRIBUTES/VARIABLE_VALUE"  # how many checkpoints the run saved


def start(recipe, model_dir):
    return subprocess.Popen([sys.executable, "-m", f"recipes.{recipe}", *as_flags({**RECIPES[recipe], **STEPS}),
                             f"--model_dir={model_dir}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def signal_once(process, path_pattern, signum):
    """Sends `signum` to `process` once a file matching `path_pattern` exists; returns (stdout, stderr)."""
    deadline = time.time() + HANG
    try:
        while not glob.glob(path_pattern):
            assert process.poll() is None and time.time() < deadline, f"no {path_pattern} in time"
            time.sleep(0.05)
        process.send_signal(signum)
        return process.communicate(timeout=HANG)
    finally:
        if process.poll() is None:
            process.kill()


def training_started(model_dir):
    return os.path.join(model_dir, "train", "events.out.tfevents.*")  # the loop's TensorBoard file, made first


def stopped_step(process, err, signum):
    """The step the last line of `err` says the run stopped at, checked to be one line and the exit status."""
    assert process.returncode == 128 + signum and "Traceback" not in err, err[-3000:]
    found = STOPPED.fullmatch(err.strip().splitlines()[-1])
    assert found and found.group(3) == signal.Signals(signum).name, err[-3000:]
    return int(found.group(1))


@pytest.mark.parametrize("recipe", ["sentiment", "lm"])
def test_a_run_stopped_by_sigterm_saves_its_step_and_resumes_to_the_uninterrupted_runs_weights(recipe, tmp_path,
                                                                                               capsys):
    straight, stopped = str(tmp_path / "straight"), str(tmp_path / "stopped")
    process = start(recipe, stopped)
    _, err = signal_once(process, training_started(stopped), signal.SIGTERM)
    step = stopped_step(process, err, signal.SIGTERM)
    assert 0 < step < 40, "the run ended before the signal came"
    assert checkpoint_steps(stopped) == [step] and not os.path.exists(os.path.join(stopped, LOCK_FILE))
    capsys.readouterr()
    zoo.train(recipe, stopped, **RECIPES[recipe], **STEPS)  # resumed, and the straight run, in this process
    assert f"Resuming from step {step}" in capsys.readouterr().out
    zoo.train(recipe, straight, **RECIPES[recipe], **STEPS)
    expected, got = saved_tensors(straight, 40), saved_tensors(stopped, 40)
    assert sorted(got) == sorted(expected)
    assert got.pop(SAVE_COUNTER) == expected.pop(SAVE_COUNTER) + 1  # the stop's own save
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=f"{recipe}: {name} differs after resuming")


def test_ctrl_c_saves_the_step_reached_with_one_line_and_no_traceback(tmp_path):
    model_dir = str(tmp_path / "run")
    process = start("sentiment", model_dir)
    _, err = signal_once(process, training_started(model_dir), signal.SIGINT)
    step = stopped_step(process, err, signal.SIGINT)
    assert "KeyboardInterrupt" not in err and checkpoint_steps(model_dir) == [step]
    assert not os.path.exists(os.path.join(model_dir, LOCK_FILE))


def test_a_sigterm_before_training_ends_the_run_with_one_line_and_releases_the_folder(tmp_path):
    model_dir = str(tmp_path / "run")
    process = start("sentiment", model_dir)
    _, err = signal_once(process, os.path.join(model_dir, LOCK_FILE), signal.SIGTERM)  # held: preparing the data
    assert process.returncode == 143 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == ("stopped by SIGTERM; run again to continue (training resumes from its "
                                            "last checkpoint)")
    assert not os.path.exists(os.path.join(model_dir, LOCK_FILE))


def test_every_worker_of_a_job_stops_after_the_same_step_saved(tmp_path):
    model_dir = str(tmp_path / "run")
    chief, other = workers = multi_worker.start_workers(model_dir, steps=100_000)
    deadline = time.time() + HANG
    while not os.path.exists(os.path.join(model_dir, "ckpt-10.index")):
        assert chief.poll() is None and other.poll() is None and time.time() < deadline, "no checkpoint in time"
        time.sleep(0.2)
    other.send_signal(signal.SIGTERM)
    (_, chief_err), (_, other_err) = multi_worker.finish(workers, timeout=HANG)
    lines = []
    for worker, err in zip(workers, (chief_err, other_err)):
        assert worker.returncode == 143 and "Traceback" not in err, err[-3000:]
        lines.append(err.strip().splitlines()[-1])
        log = multi_worker.native_log_of(err)
        assert log and not os.path.exists(log), "a run that stopped as asked leaves its TensorFlow log behind"
    chief_line, other_line = (STOPPED.fullmatch(line) for line in lines)
    assert chief_line and other_line, lines
    step = int(other_line.group(1))
    assert int(chief_line.group(1)) == step >= 10, lines  # 10: the signal came before the workers' check there
    assert chief_line.group(2) == "another worker's " and other_line.group(2) is None
    assert checkpoint_steps(model_dir)[0] == step  # the chief's, in the run's folder
    assert not [name for name in os.listdir(model_dir) if name.startswith(".worker")]
    assert not os.path.exists(os.path.join(model_dir, LOCK_FILE))
