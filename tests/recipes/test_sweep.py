"""End to end: hyper-parameter sweeps of tiny sentiment runs on an SST-2 slice (zoo.sweep, python -m
recipes.sweep): a 2x2 grid whose results agree with each trial's metrics.json and whose best trial's config.json
trains it again bit for bit; a sweep run again reruns nothing, and refuses another space; a sweep killed with
SIGKILL mid-trial and run again resumes the cut trial from its checkpoint; two workers share one grid, each point
once, a failing point recorded and the sweep going on; a bad space, a missing --recipe or a setting every trial
shares that its data refuses is one line, nothing written; --helpfull lists only the flags a sweep takes. Few
processes are started (each imports TensorFlow): a sweep run again, and one of two workers, run in this one."""

import contextlib
import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
import yaml

import zoo
from tests.conftest import HANG, ROOT, as_flags, run_recipe

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SETTINGS = {"dataset": "sst2", "preset": "tiny", "max_examples": 200, "vocab_size": 300, "batch_size": 8,
            "train_steps": 6, "checkpoint_every": 3, "log_every": 3}
GRID = {"method": "grid", "metric": "validation.accuracy",
        "space": {"train.learning_rate": [1.0e-3, 3.0e-3], "model.dropout": [0.0, 0.1]}}


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory):
    sweep_dir = tmp_path_factory.mktemp("grid") / "sst2"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        results = zoo.sweep("sentiment", sweep_dir, GRID, **SETTINGS)
    return sweep_dir, results, out.getvalue()


def rows_of(sweep_dir):
    with open(sweep_dir / "results.csv") as f:
        return list(csv.DictReader(f))


