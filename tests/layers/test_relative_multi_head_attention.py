import math
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
    masked_softmax,
    sinusoid_loops,
    to_np,
)

B, HID, HEADS, KD = 2, 12, 3, 4


# --------------------------------------------------------------------------
# rel_shift
# --------------------------------------------------------------------------


def test_rel_shift_hand_built_q3_k5():
    # x[i, c] = 10 * i + c; column c holds relative distance 4 - c.
    x = np.array(
        [
            [0, 1, 2, 3, 4],
            [10, 11, 12, 13, 14],
            [20, 21, 22, 23, 24],
        ],
        dtype="float32",
    )[None, None]
    got = to_np(layers.rel_shift(x))
    assert got.shape == (1, 1, 3, 5)
    # out[i, j] = x[i, j + q_len - 1 - i] = x[i, j + 2 - i] for j <= i + 2
    # (query i sits at absolute position 2 + i; key j is at distance 2+i-j,
    #  held in column 4 - (2 + i - j) = j + 2 - i).
    expected = [
        [2, 3, 4],            # i = 0, j = 0..2
        [11, 12, 13, 14],     # i = 1, j = 0..3
        [20, 21, 22, 23, 24],  # i = 2, j = 0..4
    ]
    # (query 1 at absolute position 3, key 0 at distance 3 -> column 1 -> 11)
    for i, row in enumerate(expected):
        np.testing.assert_array_equal(got[0, 0, i, : len(row)], row)


def test_rel_shift_square_random_batched():
    rng = np.random.default_rng(0)
    for q_len, k_len in [(4, 4), (2, 6), (1, 3), (5, 7)]:
        x = rng.normal(size=(2, 3, q_len, k_len)).astype("float32")
        got = to_np(layers.rel_shift(x))
        assert got.shape == x.shape
        for i in range(q_len):
            for j in range(i + (k_len - q_len) + 1):
                np.testing.assert_array_equal(
                    got[:, :, i, j], x[:, :, i, j + q_len - 1 - i]
                )


def test_rel_shift_gradient_moves_each_score_back_to_its_distance():
    # Where the output is defined (j <= i + k_len - q_len), out[i, j] = x[i, j + q_len - 1 - i]:
    # with weights w on those entries only, d sum(w * out) / dx puts w[i, j] at x[i, j + q_len - 1 - i]
    # and nothing anywhere else.
    rng = np.random.default_rng(1)
    for q_len, k_len in [(4, 4), (3, 7), (1, 5)]:
        x = rng.normal(size=(2, 3, q_len, k_len)).astype("float32")
        w = rng.normal(size=(2, 3, q_len, k_len)).astype("float32")
        w *= np.arange(k_len)[None, :] <= np.arange(q_len)[:, None] + k_len - q_len
        (gradient,), _ = gradients(lambda x: keras.ops.sum(layers.rel_shift(x) * w), [x])
        expected = np.zeros_like(w)
        for i in range(q_len):
            for j in range(i + k_len - q_len + 1):
                expected[:, :, i, j + q_len - 1 - i] = w[:, :, i, j]
        np.testing.assert_allclose(gradient, expected, rtol=0, atol=1e-6)


# --------------------------------------------------------------------------
# NumPy reference of Transformer-XL relative attention (Dai et al. 2019, 3.3)
# --------------------------------------------------------------------------


def _w(obj):
    return to_np(obj.kernel if hasattr(obj, "kernel") else obj).astype(np.float64)


def _bias_or_none(obj):
    b = getattr(obj, "bias", None)
    return None if b is None else to_np(b).astype(np.float64)


