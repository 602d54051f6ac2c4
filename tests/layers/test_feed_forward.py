import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _np_ref import ffn_reference, ffn_weights, randomize, to_np  # noqa: E402


@pytest.mark.parametrize("hidden,inter", [(8, 16), (12, 5)])
def test_feed_forward_matches_numpy(hidden, inter):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, hidden)).astype("float32")
    ffn = layers.FeedForward(inter)
    out = ffn(x)
    assert tuple(out.shape) == (2, 5, hidden)
    W1, b1, W2, b2 = ffn_weights(ffn, hidden, inter)
    randomize([b1, b2], rng, 0.5)
    got = to_np(ffn(x))
    expected = ffn_reference(
        x.astype(np.float64), *[to_np(w).astype(np.float64) for w in (W1, b1, W2, b2)]
    )
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)


def test_feed_forward_other_activation():
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    ffn = layers.FeedForward(16, activation="tanh")
    ffn(x)
    W1, b1, W2, b2 = [to_np(w).astype(np.float64) for w in ffn_weights(ffn, 8, 16)]
    expected = np.tanh(x @ W1 + b1) @ W2 + b2
    np.testing.assert_allclose(to_np(ffn(x)), expected, atol=1e-5, rtol=1e-4)


def test_feed_forward_dropout_inactive_at_inference():
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    ffn = layers.FeedForward(16, dropout=0.5)
    ffn(x)
    W1, b1, W2, b2 = [to_np(w).astype(np.float64) for w in ffn_weights(ffn, 8, 16)]
    np.testing.assert_allclose(to_np(ffn(x, training=False)),
                               ffn_reference(x, W1, b1, W2, b2),
                               atol=1e-5, rtol=1e-4)
