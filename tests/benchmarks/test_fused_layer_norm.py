"""benchmarks/common/fused_layer_norm.py: its layer norm and gradients against the textbook formula, and the layer
against Keras's LayerNormalization with the same weights (on JAX its own computation, elsewhere Keras's)."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
keras = pytest.importorskip("keras")

from benchmarks.common.fused_layer_norm import FusedLayerNormalization, layer_norm  # noqa: E402


def textbook(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / jax.numpy.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + epsilon) * gamma + beta


def test_the_layer_norm_and_its_gradients_are_the_textbook_formulas():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(3, 5, 32)) * 2 + 1.5).astype("float32")
    gamma, beta, weights = (rng.normal(size=s).astype("float32") for s in (32, 32, x.shape))
    np.testing.assert_allclose(layer_norm(x, gamma, beta, 1e-5), textbook(x, gamma, beta, 1e-5), atol=1e-5)
    ours = jax.grad(lambda *a: (layer_norm(*a, 1e-5) * weights).sum(), (0, 1, 2))(x, gamma, beta)
    theirs = jax.grad(lambda *a: (textbook(*a, 1e-5) * weights).sum(), (0, 1, 2))(x, gamma, beta)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine, reference, atol=1e-4, rtol=1e-5)


def test_bfloat16_inputs_keep_their_dtype_with_float32_statistics():
    rng = np.random.default_rng(1)
    x = jax.numpy.asarray(rng.normal(size=(4, 64)) * 3 + 2, "bfloat16")
    ones, zeros = np.ones(64, "float32"), np.zeros(64, "float32")
    y = layer_norm(x, ones, zeros, 1e-5)
    assert y.dtype == x.dtype
    reference = textbook(np.asarray(x, "float32"), ones, zeros, 1e-5)
    np.testing.assert_allclose(np.asarray(y, "float32"), reference, atol=2e-2)  # bfloat16's rounding of the output


def test_the_layer_is_keras_layer_normalization_with_the_same_weights():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 7, 16)).astype("float32")
    keras_norm = keras.layers.LayerNormalization(epsilon=1e-5)
    keras_norm.build(x.shape)
    keras_norm.gamma.assign(rng.normal(size=16).astype("float32"))
    keras_norm.beta.assign(rng.normal(size=16).astype("float32"))
    expected = keras.ops.convert_to_numpy(keras_norm(x))
    keras_norm.__class__ = FusedLayerNormalization  # as benchmarks.gpu --layer_norm=fused makes it
    np.testing.assert_allclose(keras.ops.convert_to_numpy(keras_norm(x)), expected, atol=1e-5)
