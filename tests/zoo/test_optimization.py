import math

import numpy as np
import pytest
import tensorflow as tf

from zoo.optimization import WarmupInverseSqrt, smoothed_cross_entropy


def test_schedule_is_the_papers_formula_scaled_to_its_peak():
    d_model, warmup = 512, 4000
    peak = (d_model * warmup) ** -0.5
    schedule = WarmupInverseSqrt(peak, warmup)
    for keras_step in (0, 99, 3999, 4000, 20000):
        step = keras_step + 1
        paper = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert float(schedule(keras_step)) == pytest.approx(paper, rel=1e-5)


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
