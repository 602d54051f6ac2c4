import numpy as np
import pytest
import tensorflow as tf

import keras

from zoo.training.optimization import WarmupCosine, WarmupInverseSqrt, make_optimizer


def test_schedule_is_the_papers_formula_scaled_to_its_peak():
    d_model, warmup = 512, 4000
    peak = (d_model * warmup) ** -0.5
    schedule = WarmupInverseSqrt(peak, warmup)
    for keras_step in (0, 99, 3999, 4000, 20000):
        step = keras_step + 1
        paper = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert float(schedule(keras_step)) == pytest.approx(paper, rel=1e-5)


@pytest.mark.parametrize("floor", [0.0, 0.1])
def test_cosine_schedule_matches_keras_cosine_decay_with_warmup(floor):
    peak, warmup, total = 1e-3, 100, 1000
    ours = WarmupCosine(peak, warmup, total, floor)
    # Keras counts its first step as 0 and ours as 1, so ours(s) == keras(s + 1).
    reference = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=total - warmup, alpha=floor, warmup_target=peak, warmup_steps=warmup
    )
    for step in (0, 49, 99, 100, 400, 998, 999, 5000):
        assert float(ours(step)) == pytest.approx(float(reference(step + 1)), rel=1e-5, abs=1e-12)
    assert float(ours(total - 1)) == pytest.approx(peak * floor, rel=1e-5, abs=1e-12)
    assert WarmupCosine.from_config(ours.get_config()).get_config() == ours.get_config()


def test_unknown_schedule_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown learning-rate schedule 'linear'"):
        make_optimizer(1e-3, 10, schedule="linear")


def test_weight_decay_shrinks_kernels_and_embeddings_but_not_biases_or_layer_norm():
    # With zero gradients Adam moves nothing, so one step shows the decay alone: w <- w (1 - lr * wd).
    inputs = keras.Input((3,), dtype="int32")
    x = keras.layers.Embedding(10, 4)(inputs)
    x = keras.layers.LayerNormalization()(keras.layers.Dense(4, bias_initializer="ones")(x))
    model = keras.Model(inputs, x)
    optimizer = make_optimizer(1e-2, 1, weight_decay=0.5)  # warm-up of one step: lr = 1e-2 at once
    before = {v.path: v.numpy().copy() for v in model.trainable_variables}
    optimizer.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    for v in model.trainable_variables:
        decayed = v.path.endswith(("kernel", "embeddings"))
        expected = before[v.path] * (1 - 1e-2 * 0.5) if decayed else before[v.path]
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6, err_msg=v.path)


def test_negative_weight_decay_is_refused():
    from zoo.training.config import TrainConfig

    with pytest.raises(ValueError, match="weight_decay=-0.1 must be non-negative"):
        TrainConfig(weight_decay=-0.1)