def rel_attention_reference(layer, x, memory=None, mask=None, clamp_length=None):
    """Returns (output (b, q, hidden), probs (b, heads, q, k))."""
    x = np.asarray(x, np.float64)
    b, q_len, hidden = x.shape
    cat = x if memory is None else np.concatenate(
        [np.asarray(memory, np.float64), x], axis=1)
    m = cat.shape[1] - q_len
    k_len = cat.shape[1]
    heads, kd = HEADS, KD

    Wq = _w(layer.query_dense).reshape(hidden, heads, kd)
    Wk = _w(layer.key_dense).reshape(hidden, heads, kd)
    Wv = _w(layer.value_dense).reshape(hidden, heads, kd)
    Wr_raw = _w(layer.position_dense)
    r_dim = Wr_raw.shape[0]
    Wr = Wr_raw.reshape(r_dim, heads, kd)
    Wo = _w(layer.output_dense).reshape(heads, kd, -1)
    u = to_np(layer.content_bias).astype(np.float64).reshape(heads, kd)
    v = to_np(layer.position_bias).astype(np.float64).reshape(heads, kd)

    Q = np.einsum("bqd,dhk->bqhk", x, Wq)
    K = np.einsum("bsd,dhk->bshk", cat, Wk)
    V = np.einsum("bsd,dhk->bshk", cat, Wv)
    for lay, arr in ((layer.query_dense, "Q"), (layer.key_dense, "K"),
                     (layer.value_dense, "V")):
        assert _bias_or_none(lay) is None, f"{arr} projection must have no bias"

    scores = np.full((b, heads, q_len, k_len), 0.0)
    for i in range(q_len):
        for j in range(k_len):
            dist = m + i - j
            if dist < 0:
                continue  # future key: masked anyway
            d_eff = dist if clamp_length is None else min(dist, clamp_length)
            R = sinusoid_loops([d_eff], r_dim)[0]            # (r_dim,)
            r = np.einsum("d,dhk->hk", R, Wr)                # W_kR R_{i-j}
            ac = np.einsum("bhk,bhk->bh", Q[:, i] + u, K[:, j])   # (a) + (c)
            bd = np.einsum("bhk,hk->bh", Q[:, i] + v, r)          # (b) + (d)
            scores[:, :, i, j] = (ac + bd) / math.sqrt(kd)
    if mask is None:
        mask = np.broadcast_to(causal_np(q_len, memory_length=m), (b, q_len, k_len))
    allowed = np.asarray(mask, bool) & causal_np(q_len, memory_length=m)[None]
    probs = masked_softmax(scores, allowed[:, None])
    ctx = np.einsum("bhqs,bshk->bqhk", probs, V)
    out = np.einsum("bqhk,hke->bqe", ctx, Wo)
    bo = _bias_or_none(layer.output_dense)
    if bo is not None:
        out = out + bo
    return out, probs, allowed


def _setup(seed, q_len, m_len, clamp_length=None):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    layer = layers.RelativeMultiHeadAttention(
        HEADS, KD, clamp_length=clamp_length)
    x = rng.normal(size=(B, q_len, HID)).astype("float32")
    mem = (None if m_len == 0
           else rng.normal(size=(B, m_len, HID)).astype("float32"))
    layer(x, memory=mem)  # build
    # u and v are often zero-initialised: make them non-trivial
    for var in (layer.content_bias, layer.position_bias):
        assert tuple(var.shape) == (HEADS, KD)
        var.assign(rng.normal(size=(HEADS, KD)).astype("float32") * 0.5)
    return layer, x, mem, rng


def _check(layer, x, mem, mask=None, clamp_length=None):
    out, probs = layer(x, memory=mem, attention_mask=mask,
                       return_attention_scores=True)
    exp_out, exp_probs, allowed = rel_attention_reference(
        layer, x, mem, mask=mask, clamp_length=clamp_length)
    out, probs = to_np(out), to_np(probs)
    assert out.shape == exp_out.shape
    assert probs.shape == exp_probs.shape
    full_allowed = np.broadcast_to(allowed[:, None], probs.shape)
    np.testing.assert_allclose(probs[full_allowed], exp_probs[full_allowed],
                               atol=1e-5, rtol=1e-4)
    assert np.all(np.abs(probs[~full_allowed]) <= 1e-6)
    np.testing.assert_allclose(out, exp_out, atol=2e-5, rtol=1e-4)
    # the output without scores is the same
    out2 = to_np(layer(x, memory=mem, attention_mask=mask))
    np.testing.assert_allclose(out2, exp_out, atol=2e-5, rtol=1e-4)


def test_relative_attention_no_memory_matches_numpy():
    layer, x, mem, _ = _setup(0, q_len=5, m_len=0)
    _check(layer, x, None)


def test_relative_attention_with_memory_matches_numpy():
    layer, x, mem, _ = _setup(1, q_len=4, m_len=3)
    _check(layer, x, mem)


def test_precomputed_position_keys_match_the_numpy_reference():
    layer, x, mem, _ = _setup(6, q_len=4, m_len=3, clamp_length=5)
    keys = layer.position_keys(7, x.shape[-1])
    assert tuple(keys.shape) == (layer.num_heads, 7, layer.key_dim)  # head-major
    expected = rel_attention_reference(layer, x, mem, clamp_length=5)[0]
    np.testing.assert_allclose(to_np(layer(x, memory=mem, position_keys=keys)), expected, atol=2e-5, rtol=1e-4)


