"""The training loop on a small synthetic task (no dropout, so runs are exact)."""

import dataclasses
import os
import re
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo.data import batching
from zoo.classifier.losses import classification_loss
from zoo.runs import checkpoints
from zoo.training.loop import NonFiniteLossError, Trainer
from zoo.training.stopping import Stopped, noting_stop_signals, stop_on_signals
from zoo.training.config import Task, TrainConfig

RNG = np.random.default_rng(0)
ROWS = [RNG.integers(1, 20, size=RNG.integers(2, 12)).astype(np.int32) for _ in range(64)]
LABELS = np.asarray([int(r[0] > 10) for r in ROWS], np.int32)
CONFIG = TrainConfig(
    train_steps=8, batch_size=8, learning_rate=1e-2, warmup_steps=2, label_smoothing=0.0, checkpoint_every=4, log_every=2
)


def build_model():
    token_ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8)(token_ids)
    x = keras.layers.Dense(8, activation="relu")(x[:, 0])
    return keras.Model(token_ids, keras.layers.Dense(2)(x))


def task(config, extra_loss=None):
    plan = batching.training_plan([len(r) for r in ROWS], config.train_steps, config.batch_size, seed=0)
    fields = {"token_ids": ROWS, "label": LABELS, "index": np.arange(len(ROWS), dtype=np.int32)}
    loss = classification_loss(0.0)

    def loss_fn(model, batch, training):
        loss_sum, weight, tokens = loss(model, batch, training)
        return loss_sum + (extra_loss(batch) if extra_loss else 0.0), weight, tokens

    return Task(build_model, lambda context, start: batching.plan_dataset(plan, fields, skip=start), loss_fn)


def trainer(model_dir, config=CONFIG, extra_loss=None):
    return Trainer(task(config, extra_loss), config, str(model_dir), tf.distribute.OneDeviceStrategy("/cpu:0"))


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    full = trainer(tmp_path / "full")
    full.train()
    first_half = trainer(tmp_path / "resumed", dataclasses.replace(CONFIG, train_steps=4))
    assert first_half.train()["step"] == 4
    resumed = trainer(tmp_path / "resumed")
    assert int(resumed.step.numpy()) == 4 and int(resumed.optimizer.iterations.numpy()) == 4
    assert resumed.train()["step"] == 8
    for a, b in zip(full.model.weights, resumed.model.weights):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    for a, b in zip(full.optimizer.variables, resumed.optimizer.variables):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_training_lowers_the_loss_and_keeps_a_bounded_number_of_checkpoints(tmp_path):
    config = dataclasses.replace(
        CONFIG, train_steps=60, learning_rate=3e-2, checkpoint_every=5, keep_checkpoints=2, log_every=5
    )
    run = trainer(tmp_path, config)
    result = run.train()
    assert result["step"] == 60 and result["tokens_per_second"] > 0 and result["steady_tokens_per_second"] > 0
    checkpoints = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert [os.path.basename(p) for p in checkpoints] == ["ckpt-55", "ckpt-60"]
    batch = next(iter(batching.plan_dataset([np.arange(64)], {"token_ids": ROWS, "label": LABELS})))
    loss_sum, weight, _ = run.task.loss(run.model, batch, False)
    assert float(loss_sum) / float(weight) < 0.5


def test_a_nan_loss_stops_the_run_naming_the_step_and_saves_nothing_after(tmp_path):
    plan = batching.training_plan([len(r) for r in ROWS], CONFIG.train_steps, CONFIG.batch_size, seed=0)
    third = int(plan[2][0])  # batches are deterministic: poison the one the plan puts third

    def nan_at_step_three(batch):
        return tf.where(tf.reduce_any(batch["index"] == third), np.nan, 0.0)

    run = trainer(tmp_path, dataclasses.replace(CONFIG, checkpoint_every=2, log_every=1), nan_at_step_three)
    with pytest.raises(NonFiniteLossError, match="at step 3"):
        run.train()
    assert os.path.basename(tf.train.latest_checkpoint(str(tmp_path))) == "ckpt-2"


def test_a_finished_run_is_left_as_it_is(tmp_path):
    trainer(tmp_path).train()
    assert trainer(tmp_path).train() is None


def test_averaged_checkpoints_are_the_numpy_mean_of_their_weights(tmp_path):
    from zoo.runs.checkpoints import CheckpointError
    from zoo.runs.checkpoints import restore_model

    trainer(tmp_path, dataclasses.replace(CONFIG, train_steps=12, checkpoint_every=4, keep_checkpoints=3)).train()
    readers = [tf.train.load_checkpoint(str(tmp_path / f"ckpt-{step}")) for step in (4, 8, 12)]
    model = build_model()
    assert restore_model(model, str(tmp_path), average=3) == 12
    # Each variable is saved once: the model's weights under the optimizer's list of them, in the model's order.
    assert len(model.trainable_variables) == len(model.weights) == 5
    for i, weight in enumerate(model.trainable_variables):
        name = f"optimizer/_trainable_variables/{i}/.ATTRIBUTES/VARIABLE_VALUE"
        expected = np.mean([r.get_tensor(name) for r in readers], axis=0)
        np.testing.assert_allclose(np.asarray(weight), expected, rtol=1e-6, atol=1e-7)
    newest = build_model()
    restore_model(newest, str(tmp_path))
    assert not all(np.array_equal(a, b) for a, b in zip(newest.get_weights(), model.get_weights()))
    with pytest.raises(CheckpointError, match="fewer than the 4 asked to average"):
        restore_model(build_model(), str(tmp_path), average=4)


