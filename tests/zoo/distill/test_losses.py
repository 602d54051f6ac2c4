"""zoo.distill.losses against values computed by hand with NumPy (softmax, cross-entropy, centring)."""

import numpy as np
import pytest
import tensorflow as tf

from zoo.classifier.config import MULTI_LABEL, REGRESSION, SINGLE_LABEL
from zoo.classifier.distill_config import DistillConfig
from zoo.distill.losses import distillation_losses, teacher_losses

STUDENT = np.array([[2.0, -1.0, 0.5], [0.0, 0.0, 3.0]], np.float32)
TEACHER = np.array([[1.0, 0.0, -1.0], [-2.0, 1.0, 1.5]], np.float32)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_soft_is_temperature_squared_times_softened_cross_entropy():
    t = 2.0
    expected = t * t * -(softmax(TEACHER / t) * np.log(softmax(STUDENT / t))).sum(-1)
    got = teacher_losses(SINGLE_LABEL, tf.constant(TEACHER), tf.constant(STUDENT), "soft", t).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # First row by hand: softmax([0.5, 0, -0.5]) = [0.5065, 0.3072, 0.1863]; log softmax([1, -0.5, 0.25]) =
    # [-0.528, -2.028, -1.278]; 4 x (0.2674 + 0.6230 + 0.2381) = 4 x 1.1285 = 4.514.
    assert got[0] == pytest.approx(4.514, abs=2e-3)


def test_mse_centres_single_label_logits():
    centred = lambda x: x - x.mean(-1, keepdims=True)  # noqa: E731
    expected = ((centred(STUDENT) - centred(TEACHER)) ** 2).mean(-1)
    got = teacher_losses(SINGLE_LABEL, tf.constant(TEACHER), tf.constant(STUDENT), "mse").numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # Logits shifted by a constant teach the same: the teacher's log-probabilities are its logits less a constant.
    shifted = teacher_losses(SINGLE_LABEL, tf.constant(TEACHER - 7.0), tf.constant(STUDENT), "mse").numpy()
    np.testing.assert_allclose(shifted, expected, rtol=1e-5)


def test_multi_label_soft_and_mse():
    t = 3.0
    p, z = 1 / (1 + np.exp(-TEACHER / t)), STUDENT / t
    bce = np.maximum(z, 0) - z * p + np.log1p(np.exp(-np.abs(z)))
    got = teacher_losses(MULTI_LABEL, tf.constant(TEACHER), tf.constant(STUDENT), "soft", t).numpy()
    np.testing.assert_allclose(got, t * t * bce.mean(-1), rtol=1e-5)
    mse = teacher_losses(MULTI_LABEL, tf.constant(TEACHER), tf.constant(STUDENT), "mse").numpy()
    np.testing.assert_allclose(mse, ((STUDENT - TEACHER) ** 2).mean(-1), rtol=1e-5)


def test_regression_is_the_squared_error_of_the_scores():
    got = teacher_losses(REGRESSION, tf.constant([[0.5], [-1.0]]), tf.constant([[1.5], [-1.0]]), "soft", 4.0)
    np.testing.assert_allclose(got.numpy(), [1.0, 0.0])


def test_mixed_loss_weighs_teacher_and_gold_and_skips_gold_where_there_is_none():
    options = DistillConfig(teacher="t", loss="soft", temperature=1.0, weight=0.25)
    batch = {"teacher": tf.constant(TEACHER), "label": tf.constant([0, 2]), "gold": tf.constant([1.0, 0.0])}
    got = distillation_losses(SINGLE_LABEL, batch, tf.constant(STUDENT), options).numpy()
    taught = -(softmax(TEACHER) * np.log(softmax(STUDENT))).sum(-1)
    gold = -np.log(softmax(STUDENT))[[0, 1], [0, 2]]
    np.testing.assert_allclose(got, 0.25 * taught + 0.75 * gold * np.array([1.0, 0.0]), rtol=1e-5)
