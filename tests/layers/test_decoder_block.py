import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _backend import compiled, gradients  # noqa: E402
from _np_ref import randomize, to_np  # noqa: E402

B, T, S, HID, HEADS, INTER = 2, 6, 5, 16, 4, 32


def _setup(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    kwargs.setdefault("dropout", 0.0)
    block = layers.DecoderBlock(HEADS, INTER, **kwargs)
    x = rng.normal(size=(B, T, HID)).astype("float32")
    enc = rng.normal(size=(B, S, HID)).astype("float32")
    block(x, enc)
    # non-zero attention / ffn biases (keras initialises them to zero)
    randomize([w for w in block.weights
               if len(w.shape) in (1, 2) and "bias" in w.name], rng, 0.2)
    return block, x, enc, rng


def _enc_mask():
    m = np.ones((B, S), bool)
    m[0, 3:] = False
    m[1, 4:] = False
    return m


@pytest.mark.parametrize("norm_first", [False, True])
def test_causality(norm_first):
    block, x, enc, rng = _setup(seed=1, norm_first=norm_first)
    a = to_np(block(x, enc))
    assert a.shape == (B, T, HID)
    for t in [1, 3, T - 1]:
        x2 = x.copy()
        x2[:, t:] = rng.normal(size=x2[:, t:].shape)
        b = to_np(block(x2, enc))
        np.testing.assert_allclose(a[:, :t], b[:, :t], atol=1e-5, rtol=1e-4)
        assert np.max(np.abs(a[:, t] - b[:, t])) > 1e-3


def test_prefix_call_equals_full_call():
    block, x, enc, _ = _setup(seed=2)
    full = to_np(block(x, enc))
    for t in range(1, T + 1):
        part = to_np(block(x[:, :t], enc))
        np.testing.assert_allclose(part, full[:, :t], atol=1e-5, rtol=1e-4)


def test_encoder_padding_respected():
    block, x, enc, rng = _setup(seed=3)
    em = _enc_mask()
    a = to_np(block(x, enc, encoder_padding_mask=em))
    enc2 = enc.copy()
    enc2[~em] = rng.normal(size=enc2[~em].shape) * 5
    b = to_np(block(x, enc2, encoder_padding_mask=em))
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)
    # the encoder is actually used
    enc3 = enc.copy()
    enc3[em] += 1.0
    c = to_np(block(x, enc3, encoder_padding_mask=em))
    assert np.max(np.abs(a - c)) > 1e-3
    # cross scores: no weight on padded encoder positions
    res = block(x, enc, encoder_padding_mask=em, return_attention_scores=True)
    flat = keras.tree.flatten(res)
    assert len(flat) == 3
    self_s, cross_s = to_np(flat[1]), to_np(flat[2])
    assert self_s.shape == (B, HEADS, T, T)
    assert cross_s.shape == (B, HEADS, T, S)
    for bi in range(B):
        assert np.all(cross_s[bi][:, :, ~em[bi]] <= 1e-7)
    np.testing.assert_allclose(cross_s.sum(-1), 1.0, atol=1e-5)
    # self scores are causal
    assert np.all(self_s[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]]
                  <= 1e-7)


def test_decoder_padding_mask():
    block, x, enc, rng = _setup(seed=4)
    pm = np.ones((B, T), bool)
    pm[0, 4:] = False
    a = to_np(block(x, enc, padding_mask=pm))
    x2 = x.copy()
    x2[~pm] = rng.normal(size=x2[~pm].shape) * 5
    b = to_np(block(x2, enc, padding_mask=pm))
    np.testing.assert_allclose(a[pm], b[pm], atol=1e-5, rtol=1e-4)


