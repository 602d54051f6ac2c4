"""zoo.runs.run_dir: the run's record and figures read and written in one place (atomically, damaged files
named with what to do), the recipe, resumption and finished checks with their messages, the trained
model loaded in float32, and the folder held while a run writes there."""

import dataclasses
import json
import os
import re

import pytest
import tensorflow as tf

import zoo  # noqa: F401  (TensorFlow backend first)
import keras
from zoo.classifier import model as classifier
from zoo.runs import run_dir
from zoo.pretraining.model import PretrainConfig
from zoo.runs.run_dir import CONFIG_FILE, METRICS_FILE, RunDir, RunDirError
from zoo.runs.run_lock import LOCK_FILE
from zoo.training.config import TrainConfig

ENCODER = classifier.ClassifierConfig(vocab_size=50, hidden_dim=16, num_heads=2, intermediate_dim=32, num_layers=2,
                                      dropout=0.0, max_length=32, position="learned")


def save_steps(model_dir, steps, model=None):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model or tf.Variable(0.0)), str(model_dir),
                                         max_to_keep=None)
    for step in steps:
        manager.save(checkpoint_number=step)


# ---------------------------------------------------------------- config.json and metrics.json


def test_the_record_is_checked_to_belong_to_the_recipe(tmp_path):
    folder = RunDir(str(tmp_path))
    assert folder.read_run("sentiment") is None
    with pytest.raises(RunDirError, match=f"^{tmp_path} holds no trained 'sentiment' run \\(config.json missing\\): "
                                          "train there first.$"):
        folder.require_run("sentiment")
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"format": 2, "recipe": "translate",
                                                  "train": {"mixed_precision": "bfloat16"}}))
    with pytest.raises(RunDirError, match=f"^{tmp_path} holds a 'translate' run, not a 'sentiment' one: choose "
                                          "another --model_dir.$"):
        folder.read_run("sentiment")
    os.remove(tmp_path / CONFIG_FILE)
    save_steps(tmp_path, [5])
    with pytest.raises(RunDirError, match="holds checkpoints but no config.json: it is not a zoo run of 'sentiment'"):
        folder.read_run("sentiment")


@pytest.mark.parametrize("name, content, advice", [
    (CONFIG_FILE, '{"recipe": "sentiment", "mod', "Restore it from a backup, or move the folder away and train again"),
    (CONFIG_FILE, "[1, 2]", "Restore it from a backup"),
    (METRICS_FILE, "\x00\x00\x00", "Delete it (training and evaluation write it again) or restore it"),
])
def test_a_damaged_file_is_named_with_what_to_do(tmp_path, name, content, advice):
    (tmp_path / name).write_text(content)
    folder = RunDir(str(tmp_path))
    read = {CONFIG_FILE: lambda: folder.read_run("sentiment"),
            METRICS_FILE: lambda: folder.update_metrics(eval_test={"accuracy": 0.5})}[name]
    with pytest.raises(RunDirError) as damaged:
        read()
    assert str(damaged.value).startswith(f"{tmp_path / name} is damaged (") and advice in str(damaged.value)
    assert (tmp_path / name).read_text() == content  # nothing written over it


def test_a_folder_name_longer_than_the_file_system_takes_is_refused_when_read(tmp_path):
    folder = RunDir(str(tmp_path / ("x" * 300)))
    for read, name in ((folder.read_config, CONFIG_FILE), (folder.read_metrics, METRICS_FILE)):
        with pytest.raises(RunDirError) as refused:
            read()
        assert str(refused.value) == (f"Cannot read {folder.file(name)} (File name too long): choose a --model_dir "
                                      "with shorter folder names.")


def test_a_record_that_cannot_be_read_is_named(tmp_path):
    (tmp_path / CONFIG_FILE).mkdir()
    with pytest.raises(RunDirError) as refused:
        RunDir(str(tmp_path)).read_config()
    assert str(refused.value) == (f"Cannot read {tmp_path / CONFIG_FILE} (Is a directory): it must be a file this "
                                  "user can read; put it right, or choose another --model_dir.")


def test_metrics_sections_are_updated_atomically(tmp_path, monkeypatch):
    folder = RunDir(str(tmp_path))
    assert folder.read_metrics() == {}
    folder.update_metrics(train={"step": 30})
    assert folder.update_metrics(eval_validation={"accuracy": 0.8}) == {"train": {"step": 30},
                                                                        "eval_validation": {"accuracy": 0.8}}
    before = (tmp_path / METRICS_FILE).read_text()

    def full_disk(source, target):
        raise OSError(27, "File too large")

    monkeypatch.setattr(run_dir.disk.os, "replace", full_disk)  # the new file is written, then cannot take its place
    with pytest.raises(run_dir.disk.WriteError, match=f"Could not write {METRICS_FILE}: .*File too large"):
        folder.update_metrics(eval_test={"accuracy": 0.7})
    assert (tmp_path / METRICS_FILE).read_text() == before
    assert sorted(os.listdir(tmp_path)) == [METRICS_FILE]  # no half-written file left


