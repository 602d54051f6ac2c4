import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _backend import gradients  # noqa: E402
from _np_ref import (  # noqa: E402
    causal_np,
    ffn_reference,
    ffn_weights,
    layer_norm,
    mha_reference,
    randomize,
    to_np,
)

B, S, HID, HEADS, INTER = 2, 6, 16, 4, 32


def _setup(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    kwargs.setdefault("dropout", 0.0)
    block = layers.EncoderBlock(HEADS, INTER, **kwargs)
    x = rng.normal(size=(B, S, HID)).astype("float32")
    pm = np.ones((B, S), bool)
    pm[0, 4:] = False
    pm[1, 5:] = False
    block(x, padding_mask=pm)
    return block, x, pm, rng


def _split(result):
    assert isinstance(result, (tuple, list)) and len(result) == 2
    return result


@pytest.mark.parametrize("norm_first", [False, True])
def test_padding_positions_do_not_affect_real_positions(norm_first):
    block, x, pm, rng = _setup(seed=1, norm_first=norm_first)
    a = to_np(block(x, padding_mask=pm, training=False))
    x2 = x.copy()
    x2[~pm] = rng.normal(size=x2[~pm].shape) * 5.0
    b = to_np(block(x2, padding_mask=pm, training=False))
    np.testing.assert_allclose(a[pm], b[pm], atol=1e-5, rtol=1e-4)
    # sanity: without a mask the real positions would change
    c = to_np(block(x2, training=False))
    assert np.max(np.abs(c[pm] - a[pm])) > 1e-3
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(b))


def test_hidden_not_divisible_by_heads_raises():
    x = np.zeros((2, 3, 10), "float32")
    with pytest.raises(ValueError):
        block = layers.EncoderBlock(4, 16, dropout=0.0)
        block(x)


@pytest.mark.parametrize("norm_first", [False, True])
def test_both_norm_orders_run(norm_first):
    block, x, pm, _ = _setup(seed=2, norm_first=norm_first)
    out, scores = _split(block(x, padding_mask=pm, return_attention_scores=True))
    assert tuple(out.shape) == (B, S, HID)
    s = to_np(scores)
    assert s.shape == (B, HEADS, S, S)
    assert np.all(np.isfinite(to_np(out)))
    # keys at padded positions get no weight from real queries
    for b in range(B):
        for i in np.where(pm[b])[0]:
            assert np.all(s[b, :, i, ~pm[b]] <= 1e-7)
            np.testing.assert_allclose(s[b, :, i].sum(-1), 1.0, atol=1e-5)


def test_post_norm_block_matches_numpy():
    block, x, pm, rng = _setup(seed=3, norm_first=False)
    mha = block.self_attention
    # non-zero biases everywhere so they are checked
    randomize([w for w in mha.weights if len(w.shape) <= 2], rng, 0.3)
    W1, b1, W2, b2 = ffn_weights(block.feed_forward, HID, INTER)
    randomize([b1, b2], rng, 0.3)
    # LayerNorms: set gamma=1, beta=0 (their defaults), so we need not know
    # which one is which.
    n_norm = 0
    for w in block.weights:
        if w.name == "gamma":
            w.assign(np.ones(tuple(w.shape), "float32"))
            n_norm += 1
        elif w.name == "beta":
            w.assign(np.zeros(tuple(w.shape), "float32"))
    assert n_norm == 2, [w.path for w in block.weights]

    got = to_np(block(x, padding_mask=pm, training=False))
    x64 = x.astype(np.float64)
    mask = np.broadcast_to(pm[:, None, :], (B, S, S))
    attn, _ = mha_reference(mha, x64, x64, mask=mask)
    h = layer_norm(x64 + attn, epsilon=1e-5)
    W = [to_np(w).astype(np.float64) for w in (W1, b1, W2, b2)]
    expected = layer_norm(h + ffn_reference(h, *W), epsilon=1e-5)
    np.testing.assert_allclose(got[pm], expected[pm], atol=5e-5, rtol=1e-4)

    # without any mask all positions are comparable
    got = to_np(block(x, training=False))
    attn, _ = mha_reference(mha, x64, x64)
    h = layer_norm(x64 + attn, epsilon=1e-5)
    expected = layer_norm(h + ffn_reference(h, *W), epsilon=1e-5)
    np.testing.assert_allclose(got, expected, atol=5e-5, rtol=1e-4)


