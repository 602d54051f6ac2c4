"""zoo.train: a recipe trained from Python in the calling process, its config from keywords, a mapping, a file
or the typed object, returning the loaded model (issue 44)."""

import json
import multiprocessing
import os
import subprocess

import pytest

import zoo
from zoo.core.config import ConfigError

QUICK = {"preset": "tiny", "dataset": "sst2", "max_examples": 200, "vocab_size": 300, "batch_size": 16,
         "train_steps": 4, "checkpoint_every": 4, "mode": "train"}


@pytest.fixture(name="no_child_process")
def no_child_process_fixture(monkeypatch):
    """Fails the test if anything starts a process."""
    def refuse(*args, **kwargs):
        raise AssertionError("zoo.train started a process")

    for module, name in ((subprocess, "Popen"), (os, "fork"), (os, "posix_spawn"), (os, "posix_spawnp"),
                         (os, "execv"), (os, "execve"), (multiprocessing.Process, "start")):
        monkeypatch.setattr(module, name, refuse)


def test_train_runs_in_this_process_and_returns_the_model(tmp_path, no_child_process, capsys):
    config = {"model": {"num_layers": 1, "hidden_dim": 16, "num_heads": 2, "intermediate_dim": 32,
                        "norm_first": True, "activation": "gelu", "max_length": 64}}
    model = zoo.train("sentiment", model_dir=tmp_path / "run", config=config, **QUICK)
    assert isinstance(model, zoo.api.Classifier) and model.step == 4
    (answer,) = model.predict(["a wonderful, moving film"])
    assert answer["label"] in ("negative", "positive")
    with open(tmp_path / "run" / "config.json") as f:
        record = json.load(f)
    assert {k: record["model"][k] for k in config["model"]} == config["model"]
    assert record["train"]["train_steps"] == 4 and record["data"]["max_examples"] == 200
    assert record["derived"]["preset"] == "tiny"  # the preset the run started from (issue 58)
    printed = capsys.readouterr().out  # a line before the first call traces the step, and one after the last
    assert "Training steps 1-4; the first 50 include tracing" in printed and "Trained to step 4 in " in printed
    # TensorFlow has started in this process: another CPU split is refused before anything is written.
    with pytest.raises(ValueError, match="setup.cpu_replicas=2 asks for 2 CPU devices, but TensorFlow already runs"):
        zoo.train("sentiment", model_dir=tmp_path / "mirrored", **QUICK, strategy="mirrored", cpu_replicas=2)
    assert not os.path.exists(tmp_path / "mirrored")


def test_config_json_is_read_once_per_training_start_evaluation_and_export(tmp_path, monkeypatch):
    """Issue 59: a command opens its run folder once and reads the record once, through its one reader: a fresh
    start (the model zoo.train returns included), a resumed one, --mode=eval and --mode=export each read config.json
    once, and the eval of the run leaves its record as training wrote it."""
    from zoo.runs.run_dir import CONFIG_FILE, RunDir
    from zoo.sentiment.recipe import SENTIMENT
    from zoo.training import driver

    reads, read = [], RunDir._read_json

    def counted(self, name, advice):
        if name == CONFIG_FILE:
            reads.append(self.path)
        return read(self, name, advice)

    def count(command):
        reads.clear()
        command()
        return reads

    def command(mode, **keywords):
        settings = driver.settings(SENTIMENT, mode, run, **keywords)
        driver.run(SENTIMENT, settings)
        return settings

    monkeypatch.setattr(RunDir, "_read_json", counted)
    run = str(tmp_path / "run")
    steps = {**QUICK, "train_steps": 1, "checkpoint_every": 1}
    assert count(lambda: zoo.train("sentiment", model_dir=run, **steps)) == [run]
    assert count(lambda: zoo.train("sentiment", model_dir=run, **{**steps, "train_steps": 2})) == [run]  # resumed
    record = (tmp_path / "run" / CONFIG_FILE).read_bytes()
    assert json.loads(record)["eval"]["batch_size"] == 16  # follows train.batch_size
    evaluated = []
    assert count(lambda: evaluated.append(command("eval", given={"batch_size": 8}))) == [run]
    assert evaluated[0].config.eval.batch_size == 8 and (tmp_path / "run" / CONFIG_FILE).read_bytes() == record
    assert count(lambda: command("export", export_dir=str(tmp_path / "export"))) == [run]


def test_a_bad_keyword_or_field_is_refused_by_name_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="learning_rat is not a setting of sentiment runs: did you mean learning_rate"):
        zoo.train("sentiment", model_dir=tmp_path / "run", learning_rat=1e-3, **QUICK)
    with pytest.raises(ConfigError, match="model.num_heads=3 does not divide model.hidden_dim=32"):
        zoo.train("sentiment", model_dir=tmp_path / "run", overrides=["model.num_heads=3"], **QUICK)
    with pytest.raises(ValueError, match="Unknown recipe 'chess': use one of sentiment, translate, lm, pretrain"):
        zoo.train("chess", model_dir=tmp_path / "run")
    assert not os.path.exists(tmp_path / "run")


def test_every_source_of_a_config_gives_the_same_typed_config(tmp_path):
    from zoo.api import RECIPES
    from zoo.core.config import to_yaml
    from zoo.language_model.run_config import LMData, LMRunConfig
    from zoo.training.run_settings import resolve

    lm = RECIPES["lm"]
    typed = resolve(lm, source=LMRunConfig(data=LMData("ptb")), overrides=["model.memory_length=96"])
    assert typed.model.memory_length == 96 and typed.data.dataset == "ptb"
    (tmp_path / "lm.yaml").write_text(to_yaml(typed))
    assert resolve(lm, source=str(tmp_path / "lm.yaml")) == typed  # a typed config is taken whole, dtype included
    mapping = resolve(lm, source={"data": {"dataset": "ptb"}}, given={"memory_length": 96})
    assert mapping == resolve(lm, overrides=[("data.dataset", "ptb"), ("model.memory_length", 96)])
    assert mapping.model == typed.model and mapping.data == typed.data
