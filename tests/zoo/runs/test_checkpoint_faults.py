"""Fault injection, checkpoints: a damaged newest checkpoint is named and passed over for the newest
one that reads; a lost `checkpoint` index file never sends a run back to step 0, nor keeps the checkpoints
it listed from being rotated away."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.conftest import run_recipe
from zoo.runs import checkpoints

# zoo.train's keywords: a tiny run checkpointing every 5 steps.
QUICK = {"dataset": "sst2", "preset": "tiny", "max_examples": 500, "vocab_size": 300, "batch_size": 16,
         "checkpoint_every": 5, "log_every": 5, "mode": "train"}


def save_steps(model_dir, steps):
    value = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(value=value), model_dir, max_to_keep=None)
    for step in steps:
        value.assign(float(step))
        manager.save(checkpoint_number=step)


def truncate_data(model_dir, step):
    path = checkpoints.path_of(model_dir, step) + ".data-00000-of-00001"
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


def test_a_damaged_newest_checkpoint_is_named_and_the_next_older_one_used(tmp_path):
    save_steps(str(tmp_path), [10, 20, 30])
    truncate_data(str(tmp_path), 30)
    said = []
    path, step, skipped = checkpoints.newest_readable(str(tmp_path), log=said.append)
    assert (step, skipped) == (20, [checkpoints.path_of(str(tmp_path), 30)]) and path.endswith("ckpt-20")
    assert "ckpt-30 cannot be read" in said[0]
    reader = tf.train.load_checkpoint(path)
    assert reader.get_tensor("value/.ATTRIBUTES/VARIABLE_VALUE") == 20.0


def test_a_lost_index_file_is_replaced_by_the_file_names(tmp_path):
    save_steps(str(tmp_path), [5, 15])
    os.remove(tmp_path / "checkpoint")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    said = []
    assert checkpoints.newest_readable(str(tmp_path), log=said.append)[1] == 15
    assert "no readable 'checkpoint' index file" in said[0]


def test_checkpoints_orphaned_by_a_lost_index_file_are_rotated_with_the_rest(tmp_path):
    model_dir, value = str(tmp_path), tf.Variable(0.0)
    for steps in ((10, 20, 30), (40, 50, 60)):  # a run, then one resuming after the index file was lost
        manager = checkpoints.CheckpointManager(tf.train.Checkpoint(value=value), model_dir, max_to_keep=3)
        for step in steps:
            manager.save(step)
        os.remove(tmp_path / "checkpoint")
    assert checkpoints.checkpoint_steps(model_dir) == [60, 50, 40]
    assert sorted(os.listdir(model_dir)) == [f"ckpt-{step}.{kind}" for step in (40, 50, 60)
                                             for kind in ("data-00000-of-00001", "index")]


def test_no_readable_checkpoint_is_an_error_and_none_at_all_is_not(tmp_path):
    assert checkpoints.newest_readable(str(tmp_path)) == (None, 0, [])
    save_steps(str(tmp_path), [1, 2])
    truncate_data(str(tmp_path), 1)
    truncate_data(str(tmp_path), 2)
    with pytest.raises(checkpoints.CheckpointError, match="ckpt-2, ckpt-1 are damaged"):
        checkpoints.newest_readable(str(tmp_path), log=lambda _: None)


@pytest.fixture(scope="module", name="trained")
def trained_fixture(tmp_path_factory):
    """A run trained to step 10 (checkpoints at 5 and 10) by zoo.train, in this process; each test damages a copy."""
    model_dir = tmp_path_factory.mktemp("trained") / "run"
    zoo.train("sentiment", model_dir, **QUICK, train_steps=10)
    return model_dir


def test_training_resumes_past_a_lost_index_file_without_overwriting(trained, tmp_path, capsys):
    model_dir = shutil.copytree(trained, tmp_path / "run")  # copy2: the checkpoints keep their times
    before = {name: os.path.getmtime(model_dir / name) for name in os.listdir(model_dir) if name.startswith("ckpt-")}
    os.remove(model_dir / "checkpoint")
    capsys.readouterr()
    zoo.train("sentiment", model_dir, **QUICK, train_steps=15)
    resumed = capsys.readouterr().out
    assert "Resuming from step 10 " in resumed and "step 15/15" in resumed
    assert all(os.path.getmtime(model_dir / name) == mtime for name, mtime in before.items())


def test_a_damaged_newest_checkpoint_is_set_aside_and_every_mode_uses_the_older(trained, tmp_path, capsys):
    model_dir = str(shutil.copytree(trained, tmp_path / "run"))
    truncate_data(model_dir, 10)
    evaluated = run_recipe("sentiment", "--mode=eval", f"--model_dir={model_dir}")  # the command line's own lines
    assert "ckpt-10 cannot be read" in evaluated.stdout and "validation: accuracy" in evaluated.stdout
    capsys.readouterr()
    zoo.train("sentiment", model_dir, **QUICK, train_steps=10)
    resumed = capsys.readouterr().out
    assert "Resuming from step 5 " in resumed and "step 10/10" in resumed
    aside = sorted(os.listdir(tmp_path / "run" / checkpoints.UNREADABLE_DIR))
    assert aside == ["ckpt-10.data-00000-of-00001", "ckpt-10.index"]
    assert checkpoints.unreadable_reason(checkpoints.path_of(model_dir, 10)) is None  # the new step 10
    assert np.isfinite(tf.train.load_checkpoint(checkpoints.path_of(model_dir, 10)).get_tensor(
        "step/.ATTRIBUTES/VARIABLE_VALUE"))
