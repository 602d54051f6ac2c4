"""FlatEinsumDense and FlatDense: EinsumDense's and Dense's numbers and gradients, one 2-D matmul."""

import numpy as np
import pytest
import tensorflow as tf

import keras  # noqa: F401  (layers sets the backend first)
import layers  # noqa: F401
from layers.flat_dense import FlatDense
from layers.flat_einsum_dense import FlatEinsumDense, flat_plan

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
    x = tf.constant(rng.normal(size=shape).astype("float32"))
    flat = FlatEinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)
    flat.build(shape)
    for weight in flat.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    kernel = flat.kernel.numpy().astype(np.float64)
    expected = np.einsum(equation, x.numpy().astype(np.float64), kernel)
    if bias_axes:
        expected = expected + flat.bias.numpy()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = flat(x)
        loss = tf.reduce_sum(y * tf.cos(y))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-5)

    reference = keras.layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)
    reference.build(shape)
    reference.set_weights(flat.get_weights())
    with tf.GradientTape() as reference_tape:
        reference_tape.watch(x)
        z = reference(x)
        reference_loss = tf.reduce_sum(z * tf.cos(z))
    got = tape.gradient(loss, [x, *flat.trainable_weights])
    want = reference_tape.gradient(reference_loss, [x, *reference.trainable_weights])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-4)


def test_other_equations_fall_back_to_einsum_dense():
    x = tf.random.normal((2, 5, 6))
    flat = FlatEinsumDense("abc,dce->abde", output_shape=(None, 3, 4))
    y = flat(x)
    np.testing.assert_allclose(y.numpy(), np.einsum("abc,dce->abde", x.numpy(), flat.kernel.numpy()), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 5, 6), (3, 6), (2, 3, 4, 6)])
def test_flat_dense_gives_dense_and_its_gradients(shape):
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=shape).astype("float32"))
    flat, reference = FlatDense(7, activation="relu"), keras.layers.Dense(7, activation="relu")
    flat.build(shape), reference.build(shape)
    flat.bias.assign(rng.normal(size=7).astype("float32"))
    reference.set_weights(flat.get_weights())
    results = []
    for layer in (flat, reference):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        results.append([y, *tape.gradient(loss, [x, *layer.trainable_weights])])
    for got, want in zip(*results):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_configs_round_trip():
    for layer in (FlatEinsumDense("abc,cde->abde", output_shape=(None, 3, 4), bias_axes="de"), FlatDense(5)):
        restored = layer.__class__.from_config(layer.get_config())
        assert restored.get_config() == layer.get_config()


def test_multi_head_attention_projects_with_flat_einsum_dense():
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    attention(tf.zeros((1, 3, 8)), tf.zeros((1, 3, 8)))
    projections = (attention._query_dense, attention._key_dense, attention._value_dense, attention._output_dense)
    assert all(type(p) is FlatEinsumDense for p in projections)
