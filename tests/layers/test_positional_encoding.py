import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _np_ref import sinusoid_loops, to_np  # noqa: E402


@pytest.mark.parametrize("hidden_dim", [8, 7, 1, 2, 5])
def test_sinusoidal_encoding_matches_formula(hidden_dim):
    length = 16
    got = to_np(layers.sinusoidal_encoding(length, hidden_dim))
    assert got.shape == (length, hidden_dim)
    assert got.dtype == np.float32
    expected = sinusoid_loops(range(length), hidden_dim)
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)


def test_sinusoidal_encoding_handwritten_values():
    # d = 4: columns sin(p), cos(p), sin(p/100), cos(p/100)
    got = to_np(layers.sinusoidal_encoding(3, 4))
    expected = np.array(
        [
            [0.0, 1.0, 0.0, 1.0],
            [np.sin(1.0), np.cos(1.0), np.sin(0.01), np.cos(0.01)],
            [np.sin(2.0), np.cos(2.0), np.sin(0.02), np.cos(0.02)],
        ]
    )
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("hidden_dim", [6, 9])
def test_sinusoid_arbitrary_positions(hidden_dim):
    positions = np.array([0.0, 3.0, 7.0, 2.5, 40.0, 1.0], dtype=np.float32)
    got = to_np(layers.sinusoid(positions, hidden_dim))
    assert got.shape == (len(positions), hidden_dim)
    np.testing.assert_allclose(
        got, sinusoid_loops(positions, hidden_dim), atol=5e-5, rtol=0
    )
    # int positions, in reverse order (as Transformer-XL uses)
    pos_int = np.arange(5, -1, -1, dtype=np.int32)
    got = to_np(layers.sinusoid(pos_int, hidden_dim))
    np.testing.assert_allclose(
        got, sinusoid_loops(pos_int, hidden_dim), atol=2e-5, rtol=0
    )


def test_sinusoidal_encoding_equals_sinusoid_of_range():
    a = to_np(layers.sinusoidal_encoding(10, 12))
    b = to_np(layers.sinusoid(np.arange(10), 12))
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("hidden_dim", [8, 7])
def test_positional_encoding_layer_adds_pe(hidden_dim):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, hidden_dim)).astype("float32")
    layer = layers.PositionalEncoding()
    got = to_np(layer(x))
    assert got.shape == x.shape
    expected = x + sinusoid_loops(range(6), hidden_dim)[None]
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)


def test_positional_encoding_start_index_shift():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 8, 10)).astype("float32")
    layer = layers.PositionalEncoding()
    full = to_np(layer(x))
    for k in [0, 1, 3, 7]:
        part = to_np(layer(x[:, k:], start_index=k))
        np.testing.assert_allclose(part, full[:, k:], atol=1e-5, rtol=0)
        # and against the formula directly
        expected = x[:, k:] + sinusoid_loops(range(k, 8), 10)[None]
        np.testing.assert_allclose(part, expected, atol=2e-5, rtol=0)


def test_positional_encoding_start_index_as_tensor():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 1, 6)).astype("float32")
    layer = layers.PositionalEncoding()
    got = to_np(layer(x, start_index=keras.ops.convert_to_tensor(5)))
    expected = x + sinusoid_loops([5], 6)[None]
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)


def test_positional_encoding_keeps_input_dtype():
    # Under a float16 compute policy the layer sees float16 inputs; the PE
    # must be cast to the inputs' dtype (no dtype-mismatch error).
    x = np.zeros((1, 4, 8), dtype="float16")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        layer = layers.PositionalEncoding()
        out = layer(x)
    finally:
        keras.config.set_dtype_policy(previous)
    assert keras.backend.standardize_dtype(out.dtype) == "float16"
    np.testing.assert_allclose(
        to_np(out).astype(np.float64), sinusoid_loops(range(4), 8)[None],
        atol=2e-3,
    )