def test_training_is_recorded_as_the_typed_config_only_where_it_can_resume(tmp_path):
    from zoo.classifier.run_config import SentimentData, SentimentRunConfig

    folder = RunDir(str(tmp_path))
    config = SentimentRunConfig(data=SentimentData("sst2"), train=TrainConfig(train_steps=30, batch_size=16))
    folder.record_training("sentiment", config, {"replicas": 1}, write=False)
    assert folder.read_config() is None  # a non-chief worker only checks
    folder.record_training("sentiment", config, {"replicas": 1, "class_names": ["a", "b"]})
    run = folder.read_run("sentiment")
    assert list(run) == ["format", "recipe", "data", "model", "train", "setup", "distill", "augment", "eval",
                         "derived"]  # eval: issue 59; distill, augment: issue 60
    assert run["train"] == dataclasses.asdict(config.train)
    record = folder.read_record("sentiment", SentimentRunConfig)
    assert record.config == config and record.derived == {"replicas": 1, "class_names": ["a", "b"]}
    message = ("This run cannot resume as asked: replicas=2 (was 1). Keep those settings to "
               "resume at the same data position, or use another --model_dir.")
    with pytest.raises(RunDirError, match=f"^{re.escape(message)}$"):
        folder.record_training("sentiment", config, {"replicas": 2})
    assert folder.read_run("sentiment")["derived"]["replicas"] == 1


def test_a_record_written_before_typed_configs_is_read_as_one(tmp_path):
    """Format 1 (the zoo before issue 44): data settings at the top level, sizes and devices under "data"."""
    from zoo.classifier.run_config import SentimentRunConfig
    from zoo.core.config import ConfigError

    old = {"recipe": "sentiment", "dataset": "csv:reviews/{split}.csv", "init_from": None,
           "model": dataclasses.asdict(classifier.PRESETS["tiny"]), "class_names": ["neg", "pos"],
           "files": {"digest": "abc", "columns": {"text": "body", "label": "stars", "bad_rows": "skip"},
                     "bad_rows_skipped": 2},
           "train": dataclasses.asdict(TrainConfig(train_steps=30)),
           "data": {"max_examples": 100, "replicas": 1, "strategy": "OneDeviceStrategy"}}
    (tmp_path / CONFIG_FILE).write_text(json.dumps(old))
    record = RunDir(str(tmp_path)).read_record("sentiment", SentimentRunConfig)
    data = record.config.data
    assert (data.dataset, data.text_column, data.label_column, data.bad_rows, data.max_examples) == (
        "csv:reviews/{split}.csv", "body", "stars", "skip", 100)
    assert record.config.model == classifier.PRESETS["tiny"] and record.config.train.train_steps == 30
    assert record.derived == {"replicas": 1, "strategy": "OneDeviceStrategy", "class_names": ["neg", "pos"],
                              "files": {"digest": "abc", "bad_rows_skipped": 2}}
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"format": 9, "recipe": "sentiment"}))
    with pytest.raises(ConfigError, match="written by another zoo .config.json format 9"):
        RunDir(str(tmp_path)).read_record("sentiment", SentimentRunConfig)


def test_a_worker_waits_for_the_chiefs_file_then_gives_up_naming_it(tmp_path):
    (tmp_path / "tokenizer.model").write_bytes(b"")
    RunDir(str(tmp_path)).wait_for("tokenizer.model", timeout=0)
    with pytest.raises(RunDirError, match=f"The chief worker has not written {tmp_path}/vocabulary.json within 0 s."):
        RunDir(str(tmp_path)).wait_for("vocabulary.json", timeout=0)


def test_translation_tokenizer_files():
    assert RunDir.tokenizer_files(True) == ("tokenizer.model", "tokenizer.model")
    assert RunDir.tokenizer_files(False) == ("source.model", "target.model")
    # A side of words (word vectors) keeps its word vocabulary instead; a shared vocabulary of words is words.txt.
    assert RunDir.tokenizer_files(True, (False, True)) == ("words.txt", "words.txt")
    assert RunDir.tokenizer_files(False, (False, True)) == ("source.model", "target.words.txt")
    assert RunDir.tokenizer_files(False, (True, True)) == ("source.words.txt", "target.words.txt")


