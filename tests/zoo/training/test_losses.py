import math

import numpy as np
import pytest
import tensorflow as tf

from zoo.training.losses import smoothed_cross_entropy


def test_smoothed_cross_entropy_matches_numpy():
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], np.float32)
    labels = np.array([0, 2])
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    for eps in (0.0, 0.1):
        target = np.full((2, 3), eps / 3)
        target[np.arange(2), labels] += 1 - eps
        expected = -(target * log_p).sum(-1)
        got = smoothed_cross_entropy(tf.constant(labels), tf.constant(logits), eps).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert math.isfinite(float(smoothed_cross_entropy(tf.constant([1]), tf.constant([[1e4, -1e4]]), 0.1)[0]))


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_smoothed_cross_entropy_gradient_is_softmax_minus_the_smoothed_target(eps):
    # d loss / d logits = upstream * (softmax(logits) - target), for every example, in any batch shape.
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 7)).astype(np.float32) * 3
    labels = rng.integers(0, 7, size=(2, 3))
    upstream = rng.normal(size=(2, 3)).astype(np.float32)
    x = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = tf.reduce_sum(smoothed_cross_entropy(tf.constant(labels), x, eps) * upstream)
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    target = np.full(logits.shape, eps / 7)
    np.put_along_axis(target, labels[..., None], 1 - eps + eps / 7, axis=-1)
    np.testing.assert_allclose(tape.gradient(total, x).numpy(), upstream[..., None] * (softmax - target), atol=1e-6)


def test_smoothed_cross_entropy_gradient_in_bfloat16_logits_and_graph():
    logits = tf.constant(np.random.default_rng(1).normal(size=(4, 5)), tf.bfloat16)
    labels = tf.constant([0, 4, 2, 2])

    @tf.function
    def gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(smoothed_cross_entropy(labels, x, 0.1))
        return tape.gradient(total, x)

    got = gradient(logits)
    assert got.dtype == tf.bfloat16
    expected = gradient(tf.cast(logits, tf.float32))  # the same logits, computed from float32
    np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(), expected.numpy(), atol=1e-2)
    assert np.abs(expected.numpy()).max() > 0.05


def test_smoothed_cross_entropy_refuses_labels_of_another_shape():
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        smoothed_cross_entropy(tf.zeros([1, 3], tf.int32), tf.zeros([3, 1, 5]))