def test_results_agree_with_each_trials_run_folder(grid_sweep):
    sweep_dir, results, out = grid_sweep
    rows = rows_of(sweep_dir)
    assert [row["trial"] for row in rows] == ["trial-000", "trial-001", "trial-002", "trial-003"]
    for row, point in zip(rows, [(lr, dropout) for lr in (1e-3, 3e-3) for dropout in (0.0, 0.1)]):
        folder = sweep_dir / row["trial"]
        config = json.loads((folder / "config.json").read_text())
        assert (config["train"]["learning_rate"], config["model"]["dropout"]) == point
        assert (float(row["train.learning_rate"]), float(row["model.dropout"])) == point
        figures = json.loads((folder / "metrics.json").read_text())
        assert float(row["validation.accuracy"]) == figures["eval_validation"]["accuracy"]
        assert (row["status"], row["steps"], row["error"]) == ("done", "6", "")
        assert f"| {row['trial']} |" in (sweep_dir / "results.md").read_text()
    accuracies = [float(row["validation.accuracy"]) for row in rows]
    best = rows[int(np.argmax(accuracies))]
    assert (sweep_dir / "best").read_text() == f"{best['trial']} validation.accuracy={max(accuracies)!r}\n"
    assert results.best["trial"] == best["trial"]
    assert (sweep_dir / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert yaml.safe_load((sweep_dir / "space.yaml").read_text())["space"] == GRID["space"]
    assert "trial 4/4 done: trial-003 validation.accuracy" in out and "Resuming" not in out


def test_run_again_it_reruns_nothing_and_refuses_another_space(grid_sweep):
    sweep_dir, results, _ = grid_sweep
    stamps = {path: os.stat(path).st_mtime_ns for path in sweep_dir.glob("trial-*/*")}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        again = zoo.sweep("sentiment", sweep_dir, GRID, **SETTINGS)
    assert not [line for line in out.getvalue().splitlines() if line.startswith("trial")]
    assert again.rows == results.rows
    assert {path: os.stat(path).st_mtime_ns for path in sweep_dir.glob("trial-*/*")} == stamps
    other = {**GRID, "space": {**GRID["space"], "model.dropout": [0.0, 0.2]}}
    with pytest.raises(ValueError, match=r"another space or other settings \(space\.model\.dropout: \[0\.0, 0\.1\] "
                                         r"-> \[0\.0, 0\.2\]\)"):
        zoo.sweep("sentiment", sweep_dir, other, **SETTINGS)
    with pytest.raises(ValueError, match=r"config\.data\.max_examples: 200 -> 300"):
        zoo.sweep("sentiment", sweep_dir, GRID, **{**SETTINGS, "max_examples": 300})


def test_the_best_trials_config_trains_it_again_bit_for_bit(grid_sweep, tmp_path):
    sweep_dir, results, _ = grid_sweep
    best = sweep_dir / results.best["trial"]
    with contextlib.redirect_stdout(io.StringIO()):
        zoo.train("sentiment", tmp_path / "again", config=str(best / "config.json"), mode="train")
    trial, again = (tf.train.load_checkpoint(str(folder / "ckpt-6")) for folder in (best, tmp_path / "again"))
    names = [name for name in trial.get_variable_to_shape_map() if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert sorted(names) == sorted(n for n in again.get_variable_to_shape_map() if n != "_CHECKPOINTABLE_OBJECT_GRAPH")
    for name in names:
        np.testing.assert_array_equal(trial.get_tensor(name), again.get_tensor(name), err_msg=name)


def sweep_command(space_path, sweep_dir, **settings):
    return [sys.executable, "-m", "recipes.sweep", "--recipe=sentiment", f"--space={space_path}",
            f"--sweep_dir={sweep_dir}", *as_flags({**SETTINGS, **settings})]


def write_space(path, fields):
    path.write_text(yaml.safe_dump({"method": "grid", "metric": "validation.accuracy", "space": fields},
                                   sort_keys=False))
    return path


def test_a_sweep_killed_mid_trial_resumes_it_and_reruns_no_finished_trial(tmp_path):
    space = write_space(tmp_path / "space.yaml", {"train.learning_rate": [1.0e-3, 2.0e-3]})
    sweep_dir, log, longer = tmp_path / "sweep", tmp_path / "first.log", dict(train_steps=60, checkpoint_every=2)
    with open(log, "w") as out:
        first = subprocess.Popen(sweep_command(space, sweep_dir, **longer), cwd=ROOT, stdout=out,
                                 stderr=subprocess.STDOUT)
    deadline = time.time() + HANG
    # Killed once ckpt-2 is whole (ckpt-4 begun): a kill while a run writes its first checkpoint can leave that one
    # unreadable, and a run with no readable checkpoint refuses to resume (zoo.runs.checkpoints.newest_readable).
    while not (sweep_dir / "trial-001" / "ckpt-4.index").exists():
        assert first.poll() is None and time.time() < deadline, log.read_text()[-3000:]
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert not (sweep_dir / "trial-001" / "metrics.json").exists(), "trial-001 ended before it could be cut"
    finished = {path: os.stat(path).st_mtime_ns for path in (sweep_dir / "trial-000").iterdir()}
    with contextlib.redirect_stdout(io.StringIO()) as again:  # the same sweep again, here: zoo.sweep is the command
        zoo.sweep("sentiment", sweep_dir, str(space), **{**SETTINGS, **longer})
    assert "trial-001 (resumed)" in again.getvalue() and "Resuming from step" in again.getvalue()
    assert "trial-000:" not in again.getvalue()
    assert {path: os.stat(path).st_mtime_ns for path in (sweep_dir / "trial-000").iterdir()} == finished
    rows = rows_of(sweep_dir)
    assert [(row["trial"], row["status"], row["steps"]) for row in rows] == [("trial-000", "done", "60"),
                                                                            ("trial-001", "done", "60")]


def test_two_workers_share_a_grid_each_point_once_and_a_failing_point_is_recorded(tmp_path):
    """A worker started from the command line and one in this process (zoo.sweep) on one grid."""
    space = write_space(tmp_path / "space.yaml", {"train.learning_rate": [1.0e-3, 1.0e+30], "model.dropout": [0.0, 0.1]})
    other = subprocess.Popen(sweep_command(space, tmp_path / "sweep"), cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    began = other.stdout.readline()  # "Sweep ...": it has joined, and takes its first trial
    with contextlib.redirect_stdout(io.StringIO()) as here:
        zoo.sweep("sentiment", tmp_path / "sweep", str(space), **SETTINGS)
    out, err = other.communicate(timeout=HANG)
    out = began + out
    assert other.returncode == 0, err[-3000:]
    started = [line.split(":")[0] for text in (out, here.getvalue()) for line in text.splitlines()
               if line.startswith("trial-")]
    assert sorted(started) == ["trial-000", "trial-001", "trial-002", "trial-003"]
    rows = rows_of(tmp_path / "sweep")
    assert [row["status"] for row in rows] == ["done", "done", "failed", "failed"]
    assert all(row["error"].startswith("NonFiniteLossError: The loss is nan") for row in rows[2:])
    assert (tmp_path / "sweep" / "best").read_text().startswith(("trial-000 ", "trial-001 "))


def test_a_bad_space_is_one_error_line_naming_the_field_and_nothing_is_written(tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("method: grid\nmetric: validation.accuracy\nspace:\n  model.dropuot: [0.1]\n")
    result = run_recipe("sweep", "--recipe=sentiment", f"--space={space}", f"--sweep_dir={tmp_path / 'sweep'}",
                        "--dataset=sst2", check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: {space}: model.dropuot is not a config field")
    assert not (tmp_path / "sweep").exists()


def listed(help_text, name):
    """Whether absl's help lists the flag `name`."""
    return re.search(rf"^  --(\[no\])?{name}:", help_text, re.MULTILINE) is not None  # a wrapped line: 4 spaces


def test_helpfull_lists_the_flags_a_sweep_takes_and_none_it_refuses():
    with_recipe = run_recipe("sweep", "--recipe=sentiment", "--helpfull", check=False).stdout
    for name in ("recipe", "space", "sweep_dir", "storage", "preset", "config", "epochs", "dataset", "train_steps",
                 "vocab_size", "learning_rate"):
        assert listed(with_recipe, name), name
    for name in ("model_dir", "export_dir", "mode", "average_checkpoints", "predictions", "text"):
        assert not listed(with_recipe, name), name
    without = run_recipe("sweep", "--helpfull", check=False).stdout
    assert "give it with --helpfull to list them" in " ".join(without.split()) and listed(without, "preset")
    for name in ("model_dir", "export_dir", "train_steps"):
        assert not listed(without, name), name


def test_a_missing_recipe_is_said_as_such(tmp_path):
    result = run_recipe("sweep", f"--space={tmp_path / 'space.yaml'}", f"--sweep_dir={tmp_path / 'sweep'}",
                        "--dataset=sst2_tune", check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: --recipe is required: the recipe whose runs are "
                                                             "searched (sentiment, translate, lm, pretrain)")


def test_a_setting_every_trial_shares_is_refused_before_any_trial(tmp_path):
    """--preset=tiny --max_examples=2000 with the default vocab_size=8000: more pieces than SentencePiece makes of
    2,000 sentences. Every trial would fail; the sweep is refused in the run's own words, its folder not made."""
    space = write_space(tmp_path / "space.yaml", {"model.dropout": [0.1, 0.2]})
    result = run_recipe("sweep", "--recipe=sentiment", f"--space={space}", f"--sweep_dir={tmp_path / 'sweep'}",
                        "--dataset=sst2", "--preset=tiny", "--max_examples=2000", "--train_steps=150", check=False)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {space}: the trial at model.dropout=0.1 cannot train")
    assert "vocab_size=8000 is too large for this training text: SentencePiece can make at most 3424" in errors[0]
    assert not (tmp_path / "sweep").exists()