# ---------------------------------------------------------------- finished runs


def make_pretraining_run(path, recipe="pretrain", train_steps=10, checkpoint_steps=(10,), config=True):
    path.mkdir(parents=True, exist_ok=True)
    if config:
        run = {"recipe": recipe, "model": dataclasses.asdict(PretrainConfig(encoder=ENCODER, sequence_length=16)),
               "train": {"train_steps": train_steps}}
        (path / CONFIG_FILE).write_text(json.dumps(run))
    save_steps(path, checkpoint_steps)
    return RunDir(str(path))


def test_a_finished_pretraining_run_is_accepted(tmp_path):
    assert make_pretraining_run(tmp_path / "done", checkpoint_steps=(5, 10)).read_finished("pretrain")["recipe"]
    assert make_pretraining_run(tmp_path / "half", checkpoint_steps=(5,)).read_finished("pretrain", finished=False)


@pytest.mark.parametrize("kind, message", [
    ("no_config", "holds no pretraining run (no config.json): run recipes.pretrain there."),
    ("other_recipe", "holds a 'sentiment' run, not a pretraining one."),
    ("unfinished", "holds an unfinished pretraining run (step 8 of 10): finish it (run recipes.pretrain "
                   "--mode=train there again) before using it."),
    ("no_checkpoint", "holds an unfinished pretraining run (step 0 of 10)"),
    ("absent", "holds no pretraining run"),
])
def test_an_unfinished_or_foreign_run_is_refused_naming_why(kind, message, tmp_path):
    path = tmp_path / kind
    folder = {
        "no_config": lambda: make_pretraining_run(path, config=False),
        "other_recipe": lambda: make_pretraining_run(path, recipe="sentiment"),
        "unfinished": lambda: make_pretraining_run(path, train_steps=10, checkpoint_steps=(4, 8)),
        "no_checkpoint": lambda: make_pretraining_run(path, checkpoint_steps=()),
        "absent": lambda: RunDir(str(path)),
    }[kind]()
    with pytest.raises(RunDirError) as refused:
        folder.read_finished("pretrain")
    assert str(refused.value).startswith(f"{path} ") and message in str(refused.value)
    if kind == "no_checkpoint":
        with pytest.raises(RunDirError, match="holds no checkpoint yet: train there first"):
            folder.read_finished("pretrain", finished=False)


# ---------------------------------------------------------------- the trained model


def test_the_model_loads_in_float32_and_the_callers_policy_is_kept(tmp_path):
    config = dataclasses.replace(ENCODER, num_classes=2)
    trained = classifier.build_classifier(config)
    save_steps(tmp_path, [10], trained)
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        model, step = RunDir(str(tmp_path)).load_model(lambda: classifier.build_classifier(config))
        assert keras.mixed_precision.dtype_policy().name == "mixed_bfloat16"
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert step == 10 and {layer.dtype_policy.name for layer in model.layers} == {"float32"}
    ids = tf.constant([[2, 7, 9, 0]])
    assert model(ids).dtype == tf.float32
    tf.debugging.assert_equal(model(ids), trained(ids))


# ---------------------------------------------------------------- one run at a time


def test_holding_a_folder(tmp_path):
    folder = RunDir(str(tmp_path / "new"))
    with folder.hold():  # a mode that only writes into an existing run: nothing to hold, nothing made
        assert not os.path.exists(folder.path)
    with pytest.raises(ValueError):
        with folder.hold(create=True):
            assert folder.holds(LOCK_FILE)
            raise ValueError("the data failed to load")
    assert not os.path.exists(folder.path)  # made for the run, and left empty: removed
    with folder.hold(create=True):
        folder.update_metrics(train={"step": 1})
    assert os.listdir(folder.path) == [METRICS_FILE]
    with folder.hold():
        assert folder.holds(LOCK_FILE)
    assert not folder.holds(LOCK_FILE)


def test_a_run_resumes_only_under_the_held_out_rule_it_started_with(tmp_path):
    from zoo.classifier.run_config import SentimentData, SentimentRunConfig

    folder = RunDir(str(tmp_path))
    config = SentimentRunConfig(data=SentimentData("csv:data/{split}.csv"))
    folder.record_training("sentiment", config, {"replicas": 1, "held_out": True})
    with pytest.raises(RunDirError, match=r"held_out=False \(was True\) \(held_out: how validation is kept out"):
        folder.record_training("sentiment", config, {"replicas": 1, "held_out": False})
    folder.record_training("sentiment", config, {"replicas": 1, "held_out": True})
