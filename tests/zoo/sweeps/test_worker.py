"""One worker's loop (zoo.sweeps.worker.run) with its trials' training replaced by a made-up one: a sweep whose
every trial failed raises the error they share once its results are written; --retry_failed runs the failed
trials again under their own numbers in their own folders; a finished sweep run again prints its summary and
best; results.csv's seconds are each trial's training time from its metrics.json."""

import contextlib
import csv
import io
import json
import os
import types

import pytest

from zoo.sweeps import trials, worker
from zoo.sweeps.trials import Outcome

SPACE = {"method": "grid", "metric": "validation.accuracy", "space": {"model.dropout": [0.0, 0.1, 0.2]}}
VOCABULARY = "ValueError: vocab_size=8000 is more than the 3424 pieces SentencePiece can make"


class Fixed:
    recipe = types.SimpleNamespace(name="sentiment")

    @staticmethod
    def record(config, space):
        return {"recipe": "sentiment", "config": {}, "epochs": None}


@pytest.fixture
def trained(monkeypatch):
    """The trials' runs: ([(folder, point)] run, the error to fail them with, else None)."""
    runs, failing = [], {"error": VOCABULARY}
    monkeypatch.setattr(trials, "check", lambda fixed, space, where: (space, types.SimpleNamespace(config=None)))

    def run(fixed, point, folder, metric):
        runs.append((os.path.basename(folder), point))
        if failing["error"]:
            return Outcome(None, 0, 1.0, failing["error"])
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "metrics.json"), "w") as f:
            json.dump({"train": {"seconds": 12.5}}, f)
        return Outcome(0.5 + point["model.dropout"], 6, 99.0)  # 99 s: the attempt's wall time, not its training

    monkeypatch.setattr(trials, "run", run)
    return runs, failing


def sweep(sweep_dir, retry_failed=False):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            return worker.run(Fixed(), SPACE, str(sweep_dir), retry_failed=retry_failed), out.getvalue()
        except worker.SweepFailed as failed:
            return failed, out.getvalue()


def rows_of(sweep_dir):
    with open(sweep_dir / "results.csv") as f:
        return list(csv.DictReader(f))


def test_a_sweep_whose_every_trial_failed_raises_their_error_after_writing_results(tmp_path, trained):
    failed, out = sweep(tmp_path / "s")
    assert isinstance(failed, worker.SweepFailed)
    assert str(failed).startswith(f"every trial of {tmp_path / 's'} failed (3 trials; every one: {VOCABULARY}).")
    assert "--retry_failed" in str(failed)
    assert [(row["status"], row["error"]) for row in rows_of(tmp_path / "s")] == [("failed", VOCABULARY)] * 3
    assert "3 of 3 trials finished (0 done, 3 failed); no best yet." in out
    again, _ = sweep(tmp_path / "s")  # run again, it says so again, and runs nothing
    assert isinstance(again, worker.SweepFailed) and len(trained[0]) == 3


def test_retry_failed_runs_them_again_in_their_own_folders(tmp_path, trained):
    runs, failing = trained
    sweep(tmp_path / "s")
    failing["error"] = None  # the cause has passed
    results, out = sweep(tmp_path / "s", retry_failed=True)
    assert "Running 3 failed trials again: trial-000, trial-001, trial-002." in out
    assert runs[3:] == [("trial-000", {"model.dropout": 0.0}), ("trial-001", {"model.dropout": 0.1}),
                        ("trial-002", {"model.dropout": 0.2})]
    rows = rows_of(tmp_path / "s")
    assert [(row["trial"], row["status"], row["error"]) for row in rows] == [
        ("trial-000", "done", ""), ("trial-001", "done", ""), ("trial-002", "done", "")]
    assert results.best["trial"] == "trial-002" and sorted(os.listdir(tmp_path / "s" / "trial-002")) == [
        "metrics.json"]


def test_a_finished_sweep_run_again_prints_its_summary_and_best(tmp_path, trained):
    trained[1]["error"] = None
    sweep(tmp_path / "s")
    _, out = sweep(tmp_path / "s")
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"Sweep {tmp_path / 's'}: a grid of 3 points")
    assert lines[1] == (f"Sweep {tmp_path / 's'}: 3 of 3 trials finished (3 done, 0 failed); best trial-002 "
                        f"validation.accuracy 0.7 ({tmp_path / 's' / 'trial-002'}).")
    assert (tmp_path / "s" / "best").read_text() == "trial-002 validation.accuracy=0.7\n"


def test_seconds_are_the_trials_training_time_from_its_metrics(tmp_path, trained):
    trained[1]["error"] = None
    sweep(tmp_path / "s")
    assert [row["seconds"] for row in rows_of(tmp_path / "s")] == ["12.5"] * 3
