"""A run stopped after a checkpoint and resumed ends bit for bit where the uninterrupted run
ends: weights, optimizer slots, step, dropout's random state (and Transformer-XL's memory).

The stop is made exact rather than timed: an uninterrupted run checkpoints every 4 steps to
step 12; a copy of its folder loses what came after step 4 (what a kill right after that
checkpoint leaves on disk) and trains again to 12. Every recipe, tiny preset, dropout on; both runs by
zoo.train in the test's own process (tests/recipes/test_preemption.py resumes from the command line).
"""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import zoo

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

STEPS = {"mode": "train", "train_steps": 12, "checkpoint_every": 4, "log_every": 2}
# Each recipe's settings, as zoo.train's keywords (tests.conftest.as_flags: as flags).
RECIPES = {
    "sentiment": {"dataset": "sst2", "preset": "tiny", "max_examples": 400, "vocab_size": 300, "batch_size": 8,
                  "dropout": 0.3},
    "translate": {"dataset": "multi30k", "source": "de", "target": "en", "preset": "tiny", "max_examples": 400,
                  "vocab_size": 300, "max_tokens": 512, "dropout": 0.3},
    "lm": {"dataset": "ptb", "preset": "tiny", "batch_size": 4, "dropout": 0.3},
    "pretrain": {"corpus": ["sst2"], "preset": "tiny", "vocab_size": 300, "sequence_length": 32, "batch_size": 8,
                 "dropout": 0.3},
}


def stop_after(model_dir, step):
    """model_dir as a run killed right after saving its step-`step` checkpoint leaves it."""
    for name in os.listdir(model_dir):
        if name.startswith("ckpt-") and int(name.split("-")[1].split(".")[0]) > step or name == "metrics.json":
            os.remove(os.path.join(model_dir, name))
    with open(os.path.join(model_dir, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "ckpt-{step}"\nall_model_checkpoint_paths: "ckpt-{step}"\n')


def saved_tensors(model_dir, step):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_run_resumed_after_a_checkpoint_ends_with_the_uninterrupted_runs_weights(recipe, tmp_path, capsys):
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    zoo.train(recipe, straight, **RECIPES[recipe], **STEPS)
    shutil.copytree(straight, resumed)
    stop_after(resumed, 4)
    capsys.readouterr()
    zoo.train(recipe, resumed, **RECIPES[recipe], **STEPS)
    printed = capsys.readouterr().out
    assert "Resuming from step 4" in printed
    assert ("restored the memory saved with that checkpoint" in printed) == (recipe == "lm")  # Transformer-XL's
    expected, got = saved_tensors(straight, 12), saved_tensors(resumed, 12)
    assert sorted(got) == sorted(expected)
    assert any(name.startswith("random_states/") for name in got)  # dropout is on: its state is saved
    assert any("optimizer" in name for name in got)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=f"{recipe}: {name} differs after resuming")
