"""Dropout: Keras's semantics (keep probability, scale, gradient, inference) from a cheaper mask."""

import os
import sys

import keras
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layers  # noqa: E402
from _backend import BACKEND, compiled, gradients, tensorflow_only  # noqa: E402
from _np_ref import to_np  # noqa: E402
from layers.dropout import Dropout, keep_mask, uniform_keep_mask  # noqa: E402


@tensorflow_only
@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_the_mask_keeps_one_minus_rate_with_independent_halves_of_each_random_word(rate):
    import tensorflow as tf

    mask = keep_mask(tf.constant([1000, 1001]), rate, tf.constant([3, 4]), tf.float32).numpy()
    assert mask.shape == (1000, 1001)  # an odd size: the last word's second half is unused
    np.testing.assert_allclose(np.unique(mask), [0.0, 1 / (1 - rate)], rtol=2e-5)  # rate to a multiple of 2**-16
    kept = (mask > 0).ravel()
    # Each uint32 gives two neighbouring elements: both halves keep 1 - rate, independently.
    n = kept.size // 2 * 2
    first, second = kept[:n:2], kept[1:n:2]
    tolerance = 5 * np.sqrt(rate * (1 - rate) / first.size)
    assert abs(first.mean() - (1 - rate)) < tolerance
    assert abs(second.mean() - (1 - rate)) < tolerance
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.01
    assert abs(mask.mean() - 1.0) < 5 * np.sqrt(rate / (1 - rate) / mask.size)  # the expected value is kept


@pytest.mark.skipif(BACKEND != "jax", reason="JAX's own mask")
@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_the_jax_mask_keeps_one_minus_rate_with_independent_quarters_of_each_hash(rate):
    from layers.dropout import jax_keep_mask

    mask = np.asarray(jax_keep_mask((1000, 1003), rate, np.array([3, 4], np.uint32), "float32"))
    assert mask.shape == (1000, 1003)  # not a multiple of 4: the last hash is partly unused
    np.testing.assert_allclose(np.unique(mask), [0.0, 1 / (1 - rate)], rtol=2e-5)
    kept = (mask > 0).ravel()
    # A hash of count i gives word i (elements 2i, 2i + 1) and word i + words/2: every element of the four
    # keeps 1 - rate, independently of the others.
    words = (kept.size + 1) // 2
    half = (words + words % 2) // 2
    pairs = kept[: 2 * half].reshape(-1, 2), kept[2 * half : 4 * half].reshape(-1, 2)
    n = min(len(pairs[0]), len(pairs[1]))
    columns = [pairs[0][:n, 0], pairs[0][:n, 1], pairs[1][:n, 0], pairs[1][:n, 1]]
    tolerance = 5 * np.sqrt(rate * (1 - rate) / n)
    for column in columns:
        assert abs(column.mean() - (1 - rate)) < tolerance
    correlations = np.corrcoef(np.stack(columns))
    assert np.abs(correlations[np.triu_indices(4, 1)]).max() < 0.02
    assert abs(mask.mean() - 1.0) < 5 * np.sqrt(rate / (1 - rate) / mask.size)  # the expected value is kept
    other = np.asarray(jax_keep_mask((1000, 1003), rate, np.array([3, 5], np.uint32), "float32"))
    assert abs(np.corrcoef(kept, (other > 0).ravel())[0, 1]) < 0.01  # another key, another mask


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_the_portable_mask_keeps_one_minus_the_rounded_rate(rate):
    rate += 1e-6  # used rounded to a multiple of 2**-16: the test must not see the difference
    mask = to_np(uniform_keep_mask((1000, 1001), rate, 3, "float32"))
    np.testing.assert_allclose(np.unique(mask), [0.0, 1 / (1 - rate)], rtol=2e-5)
    kept = (mask > 0).ravel()
    assert abs(kept.mean() - (1 - rate)) < 5 * np.sqrt(rate * (1 - rate) / kept.size)
    assert abs(np.corrcoef(kept[:-1], kept[1:])[0, 1]) < 0.01  # neighbours are independent
    assert abs(mask.mean() - 1.0) < 5 * np.sqrt(rate / (1 - rate) / mask.size)  # the expected value is kept


def test_the_layer_keeps_one_minus_rate_on_every_backend():
    y = to_np(Dropout(0.25, seed=4)(np.ones((500, 400), "float32"), training=True))
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((y > 0).mean() - 0.75) < 5 * np.sqrt(0.25 * 0.75 / y.size)