def _incremental(block, x, enc, em=None, use_cross_cache=False):
    head_dim = HID // HEADS
    cache = np.zeros((B, 2, T, HEADS, head_dim), "float32")
    xcache = block.compute_cross_attention_cache(enc) if use_cross_cache else None
    outs = []
    for i in range(T):
        if use_cross_cache:
            out, cache = block(x[:, i:i + 1], None, encoder_padding_mask=em,
                               cache=cache, cache_update_index=i,
                               cross_attention_cache=xcache)
        else:
            out, cache = block(x[:, i:i + 1], enc, encoder_padding_mask=em,
                               cache=cache, cache_update_index=i)
        assert tuple(out.shape) == (B, 1, HID)
        outs.append(to_np(out)[:, 0])
    return np.stack(outs, axis=1), cache


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_cross_cache", [False, True])
def test_cached_decoding_equals_full(norm_first, use_cross_cache):
    block, x, enc, _ = _setup(seed=5, norm_first=norm_first)
    full = to_np(block(x, enc))
    inc, cache = _incremental(block, x, enc, use_cross_cache=use_cross_cache)
    np.testing.assert_allclose(inc, full, atol=1e-5, rtol=1e-4)
    assert tuple(cache.shape) == (B, 2, T, HEADS, HID // HEADS)


@pytest.mark.parametrize("use_cross_cache", [False, True])
def test_cached_decoding_with_encoder_padding(use_cross_cache):
    block, x, enc, _ = _setup(seed=6)
    em = _enc_mask()
    full = to_np(block(x, enc, encoder_padding_mask=em))
    inc, _ = _incremental(block, x, enc, em=em, use_cross_cache=use_cross_cache)
    np.testing.assert_allclose(inc, full, atol=1e-5, rtol=1e-4)


def test_cross_attention_cache_without_self_cache():
    block, x, enc, _ = _setup(seed=7)
    em = _enc_mask()
    full = to_np(block(x, enc, encoder_padding_mask=em))
    xcache = block.compute_cross_attention_cache(enc)
    got = block(x, None, encoder_padding_mask=em, cross_attention_cache=xcache)
    got = keras.tree.flatten(got)[0]
    np.testing.assert_allclose(to_np(got), full, atol=1e-5, rtol=1e-4)


def test_compiled_cached_decoding_with_tensor_index():
    block, x, enc, _ = _setup(seed=8)
    full = to_np(block(x, enc))
    xcache = block.compute_cross_attention_cache(enc)

    @compiled
    def step(xi, cache, i):
        return block(xi, None, cache=cache, cache_update_index=i,
                     cross_attention_cache=xcache)

    cache = np.zeros((B, 2, T, HEADS, HID // HEADS), "float32")
    for i in range(T):
        out, cache = step(x[:, i:i + 1], cache, keras.ops.convert_to_tensor(i))
        np.testing.assert_allclose(to_np(out)[:, 0], full[:, i],
                                   atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_skip_padding_gives_the_same_real_tokens_and_gradients(norm_first):
    block, x, enc, _ = _setup(seed=4, norm_first=norm_first)
    pm = np.ones((B, T), bool)
    pm[0, 4:] = False
    results = []
    for skip in (False, True):

        def loss(x):
            y = block(x, enc, padding_mask=pm, encoder_padding_mask=_enc_mask(), skip_padding=skip)
            return keras.ops.sum(keras.ops.where(pm[:, :, None], y, 0.0) ** 2), y

        input_gradients, weight_gradients, y = gradients(loss, [x], block.trainable_weights, has_aux=True)
        results.append((y, input_gradients + weight_gradients))
    (full, full_grads), (skipped, skipped_grads) = results
    np.testing.assert_allclose(skipped[pm], full[pm], atol=1e-5)
    np.testing.assert_array_equal(skipped[~pm], 0.0)
    for a, b in zip(full_grads, skipped_grads):
        np.testing.assert_allclose(b, a, atol=1e-5)


def test_skip_padding_is_refused_with_a_cache_or_without_a_mask():
    block, x, enc, _ = _setup()
    with pytest.raises(ValueError, match="skip_padding=True needs `padding_mask`"):
        block(x, enc, skip_padding=True)
    cache = np.zeros((B, 2, T, HEADS, HID // HEADS), "float32")
    with pytest.raises(ValueError, match="not with a `cache`"):
        block(x[:, :1], enc, padding_mask=np.ones((B, T), bool), cache=cache, cache_update_index=0, skip_padding=True)


def test_skip_padding_without_an_encoder_mask_reads_every_encoder_position():
    block, x, enc, _ = _setup(seed=6)
    pm = np.ones((B, T), bool)
    pm[1, 3:] = False
    full = to_np(block(x, enc, padding_mask=pm))
    skipped = to_np(block(x, enc, padding_mask=pm, skip_padding=True))
    np.testing.assert_allclose(skipped[pm], full[pm], atol=1e-5)
