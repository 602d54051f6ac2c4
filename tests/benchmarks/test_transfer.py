from benchmarks import transfer
from benchmarks.common import runs
from zoo.runs.run_dir import RunDir


def _run(tmp_path, **evaluations):
    tmp_path.mkdir(exist_ok=True)
    RunDir(str(tmp_path)).update_metrics(train={"step": 742, "seconds": 60.0}, **evaluations)
    return str(tmp_path)


def _recipe_that_evaluates(calls, key, accuracy):
    def recipe(module, run_dir, *flags_, **how):
        calls.append(flags_)
        entry = {"accuracy": accuracy, "step": 742, "average_checkpoints": 1}
        return RunDir(run_dir).update_metrics(**{key: entry})
    return recipe


def test_evaluation_reuses_an_entry_of_the_runs_last_step_and_last_checkpoint(tmp_path, monkeypatch):
    run_dir = _run(tmp_path, eval_test={"accuracy": 0.9224, "step": 742, "average_checkpoints": 1})
    calls = []
    monkeypatch.setattr(runs, "run_recipe", _recipe_that_evaluates(calls, "eval_test", 0.5))
    assert transfer.evaluation(run_dir, "eval_test", "--eval_split=test")["accuracy"] == 0.9224
    assert calls == []


def test_evaluation_runs_the_recipe_when_the_entry_is_missing_stale_or_averaged(tmp_path, monkeypatch):
    for case, entry in enumerate((None, {"accuracy": 0.9, "step": 700, "average_checkpoints": 1},
                                  {"accuracy": 0.9, "step": 742, "average_checkpoints": 3})):
        run_dir = _run(tmp_path / str(case), **({"eval_test": entry} if entry else {}))
        calls = []
        monkeypatch.setattr(runs, "run_recipe", _recipe_that_evaluates(calls, "eval_test", 0.5))
        assert transfer.evaluation(run_dir, "eval_test", "--dataset=imdb", "--eval_split=test")["accuracy"] == 0.5
        assert calls == [("--mode=eval", "--dataset=imdb", "--eval_split=test")]


def test_fine_tune_with_reports_another_datasets_split_from_a_reused_run(tmp_path, monkeypatch):
    # An sst2_tune run reports SST-2 dev (eval_sst2_validation) beside its own validation split.
    run_dir = _run(tmp_path, eval_validation={"accuracy": 0.9178, "step": 742, "average_checkpoints": 1},
                   eval_sst2_validation={"accuracy": 0.8853, "step": 742, "average_checkpoints": 1})
    monkeypatch.setattr(runs, "finished_run", lambda *args: True)
    monkeypatch.setattr(runs, "run_recipe", lambda *args: (_ for _ in ()).throw(AssertionError("ran the recipe")))
    result = transfer.fine_tune_with(["--dataset=sst2_tune"], "sst2", run_dir)
    assert (result["validation"], result["accuracy"], result["train_seconds"]) == (0.9178, 0.8853, 60.0)
