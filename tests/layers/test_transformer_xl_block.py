import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _backend import compiled, gradients  # noqa: E402
from _np_ref import randomize, to_np  # noqa: E402

B, HID, HEADS, INTER = 2, 12, 3, 24
L1, L2 = 4, 3  # segment lengths


def _block(seed, memory_length, **kwargs):
    keras.utils.set_random_seed(seed)
    kwargs.setdefault("dropout", 0.0)
    return layers.TransformerXLBlock(HEADS, INTER, memory_length, **kwargs)


def _nontrivial(block, rng):
    """Give u, v and the biases non-zero values (often zero-initialised)."""
    randomize([w for w in block.weights
               if "bias" in w.name and len(w.shape) in (1, 2)], rng, 0.3)


def _segments(rng):
    seg1 = rng.normal(size=(B, L1, HID)).astype("float32")
    seg2 = rng.normal(size=(B, L2, HID)).astype("float32")
    return seg1, seg2


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("clamp_length", [None, 2])
def test_memory_equals_concatenated_run(norm_first, clamp_length):
    rng = np.random.default_rng(0)
    seg1, seg2 = _segments(rng)
    block = _block(0, memory_length=L1, norm_first=norm_first,
                   clamp_length=clamp_length)
    full, _ = block(np.concatenate([seg1, seg2], axis=1))
    _nontrivial(block, rng)
    full, _ = block(np.concatenate([seg1, seg2], axis=1), training=False)
    out, new_mem = block(seg2, memory=seg1, training=False)
    assert tuple(out.shape) == (B, L2, HID)
    np.testing.assert_allclose(to_np(out), to_np(full)[:, L1:],
                               atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_step_over_cached_keys_values_equals_call_over_memory(norm_first):
    """Generation keeps each layer's memory as its projected keys and values: the same outputs as
    attending over the memory states, and the next cache is the projection of the next memory."""
    rng = np.random.default_rng(7)
    seg1, seg2 = _segments(rng)
    block = _block(7, memory_length=L1, norm_first=norm_first)
    block(seg1)
    _nontrivial(block, rng)
    expected, new_memory = block(seg2, memory=seg1)
    out, cache = block.step(seg2, block.memory_keys_values(seg1))
    np.testing.assert_allclose(to_np(out), to_np(expected), atol=2e-5, rtol=1e-4)
    for got, want in zip(cache, block.memory_keys_values(new_memory)):
        assert tuple(got.shape) == (B, HEADS, L1, HID // HEADS)  # head-major
        np.testing.assert_allclose(to_np(got), to_np(want), atol=2e-5, rtol=1e-4)


def test_new_memory_is_last_inputs():
    rng = np.random.default_rng(1)
    seg1, seg2 = _segments(rng)
    # memory_length <= len(seg2): the memory is the tail of the inputs
    block = _block(1, memory_length=2)
    _, new_mem = block(seg2, memory=seg1)
    assert tuple(new_mem.shape) == (B, 2, HID)
    np.testing.assert_allclose(to_np(new_mem), seg2[:, -2:], atol=0)
    # memory_length > len(seg2): spills into the old memory
    block = _block(1, memory_length=5)
    _, new_mem = block(seg2, memory=seg1)
    cat = np.concatenate([seg1, seg2], axis=1)
    assert tuple(new_mem.shape) == (B, 5, HID)
    np.testing.assert_allclose(to_np(new_mem), cat[:, -5:], atol=0)
    # no memory given
    block = _block(1, memory_length=L1)
    _, new_mem = block(seg1)
    np.testing.assert_allclose(to_np(new_mem), seg1[:, -L1:], atol=0)


def test_fewer_positions_than_memory_length_are_all_kept():
    """memory + inputs shorter than memory_length: the memory is all of them (no wrap-around that
    keeps the last few), in call and in step; a later segment fills it up to memory_length."""
    rng = np.random.default_rng(3)
    seg1, seg2 = _segments(rng)
    block = _block(3, memory_length=L1 + L2 + 2)
    _, new_mem = block(seg2[:, :1], memory=seg1[:, :2])  # 3 positions, memory_length 9
    np.testing.assert_allclose(to_np(new_mem), np.concatenate([seg1[:, :2], seg2[:, :1]], axis=1), atol=0)
    _, new_mem = block(seg2)  # no memory, 3 positions
    np.testing.assert_allclose(to_np(new_mem), seg2, atol=0)
    _, cache = block.step(seg2[:, :1], block.memory_keys_values(seg1[:, :2]))
    assert all(tuple(t.shape) == (B, HEADS, 3, HID // HEADS) for t in cache)
    _, longer = block(seg1, memory=np.concatenate([seg1, seg2], axis=1))  # 11 positions: the last 9
    np.testing.assert_allclose(to_np(longer), np.concatenate([seg1, seg2, seg1], axis=1)[:, -9:], atol=0)


def _any_length_model(block, make_outputs):
    """A functional model of `make_outputs(inputs, memory)` with both lengths left None, as a `.keras` file
    rebuilds it, and `block` built on those inputs with non-trivial biases."""
    inputs, memory = keras.Input((None, HID)), keras.Input((None, HID))
    block(inputs, memory)
    model = keras.Model([inputs, memory], keras.layers.Lambda(lambda both: make_outputs(*both))([inputs, memory]))
    _nontrivial(block, np.random.default_rng(8))
    return model


# (m_len, q_len) of two calls of one model: 7 positions keep the last 5, 3 positions keep all of them.
ANY_LENGTHS = [(L1, L2), (2, 1)]


def test_lengths_left_none_build_and_run():
    """Built with None lengths (under JAX a symbolic length, which takes no computed slice start) and
    called, eagerly and compiled, at two lengths: the outputs are the full context's run over the same
    positions and the memory is the tail of [memory; inputs] (test_memory_equals_concatenated_run)."""
    block = _block(8, memory_length=5)
    model = _any_length_model(block, lambda inputs, memory: block(inputs, memory))
    rng = np.random.default_rng(8)
    for m_len, q_len in ANY_LENGTHS:
        context = rng.normal(size=(B, m_len + q_len, HID)).astype("float32")
        full, _ = block(context)
        for run in (model, compiled(model)):
            out, new_mem = run([context[:, m_len:], context[:, :m_len]])
            np.testing.assert_allclose(to_np(out), to_np(full)[:, m_len:], atol=2e-5, rtol=1e-4)
            np.testing.assert_allclose(to_np(new_mem), context[:, -5:], atol=0)


def test_step_with_lengths_left_none_equals_call():
    block = _block(9, memory_length=5)
    model = _any_length_model(block, lambda inputs, memory: block.step(inputs, block.memory_keys_values(memory)))
    rng = np.random.default_rng(9)
    for m_len, q_len in ANY_LENGTHS:
        context = rng.normal(size=(B, m_len + q_len, HID)).astype("float32")
        expected, new_mem = block(context[:, m_len:], memory=context[:, :m_len])
        for run in (model, compiled(model)):
            out, cache = run([context[:, m_len:], context[:, :m_len]])
            np.testing.assert_allclose(to_np(out), to_np(expected), atol=2e-5, rtol=1e-4)
            for got, want in zip(cache, block.memory_keys_values(new_mem)):
                np.testing.assert_allclose(to_np(got), to_np(want), atol=2e-5, rtol=1e-4)


def _is_zero_or_none(g):
    return g is None or np.all(g == 0)


def test_no_gradient_into_memory():
    rng = np.random.default_rng(2)
    seg1, seg2 = _segments(rng)
    block = _block(2, memory_length=L1)
    block(seg2, memory=seg1)
    _nontrivial(block, rng)
    weights = block.trainable_weights
    # new_memory is stop_gradient'ed (spec)
    (g_mem, g_x), _ = gradients(lambda mem, x: keras.ops.sum(block(x, memory=mem, training=True)[1]), [seg1, seg2])
    assert _is_zero_or_none(g_mem)
    assert _is_zero_or_none(g_x)
    # the memory is SG(m) in h~ = [SG(m) o h] (Transformer-XL, eq. in 3.2):
    # the loss on this segment sends no gradient into the cached memory
    (g_mem, g_x), gw = gradients(
        lambda mem, x: keras.ops.sum(block(x, memory=mem, training=True)[0] ** 2), [seg1, seg2], weights
    )
    assert _is_zero_or_none(g_mem)
    # ...while gradients do flow into the current segment and the weights
    assert g_x is not None and np.any(g_x != 0)
    assert all(g is not None and np.any(g != 0) for g in gw)


@pytest.mark.parametrize("norm_first", [False, True])
def test_two_layer_two_segment_recurrence(norm_first):
    rng = np.random.default_rng(3)
    seg1, seg2 = _segments(rng)
    layer1 = _block(3, memory_length=L1, norm_first=norm_first)
    layer2 = _block(4, memory_length=L1, norm_first=norm_first)
    both = np.concatenate([seg1, seg2], axis=1)
    layer2(layer1(both)[0])
    _nontrivial(layer1, rng)
    _nontrivial(layer2, rng)

    # one run over both segments
    h1, _ = layer1(both, training=False)
    h2, _ = layer2(h1, training=False)
    h2 = to_np(h2)

    # segment by segment, carrying each layer's memory
    a1, mem1 = layer1(seg1, training=False)
    a2, mem2 = layer2(a1, training=False)
    np.testing.assert_allclose(to_np(mem1), seg1, atol=0)
    np.testing.assert_allclose(to_np(mem2), to_np(a1), atol=0)
    b1, _ = layer1(seg2, memory=mem1, training=False)
    b2, _ = layer2(b1, memory=mem2, training=False)
    np.testing.assert_allclose(to_np(a2), h2[:, :L1], atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(to_np(b2), h2[:, L1:], atol=2e-5, rtol=1e-4)


def test_dropout_inactive_at_inference():
    rng = np.random.default_rng(5)
    seg1, seg2 = _segments(rng)
    block = _block(5, memory_length=L1, dropout=0.5)
    a, _ = block(seg2, memory=seg1, training=False)
    b, _ = block(seg2, memory=seg1, training=False)
    np.testing.assert_allclose(to_np(a), to_np(b), atol=0)


def test_explicit_causal_mask_equals_default():
    import layers as L

    rng = np.random.default_rng(6)
    seg1, seg2 = _segments(rng)
    block = _block(6, memory_length=L1)
    block(seg2, memory=seg1)
    _nontrivial(block, rng)
    a, _ = block(seg2, memory=seg1)
    mask = np.broadcast_to(to_np(L.look_ahead_mask(L2, memory_length=L1)),
                           (B, L2, L1 + L2))
    b, _ = block(seg2, memory=seg1, attention_mask=mask)
    np.testing.assert_allclose(to_np(a), to_np(b), atol=1e-5, rtol=1e-4)
    # masking out a memory slot changes the result
    mask2 = mask.copy()
    mask2[:, :, 0] = False
    c, _ = block(seg2, memory=seg1, attention_mask=mask2)
    assert np.max(np.abs(to_np(a) - to_np(c))) > 1e-4


def _attentions_of(block):
    kinds = (layers.MultiHeadAttention, layers.RelativeMultiHeadAttention)
    return [layer for layer in block._flatten_layers() if isinstance(layer, kinds)]


@pytest.mark.parametrize("cls, extra", [(layers.TransformerXLBlock, {"memory_length": 4}), (layers.EncoderBlock, {}),
                                        (layers.DecoderBlock, {})])
def test_attention_dropout_sets_the_attention_probabilities_rate_alone(cls, extra):
    x = np.random.default_rng(7).normal(size=(2, 5, 8)).astype("float32")
    inputs = (x, x) if cls is layers.DecoderBlock else (x,)
    block = cls(num_heads=2, intermediate_dim=16, dropout=0.3, attention_dropout=0.0, **extra)
    block(*inputs)
    attentions = _attentions_of(block)
    assert len(attentions) == (2 if cls is layers.DecoderBlock else 1)
    assert all(attention.dropout == 0.0 for attention in attentions) and block.feed_forward.dropout == 0.3
    default = cls(num_heads=2, intermediate_dim=16, dropout=0.3, **extra)
    default(*inputs)
    assert all(attention.dropout == 0.3 for attention in _attentions_of(default))  # None: the block's dropout
    assert cls.from_config(block.get_config()).attention_dropout == 0.0
    # With attention_dropout=0 the attention output is the same in training and at inference.
    for attention in attentions:
        np.testing.assert_allclose(to_np(attention(x, x, training=True)), to_np(attention(x, x, training=False)),
                                   rtol=1e-6)
    with pytest.raises(ValueError, match="attention_dropout"):
        cls(num_heads=2, intermediate_dim=16, attention_dropout=1.0, **extra)