def test_kernels_keep_their_shapes_and_names():
    """The head-major outputs come from the einsum equations, not from the kernels: checkpoints
    written before the layout changed still load."""
    layer, *_ = _setup(8, q_len=4, m_len=3)
    kernels = {w.path.split("/")[-2]: tuple(w.shape) for w in layer.weights if w.path.endswith("kernel")}
    assert kernels == {
        "query": (HID, HEADS, KD), "key": (HID, HEADS, KD), "value": (HID, HEADS, KD),
        "position": (HID, HEADS, KD), "attention_output": (HEADS, KD, HID),
    }


def test_cached_keys_values_give_the_reference_output_and_the_next_cache():
    """With the memory as its projected keys and values, the layer matches the reference and,
    with return_keys_values, returns W_kE and W_v applied to [memory; inputs]."""
    layer, x, mem, _ = _setup(7, q_len=4, m_len=3)
    out, (keys, values) = layer(x, memory_keys_values=layer.memory_keys_values(mem), return_keys_values=True)
    np.testing.assert_allclose(to_np(out), rel_attention_reference(layer, x, mem)[0], atol=2e-5, rtol=1e-4)
    context = np.concatenate([np.asarray(mem, np.float64), np.asarray(x, np.float64)], axis=1)
    hidden = x.shape[-1]
    for projected, dense in ((keys, layer.key_dense), (values, layer.value_dense)):
        expected = np.einsum("bsd,dhk->bhsk", context, _w(dense).reshape(hidden, HEADS, KD))  # head-major
        np.testing.assert_allclose(to_np(projected), expected, atol=2e-5, rtol=1e-4)

def test_relative_attention_clamp_length_matches_numpy():
    layer, x, mem, _ = _setup(2, q_len=4, m_len=3, clamp_length=2)
    _check(layer, x, mem, clamp_length=2)


def test_clamp_length_changes_result():
    layer, x, mem, _ = _setup(3, q_len=4, m_len=3, clamp_length=2)
    a = rel_attention_reference(layer, x, mem, clamp_length=2)[0]
    b = rel_attention_reference(layer, x, mem, clamp_length=None)[0]
    assert np.max(np.abs(a - b)) > 1e-4  # the clamped test is meaningful


def test_relative_attention_explicit_mask_matches_numpy():
    layer, x, mem, rng = _setup(4, q_len=4, m_len=3)
    mask = np.broadcast_to(causal_np(4, memory_length=3), (B, 4, 7)).copy()
    mask[0, :, 1] = False  # a padded memory slot
    mask[1, :, 0] = False
    mask[1, 2, 3] = False
    _check(layer, x, mem, mask=mask)


def test_relative_attention_none_mask_is_causal():
    layer, x, mem, rng = _setup(5, q_len=5, m_len=2)
    a = to_np(layer(x, memory=mem))
    explicit = np.broadcast_to(causal_np(5, memory_length=2), (B, 5, 7))
    b = to_np(layer(x, memory=mem, attention_mask=explicit))
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)
    x2 = x.copy()
    x2[:, 3:] = rng.normal(size=x2[:, 3:].shape)
    c = to_np(layer(x2, memory=mem))
    np.testing.assert_allclose(a[:, :3], c[:, :3], atol=1e-5, rtol=1e-4)


def test_position_terms_matter():
    # Sanity check of the test itself: the relative terms (b)+(d) change the
    # reference, so a layer dropping them would be caught.
    layer, x, mem, _ = _setup(6, q_len=4, m_len=2)
    ref = rel_attention_reference(layer, x, mem)[0]
    layer.position_bias.assign(np.zeros((HEADS, KD), "float32"))
    Wr = layer.position_dense.kernel if hasattr(layer.position_dense, "kernel") \
        else layer.position_dense
    Wr.assign(np.zeros(tuple(Wr.shape), "float32"))
    ref2 = rel_attention_reference(layer, x, mem)[0]
    assert np.max(np.abs(ref - ref2)) > 1e-3
    np.testing.assert_allclose(to_np(layer(x, memory=mem)), ref2,
                               atol=2e-5, rtol=1e-4)


def test_a_padding_only_mask_is_still_combined_with_the_causal_mask():
    import layers as zoo_layers

    attention = zoo_layers.RelativeMultiHeadAttention(num_heads=2, key_dim=4)
    x = np.random.default_rng(5).normal(size=(2, 4, 8)).astype("float32")
    memory = np.random.default_rng(6).normal(size=(2, 3, 8)).astype("float32")
    padding_only = np.ones((2, 4, 7), bool)
    np.testing.assert_allclose(
        np.asarray(attention(x, memory, attention_mask=padding_only)), np.asarray(attention(x, memory)), atol=1e-6
    )
