"""FlatEinsumDense and FlatDense: EinsumDense's and Dense's numbers and gradients, one 2-D matmul."""

import os
import sys

import keras
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layers  # noqa: E402
from _backend import gradients  # noqa: E402
from _np_ref import to_np  # noqa: E402
from layers.flat_dense import FlatDense  # noqa: E402
from layers.flat_einsum_dense import FlatEinsumDense, flat_plan  # noqa: E402

CASES = [  # equation, output_shape, bias_axes, input shape
    ("abc,cde->abde", (None, 3, 4), "de", (2, 5, 6)),  # Keras MultiHeadAttention's Q, K, V
    ("abcd,cde->abe", (None, 7), "e", (2, 5, 3, 4)),  # its output projection
    ("bkd,dnh->bnkh", (3, None, 4), None, (2, 5, 6)),  # head-major keys (Transformer-XL)
    ("kd,dnh->knh", (3, 4), None, (5, 6)),  # position keys
]


def test_flat_plan_reads_the_contracted_axes_and_the_output_order():
    assert flat_plan("abc,cde->abde") == (1, None)
    assert flat_plan("abcd,cde->abe") == (2, None)
    assert flat_plan("bkd,dnh->bnkh") == (1, [0, 2, 1, 3])
    assert flat_plan("abc,dce->abde") is None  # the kernel's contracted axis is not its first
    assert flat_plan("ab,bc->ac") == (1, None)


@pytest.mark.parametrize("equation,output_shape,bias_axes,shape", CASES)
def test_flat_einsum_dense_gives_the_einsum_and_its_gradients(equation, output_shape, bias_axes, shape):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype("float32")
    flat = FlatEinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)
    flat.build(shape)
    for weight in flat.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    kernel = to_np(flat.kernel).astype(np.float64)
    expected = np.einsum(equation, x.astype(np.float64), kernel)
    if bias_axes:
        expected = expected + to_np(flat.bias)
    np.testing.assert_allclose(to_np(flat(x)), expected, rtol=1e-5, atol=1e-5)

    reference = keras.layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)
    reference.build(shape)
    reference.set_weights(flat.get_weights())
    results = []
    for layer in (flat, reference):

        def loss(x):
            y = layer(x)
            return keras.ops.sum(y * keras.ops.cos(y))

        input_gradients, weight_gradients = gradients(loss, [x], layer.trainable_weights)
        results.append(input_gradients + weight_gradients)
    for g, w in zip(*results):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_other_equations_fall_back_to_einsum_dense():
    x = np.random.default_rng(2).normal(size=(2, 5, 6)).astype("float32")
    flat = FlatEinsumDense("abc,dce->abde", output_shape=(None, 3, 4))
    y = flat(x)
    np.testing.assert_allclose(to_np(y), np.einsum("abc,dce->abde", x, to_np(flat.kernel)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 5, 6), (3, 6), (2, 3, 4, 6)])
def test_flat_dense_gives_dense_and_its_gradients(shape):
    rng = np.random.default_rng(1)
    x = rng.normal(size=shape).astype("float32")
    flat, reference = FlatDense(7, activation="relu"), keras.layers.Dense(7, activation="relu")
    flat.build(shape), reference.build(shape)
    flat.bias.assign(rng.normal(size=7).astype("float32"))
    reference.set_weights(flat.get_weights())
    results = []
    for layer in (flat, reference):
        square = lambda x: keras.ops.sum(layer(x) ** 2)  # noqa: E731
        input_gradients, weight_gradients = gradients(square, [x], layer.trainable_weights)
        results.append([to_np(layer(x)), *input_gradients, *weight_gradients])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_configs_round_trip():
    for layer in (FlatEinsumDense("abc,cde->abde", output_shape=(None, 3, 4), bias_axes="de"), FlatDense(5)):
        restored = layer.__class__.from_config(layer.get_config())
        assert restored.get_config() == layer.get_config()


def test_multi_head_attention_projects_with_flat_einsum_dense():
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    attention(np.zeros((1, 3, 8), "float32"), np.zeros((1, 3, 8), "float32"))
    projections = (attention._query_dense, attention._key_dense, attention._value_dense, attention._output_dense)
    assert all(type(p) is FlatEinsumDense for p in projections)
