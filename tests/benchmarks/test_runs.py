"""benchmarks/common/runs.py, the one "train unless finished, evaluate, read metrics" helper of the benchmark
programs: the command it runs, when it trains, when it evaluates again, and a fresh run's folder. The recipe's
process is replaced by a stand-in that writes what the recipe would into metrics.json."""

import os
import subprocess
import sys

import pytest

from benchmarks.common import report, runs
from zoo.runs.run_dir import RunDir


def fake_recipe(monkeypatch, calls, **entries):
    """subprocess.run as runs.run_recipe calls it: records (argv, cwd, env) and writes `entries` into the run's
    metrics.json (step 742, one checkpoint)."""
    def run(argv, cwd, env, check):
        calls.append((argv, cwd, env))
        run_dir = next(a for a in argv if a.startswith("--model_dir=")).removeprefix("--model_dir=")
        os.makedirs(run_dir, exist_ok=True)
        RunDir(run_dir).update_metrics(**{key: {"value": value, "step": 742, "average_checkpoints": 1}
                                          for key, value in entries.items()})
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(runs.subprocess, "run", run)


def test_the_recipe_runs_at_the_root_with_the_run_folder_last_and_its_metrics_come_back(tmp_path, monkeypatch):
    calls = []
    fake_recipe(monkeypatch, calls, eval_test=0.5)
    run_dir = str(tmp_path / "run")
    metrics = runs.run_recipe("lm", run_dir, "--mode=eval", "--eval_split=test", env={"A": "1"})
    assert metrics["eval_test"]["value"] == 0.5
    assert calls == [([sys.executable, "-m", "recipes.lm", "--mode=eval", "--eval_split=test",
                       f"--model_dir={run_dir}"], report.ROOT, {"A": "1"})]
    runs.run_recipe("pretrain", run_dir, "--mode=train", program=["benchmarks.worker", "--kind=x"])
    assert calls[-1][0] == [sys.executable, "-m", "benchmarks.worker", "--kind=x", "--mode=train",
                            f"--model_dir={run_dir}"]


def test_a_finished_run_of_the_flags_is_not_trained_again(tmp_path, monkeypatch):
    calls, checked = [], []
    fake_recipe(monkeypatch, calls, train=1.0)
    finished = {"value": False}
    monkeypatch.setattr(runs, "finished_run", lambda run_dir, flags_: checked.append(flags_) or finished["value"])
    run_dir = str(tmp_path / "run")
    assert runs.train_unless_finished("translate", run_dir, ["--a=1", "--config.b=2"], checked=["--a=1"]) is True
    assert calls[0][0][3:] == ["--a=1", "--config.b=2", "--mode=train", f"--model_dir={run_dir}"]
    finished["value"] = True
    assert runs.train_unless_finished("translate", run_dir, ["--a=1"]) is False
    assert len(calls) == 1 and checked == [["--a=1"], ["--a=1"]]  # `checked` defaults to all the flags


def test_a_run_without_its_record_is_not_finished_and_trains(tmp_path, monkeypatch):
    calls = []
    fake_recipe(monkeypatch, calls)
    monkeypatch.setattr(runs, "finished_run", report.finished_run)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    RunDir(str(run_dir)).update_metrics(train={"step": 2})  # finished, but no record: not the benchmark's run
    assert runs.train_unless_finished("lm", str(run_dir), ["--a=1"]) is True and len(calls) == 1


@pytest.mark.parametrize("reuse, entry, evaluates", [
    (None, {"value": 0.9, "step": 742, "average_checkpoints": 1}, True),
    ("any", {"value": 0.9, "step": 700, "average_checkpoints": 3}, False),
    ("any", None, True),
    ("current", {"value": 0.9, "step": 742, "average_checkpoints": 1}, False),
    ("current", {"value": 0.9, "step": 700, "average_checkpoints": 1}, True),
    ("current", {"value": 0.9, "step": 742, "average_checkpoints": 3}, True),
])
def test_an_evaluation_is_kept_only_as_reuse_says(tmp_path, monkeypatch, reuse, entry, evaluates):
    calls = []
    fake_recipe(monkeypatch, calls, eval_test=0.5)
    run_dir = str(tmp_path)
    RunDir(run_dir).update_metrics(train={"step": 742}, **({"eval_test": entry} if entry else {}))
    found = runs.evaluation("sentiment", run_dir, "eval_test", "--eval_split=test", reuse=reuse)
    assert found["value"] == (0.5 if evaluates else 0.9)
    assert [argv[3:-1] for argv, _, _ in calls] == ([["--mode=eval", "--eval_split=test"]] if evaluates else [])


def test_an_unknown_reuse_is_refused_before_any_run(tmp_path, monkeypatch):
    calls = []
    fake_recipe(monkeypatch, calls)
    with pytest.raises(ValueError, match="reuse='always'"):
        runs.evaluation("sentiment", str(tmp_path), "eval_test", reuse="always")
    assert calls == []


def test_a_fresh_run_removes_an_earlier_one_and_is_timed(tmp_path, monkeypatch):
    calls = []
    fake_recipe(monkeypatch, calls, eval_test=0.5)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "stale.txt").write_text("an earlier run's file")
    metrics, seconds = runs.fresh_run("sentiment", str(run_dir), "--mode=train_and_eval")
    assert metrics["eval_test"]["value"] == 0.5 and seconds >= 0
    assert not (run_dir / "stale.txt").exists()


def test_the_shown_command_and_relative_paths():
    command = runs.command("lm", ["--dataset=ptb", "--seed=0"], os.path.join(report.ROOT, "runs", "x"))
    assert command == f"python -m recipes.lm --dataset=ptb --seed=0 --model_dir={report.ROOT}/runs/x"
    assert runs.relative(command) == "python -m recipes.lm --dataset=ptb --seed=0 --model_dir=runs/x"