def test_attention_mask_argument():
    block, x, pm, rng = _setup(seed=4)
    # an explicit key-padding attention mask behaves like padding_mask
    am = np.broadcast_to(pm[:, None, :], (B, S, S)).copy()
    a = to_np(block(x, padding_mask=pm))
    b = to_np(block(x, attention_mask=am))
    np.testing.assert_allclose(a[pm], b[pm], atol=1e-5, rtol=1e-4)
    # a causal attention mask makes the block causal
    causal = np.broadcast_to(causal_np(S), (B, S, S)).copy()
    c = to_np(block(x, attention_mask=causal))
    x2 = x.copy()
    x2[:, 3:] = rng.normal(size=x2[:, 3:].shape)
    d = to_np(block(x2, attention_mask=causal))
    np.testing.assert_allclose(c[:, :3], d[:, :3], atol=1e-5, rtol=1e-4)
    assert np.max(np.abs(c[:, 3:] - d[:, 3:])) > 1e-3


def test_dropout_inactive_at_inference():
    block, x, pm, _ = _setup(seed=5, dropout=0.5)
    a = to_np(block(x, padding_mask=pm, training=False))
    b = to_np(block(x, padding_mask=pm, training=False))
    np.testing.assert_allclose(a, b, atol=0)
    c = to_np(block(x, padding_mask=pm, training=True))
    assert np.max(np.abs(a - c)) > 1e-3


@pytest.mark.parametrize("norm_first", [False, True])
def test_skip_padding_gives_the_same_real_tokens_and_gradients(norm_first):
    block, x, pm, _ = _setup(seed=3, norm_first=norm_first)
    results = []
    for skip in (False, True):

        def loss(x):
            y = block(x, padding_mask=pm, training=False, skip_padding=skip)
            return keras.ops.sum(keras.ops.where(pm[:, :, None], y, 0.0) ** 2), y

        input_gradients, weight_gradients, y = gradients(loss, [x], block.trainable_weights, has_aux=True)
        results.append((y, input_gradients + weight_gradients))
    (full, full_grads), (skipped, skipped_grads) = results
    np.testing.assert_allclose(skipped[pm], full[pm], atol=1e-5)
    np.testing.assert_array_equal(skipped[~pm], 0.0)
    for a, b in zip(full_grads, skipped_grads):
        np.testing.assert_allclose(b, a, atol=1e-5)


def test_skip_padding_needs_the_padding_mask():
    block, x, _, _ = _setup()
    with pytest.raises(ValueError, match="skip_padding=True needs `padding_mask`"):
        block(x, skip_padding=True)


def test_skip_padding_in_mixed_bfloat16_and_training():
    as_float32 = lambda t: to_np(keras.ops.cast(t, "float32"))  # noqa: E731
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        block, x, pm, _ = _setup(seed=5, dropout=0.1)
        full = block(x, padding_mask=pm)
        skipped = block(x, padding_mask=pm, skip_padding=True)
        assert keras.backend.standardize_dtype(skipped.dtype) == "bfloat16"
        np.testing.assert_allclose(as_float32(skipped)[pm], as_float32(full)[pm], atol=0.05)

        def loss():
            trained = keras.ops.cast(block(x, padding_mask=pm, skip_padding=True, training=True), "float32")
            return keras.ops.sum(trained**2), trained

        _, weight_gradients, trained = gradients(loss, variables=block.trainable_weights, has_aux=True)
        assert np.all(trained[~pm] == 0.0)
        assert all(np.all(np.isfinite(g.astype("float32"))) for g in weight_gradients)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
