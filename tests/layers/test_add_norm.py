import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _np_ref import layer_norm, to_np  # noqa: E402


def _gamma_beta(layer):
    def find(name):
        c = [w for w in layer.weights
             if w.name == name or w.path.split("/")[-1] == name]
        assert len(c) == 1, [w.path for w in layer.weights]
        return c[0]

    return find("gamma"), find("beta")


@pytest.mark.parametrize("epsilon", [1e-5, 1e-1])
def test_add_norm_matches_numpy(epsilon):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    # small-variance residual so that epsilon matters measurably
    s = (rng.normal(size=(2, 5, 8)) * 0.2).astype("float32")
    layer = layers.AddNorm(epsilon=epsilon)
    layer(x, s)
    g, b = _gamma_beta(layer)
    gv = rng.normal(size=(8,)).astype("float32")
    bv = rng.normal(size=(8,)).astype("float32")
    g.assign(gv)
    b.assign(bv)
    got = to_np(layer(x * 0.1, s))
    expected = layer_norm((x * 0.1 + s).astype(np.float64), gv, bv, epsilon)
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=1e-4)


def test_add_norm_default_epsilon_is_1e_5():
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(2, 3, 8)) * 0.01).astype("float32")
    s = (rng.normal(size=(2, 3, 8)) * 0.01).astype("float32")
    got = to_np(layers.AddNorm()(x, s))
    expected = layer_norm((x + s).astype(np.float64), epsilon=1e-5)
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=1e-4)
    # a 1e-3 epsilon would be visibly different at this scale
    wrong = layer_norm((x + s).astype(np.float64), epsilon=1e-3)
    assert np.max(np.abs(expected - wrong)) > 1e-2


def test_add_norm_dropout_inactive_at_inference():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    s = rng.normal(size=(2, 4, 8)).astype("float32")
    layer = layers.AddNorm(dropout=0.5)
    got = to_np(layer(x, s, training=False))
    np.testing.assert_allclose(got, layer_norm((x + s).astype(np.float64)),
                               atol=2e-5, rtol=1e-4)


def test_add_norm_dropout_only_on_sublayer_output():
    # With the sublayer output zero, dropout cannot change anything, even in
    # training: LayerNorm(inputs + Dropout(0)) = LayerNorm(inputs).
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    layer = layers.AddNorm(dropout=0.5)
    got = to_np(layer(x, np.zeros_like(x), training=True))
    np.testing.assert_allclose(got, layer_norm(x.astype(np.float64)),
                               atol=2e-5, rtol=1e-4)