def test_profiled_steps_leave_a_trace_of_their_kernels_and_train_as_an_unprofiled_run(tmp_path):
    from benchmarks.common.traces import by_type, self_times

    plain = trainer(tmp_path / "plain")
    plain.train()
    profiled = trainer(tmp_path / "profiled", dataclasses.replace(CONFIG, profile_steps=(3, 4)))
    assert profiled.train()["step"] == 8
    for a, b in zip(plain.model.weights, profiled.model.weights):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    traces = list((tmp_path / "profiled" / "train" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(traces) == 1
    times = by_type(self_times(str(traces[0])))
    assert any("MatMul" in op for op in times) and all(seconds >= -1e-9 for seconds in times.values())


@pytest.mark.parametrize("steps, message", [
    ((1, 3), "after the first step"), ((4, 3), "first <= last"), ((0, 0), "after the first step"),
    ((7, 9), "last <= train_steps=8"), ((3, 5), "spans a checkpoint"),
])
def test_a_profile_range_that_is_not_two_ordered_steps_between_checkpoints_is_refused(steps, message):
    with pytest.raises(ValueError, match=re.escape(f"profile_steps={steps}") + ".*" + re.escape(message)):
        dataclasses.replace(CONFIG, profile_steps=steps)


def test_a_resumed_run_past_the_profile_window_says_it_traces_nothing(tmp_path, capsys):
    trainer(tmp_path / "run", dataclasses.replace(CONFIG, train_steps=4)).train()
    capsys.readouterr()
    trainer(tmp_path / "run", dataclasses.replace(CONFIG, profile_steps=(5, 6))).train()
    assert "Not profiling steps 5-6: this run resumes at step 4" in capsys.readouterr().out
    assert not (tmp_path / "run" / "train" / "plugins").exists()


# ---------------------------------------------------------------- SIGTERM and SIGINT


@pytest.fixture(name="sigterm_kept")
def sigterm_kept_fixture():
    """SIGTERM noted here rather than ending pytest, should the code under test not take it."""
    got = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    yield got
    signal.signal(signal.SIGTERM, before)


def test_a_sigterm_saves_the_step_reached_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path, sigterm_kept):
    full = trainer(tmp_path / "full")
    full.train()
    executed = []

    def sigterm_at_step_three(batch):
        def count():
            executed.append(1)
            if len(executed) == 3:  # within the loop's second call (steps 3 and 4)
                os.kill(os.getpid(), signal.SIGTERM)
            return np.float32(0.0)

        return tf.py_function(count, [], tf.float32)

    far = dataclasses.replace(CONFIG, checkpoint_every=100)
    with pytest.raises(Stopped) as stopped:
        trainer(tmp_path / "stopped", far, sigterm_at_step_three).train()
    assert (stopped.value.step, stopped.value.signum, stopped.value.status) == (4, signal.SIGTERM, 143)
    assert str(stopped.value) == "stopped at step 4 by SIGTERM; the checkpoint is saved; run again to resume"
    assert checkpoints.checkpoint_steps(str(tmp_path / "stopped")) == [4] and sigterm_kept == []
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # the fixture's again
    resumed = trainer(tmp_path / "stopped", far)
    assert int(resumed.step.numpy()) == 4 and resumed.train()["step"] == 8
    for a, b in zip(full.model.weights + full.optimizer.variables, resumed.model.weights + resumed.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_ctrl_c_twice_stops_at_once_and_the_handlers_before_are_restored(sigterm_kept):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped) as stopped:
        with noting_stop_signals() as noted:
            signal.raise_signal(signal.SIGINT)
            assert noted == [signal.SIGINT]  # noted, for the loop to stop once the step reached is saved
            signal.raise_signal(signal.SIGINT)
    assert (stopped.value.step, stopped.value.status) == (None, 130)
    assert str(stopped.value) == "stopped by SIGINT; run again to continue (training resumes from its last checkpoint)"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    with pytest.raises(Stopped, match="^stopped by SIGTERM; "):
        with noting_stop_signals():
            signal.raise_signal(signal.SIGTERM)  # noted, and not acted on by the end of the block
    with pytest.raises(Stopped, match="^stopped by SIGTERM; "):
        with stop_on_signals():
            signal.raise_signal(signal.SIGTERM)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before and sigterm_kept == []