def test_training_multiplies_by_the_mask_and_so_does_the_gradient():
    layer = Dropout(0.3, seed=1)
    x = np.random.default_rng(0).normal(size=(4, 7, 9)).astype("float32")
    weights = np.random.default_rng(1).normal(size=(4, 7, 9)).astype("float32")

    def loss(x):
        y = layer(x, training=True)
        return keras.ops.sum(y * weights), y

    (gradient,), _, y = gradients(loss, [x], has_aux=True)
    scaled = y / x
    np.testing.assert_allclose(np.unique(np.round(scaled, 5)), [0.0, round(1 / 0.7, 5)], rtol=1e-5)
    np.testing.assert_allclose(gradient, scaled * weights, rtol=1e-5, atol=1e-6)


def test_inference_and_rate_zero_are_the_identity_and_masks_differ_between_calls():
    x = np.ones((3, 5, 8), "float32")
    layer = Dropout(0.5, seed=2)
    np.testing.assert_array_equal(to_np(layer(x)), x)
    np.testing.assert_array_equal(to_np(Dropout(0.0)(x, training=True)), x)
    first, second = to_np(layer(x, training=True)), to_np(layer(x, training=True))
    assert not np.array_equal(first, second)
    again = Dropout(0.5, seed=2)
    np.testing.assert_array_equal(to_np(again(x, training=True)), first)  # a seed reproduces the masks


@tensorflow_only
def test_unknown_shapes():
    import tensorflow as tf

    layer = Dropout(0.2, seed=5)
    step = tf.function(lambda x: layer(x, training=True), input_signature=[tf.TensorSpec([None, None, 6])])
    y = step(tf.ones((2, 3, 6)))
    assert y.shape == (2, 3, 6)
    np.testing.assert_allclose(np.unique(y.numpy()), [0.0, 1.25], rtol=2e-5)  # the rate to a multiple of 2**-16


def test_compiled_bfloat16_and_the_config_round_trip():
    layer = Dropout(0.2, seed=5, dtype="mixed_bfloat16")
    y = compiled(lambda x: layer(x, training=True))(keras.ops.ones((2, 3, 6)))
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16" and tuple(y.shape) == (2, 3, 6)
    np.testing.assert_allclose(np.unique(to_np(keras.ops.cast(y, "float32"))), [0.0, 1.25], rtol=1e-2)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is Dropout and restored.get_config() == layer.get_config()
    assert keras.saving.get_registered_name(Dropout) == "zoo>Dropout"


def test_a_functional_model_saves_and_loads_with_it(tmp_path):
    inputs = keras.Input((4,))
    model = keras.Model(inputs, Dropout(0.5, seed=3)(keras.layers.Dense(4)(inputs)))
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded.layers[-1]) is Dropout
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(to_np(loaded(x)), to_np(model(x)), rtol=1e-6)


def test_a_rate_that_rounds_to_one_drops_everything_through_keras():
    ones = np.ones((3, 4), "float32")
    np.testing.assert_array_equal(to_np(Dropout(1 - 1e-6, seed=0)(ones, training=True)), np.zeros((3, 4)))


def test_noise_shape_goes_to_keras():
    y = to_np(Dropout(0.5, noise_shape=(2, 1, 4), seed=0)(np.ones((2, 3, 4), "float32"), training=True))
    np.testing.assert_array_equal(y, np.repeat(y[:, :1], 3, axis=1))  # one mask shared along axis 1


def test_the_zoo_layers_drop_with_it():
    zeros = np.zeros((1, 3, 8), "float32")
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.1)
    attention(zeros, zeros)
    block = layers.TransformerXLBlock(num_heads=2, intermediate_dim=16, memory_length=2, dropout=0.1)
    block(zeros)
    embedding = layers.TokenAndPositionEmbedding(vocab_size=10, hidden_dim=8, max_length=5, dropout=0.1)
    embedding(np.zeros((1, 3), "int32"))
    encoder = layers.EncoderBlock(num_heads=2, intermediate_dim=16, dropout=0.1)
    encoder(zeros)
    found = [
        layer for owner in (attention, block, embedding, encoder) for layer in owner._flatten_layers()
        if isinstance(layer, keras.layers.Dropout)
    ]
    assert len(found) >= 8 and all(type(layer) is Dropout for layer in found)
