import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _backend import BACKEND, compiled, tensorflow_only  # noqa: E402
from _np_ref import causal_np, mha_reference, randomize, to_np  # noqa: E402

B, HID, HEADS, KD = 2, 8, 2, 4


def _make(seed=0, q_len=5, kv_len=6, **kwargs):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    mha = layers.MultiHeadAttention(num_heads=HEADS, key_dim=KD, **kwargs)
    q = rng.normal(size=(B, q_len, HID)).astype("float32")
    v = rng.normal(size=(B, kv_len, HID)).astype("float32")
    mha(query=q, value=v)  # build
    # Non-zero biases so that the reference checks them too.
    randomize([w for w in mha.weights if len(w.shape) <= 2], rng, 0.3)
    return mha, q, v, rng


def test_is_keras_mha_subclass_with_expected_kernels():
    mha, q, v, _ = _make()
    assert isinstance(mha, keras.layers.MultiHeadAttention)
    assert tuple(mha.query_dense.kernel.shape) == (HID, HEADS, KD)
    assert tuple(mha.key_dense.kernel.shape) == (HID, HEADS, KD)
    assert tuple(mha.value_dense.kernel.shape) == (HID, HEADS, KD)
    assert tuple(mha.output_dense.kernel.shape) == (HEADS, KD, HID)


def test_matches_numpy_self_and_cross():
    mha, q, v, rng = _make()
    got, scores = mha(query=q, value=v, return_attention_scores=True)
    exp, exp_p = mha_reference(mha, q, v)
    np.testing.assert_allclose(to_np(got), exp, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(to_np(scores), exp_p, atol=1e-6, rtol=1e-4)
    # self attention, no scores requested (fused path)
    got = mha(query=q, value=q)
    np.testing.assert_allclose(to_np(got), mha_reference(mha, q, q)[0],
                               atol=1e-5, rtol=1e-4)
    # distinct key and value
    k = rng.normal(size=v.shape).astype("float32")
    got = mha(query=q, value=v, key=k)
    np.testing.assert_allclose(
        to_np(got), mha_reference(mha, q, v, key=k)[0], atol=1e-5, rtol=1e-4
    )


def test_masked_keys_get_zero_weight():
    mha, q, v, rng = _make(seed=1)
    mask = rng.random(size=(B, 5, 6)) < 0.6
    mask[:, :, 0] = True  # every row has at least one allowed key
    out, scores = mha(query=q, value=v, attention_mask=mask,
                      return_attention_scores=True)
    scores = to_np(scores)
    assert scores.shape == (B, HEADS, 5, 6)
    assert np.all(scores[np.broadcast_to(~mask[:, None], scores.shape)] <= 1e-7)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-5)
    exp, exp_p = mha_reference(mha, q, v, mask=mask)
    np.testing.assert_allclose(to_np(out), exp, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(scores, exp_p, atol=1e-6, rtol=1e-4)
    # fused path (no scores) gives the same output
    out2 = mha(query=q, value=v, attention_mask=mask)
    np.testing.assert_allclose(to_np(out2), exp, atol=1e-5, rtol=1e-4)


def test_masked_key_contents_do_not_matter():
    mha, q, v, rng = _make(seed=2)
    key_mask = np.ones((B, 6), bool)
    key_mask[0, 4:] = False
    key_mask[1, 1] = False
    mask = np.broadcast_to(key_mask[:, None, :], (B, 5, 6))
    v2 = v.copy()
    v2[~key_mask] = rng.normal(size=v2[~key_mask].shape) * 10
    a = to_np(mha(query=q, value=v, attention_mask=mask))
    b = to_np(mha(query=q, value=v2, attention_mask=mask))
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_fully_masked_rows_are_finite():
    mha, q, v, rng = _make(seed=3)
    mask = np.ones((B, 5, 6), bool)
    mask[0, 2, :] = False
    mask[1, :, :] = False
    out, scores = mha(query=q, value=v, attention_mask=mask,
                      return_attention_scores=True)
    assert np.all(np.isfinite(to_np(out)))
    assert np.all(np.isfinite(to_np(scores)))
    out2 = mha(query=q, value=v, attention_mask=mask)
    assert np.all(np.isfinite(to_np(out2)))
    # the rows that are not fully masked are still correct
    exp, _ = mha_reference(mha, q, v, mask=mask)
    rows = [0, 1, 3, 4]
    np.testing.assert_allclose(to_np(out)[0, rows], exp[0, rows],
                               atol=1e-5, rtol=1e-4)


def test_causal_full_call_matches_numpy():
    mha, q, _, _ = _make(seed=4, q_len=6)
    x = q
    got, scores = mha(query=x, value=x, use_causal_mask=True,
                      return_attention_scores=True)
    exp, exp_p = mha_reference(mha, x, x, mask=np.broadcast_to(
        causal_np(6), (B, 6, 6)))
    np.testing.assert_allclose(to_np(got), exp, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(to_np(scores), exp_p, atol=1e-6, rtol=1e-4)
    got2 = mha(query=x, value=x, use_causal_mask=True)
    np.testing.assert_allclose(to_np(got2), exp, atol=1e-5, rtol=1e-4)


def test_compute_cache_shape_and_values():
    mha, q, v, _ = _make(seed=5)
    cache = to_np(mha.compute_cache(v))
    assert cache.shape == (B, 2, 6, HEADS, KD)
    Wk = to_np(mha.key_dense.kernel)
    bk = to_np(mha.key_dense.bias)
    Wv = to_np(mha.value_dense.kernel)
    bv = to_np(mha.value_dense.bias)
    np.testing.assert_allclose(cache[:, 0], np.einsum("bsd,dhk->bshk", v, Wk) + bk,
                               atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(cache[:, 1], np.einsum("bsd,dhk->bshk", v, Wv) + bv,
                               atol=1e-5, rtol=1e-5)


def test_cached_incremental_equals_full_causal():
    T = 6
    mha, x, _, _ = _make(seed=6, q_len=T)
    full = to_np(mha(query=x, value=x, use_causal_mask=True))
    cache = np.zeros((B, 2, T, HEADS, KD), "float32")
    for i in range(T):
        xi = x[:, i:i + 1]
        out, cache = mha(query=xi, value=xi, cache=cache,
                         cache_update_index=i, use_causal_mask=True)
        assert tuple(out.shape) == (B, 1, HID)
        np.testing.assert_allclose(to_np(out)[:, 0], full[:, i],
                                   atol=1e-5, rtol=1e-4, err_msg=f"step {i}")
    # the final cache holds all projected keys / values
    np.testing.assert_allclose(to_np(cache), to_np(mha.compute_cache(x)),
                               atol=1e-5, rtol=1e-5)


def test_cached_chunked_prefill_then_steps():
    T = 7
    mha, x, _, _ = _make(seed=7, q_len=T)
    full = to_np(mha(query=x, value=x, use_causal_mask=True))
    cache = np.zeros((B, 2, T, HEADS, KD), "float32")
    out, cache = mha(query=x[:, :3], value=x[:, :3], cache=cache,
                     cache_update_index=0, use_causal_mask=True)
    np.testing.assert_allclose(to_np(out), full[:, :3], atol=1e-5, rtol=1e-4)
    out, cache = mha(query=x[:, 3:5], value=x[:, 3:5], cache=cache,
                     cache_update_index=3, use_causal_mask=True)
    np.testing.assert_allclose(to_np(out), full[:, 3:5], atol=1e-5, rtol=1e-4)
    for i in (5, 6):
        out, scores, cache = mha(query=x[:, i:i + 1], value=x[:, i:i + 1],
                                 cache=cache, cache_update_index=i,
                                 use_causal_mask=True,
                                 return_attention_scores=True)
        np.testing.assert_allclose(to_np(out)[:, 0], full[:, i],
                                   atol=1e-5, rtol=1e-4)
        s = to_np(scores)
        assert s.shape == (B, HEADS, 1, T)
        assert np.all(s[..., i + 1:] <= 1e-7)
        np.testing.assert_allclose(s.sum(-1), 1.0, atol=1e-5)


def test_cross_attention_with_compute_cache_equals_plain_call():
    mha, q, v, rng = _make(seed=8)
    plain = to_np(mha(query=q, value=v))
    cache = mha.compute_cache(v)
    out, cache_back = mha(query=q, value=None, cache=cache)
    np.testing.assert_allclose(to_np(out), plain, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(to_np(cache_back), to_np(cache), atol=0)
    # with a key mask
    key_mask = np.ones((B, 6), bool)
    key_mask[1, 3:] = False
    mask = np.broadcast_to(key_mask[:, None, :], (B, 5, 6))
    plain = to_np(mha(query=q, value=v, attention_mask=mask))
    out, _ = mha(query=q, value=None, cache=cache, attention_mask=mask)
    np.testing.assert_allclose(to_np(out), plain, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(plain, mha_reference(mha, q, v, mask=mask)[0],
                               atol=1e-5, rtol=1e-4)
    # with distinct keys
    k = rng.normal(size=v.shape).astype("float32")
    plain = to_np(mha(query=q, value=v, key=k))
    out, _ = mha(query=q, value=None, cache=mha.compute_cache(v, key=k))
    np.testing.assert_allclose(to_np(out), plain, atol=1e-5, rtol=1e-4)


def test_dropout_inactive_at_inference():
    mha, q, v, _ = _make(seed=9, dropout=0.5)
    out = mha(query=q, value=v, training=False)
    np.testing.assert_allclose(to_np(out), mha_reference(mha, q, v)[0],
                               atol=1e-5, rtol=1e-4)


def test_mixed_precision_softmax_is_stable():
    # Softmax in float32: large float16 logits and fully masked rows must
    # still give finite outputs close to the float32 reference.
    rng = np.random.default_rng(10)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        mha = layers.MultiHeadAttention(num_heads=HEADS, key_dim=KD)
        q = (rng.normal(size=(B, 5, HID)) * 3).astype("float32")
        v = (rng.normal(size=(B, 6, HID)) * 3).astype("float32")
        mask = np.ones((B, 5, 6), bool)
        mask[1] = False
        out, scores = mha(query=q, value=v, attention_mask=mask,
                          return_attention_scores=True)
        out2 = mha(query=q, value=v, attention_mask=mask)
    finally:
        keras.config.set_dtype_policy(previous)
    assert np.all(np.isfinite(to_np(out)))
    assert np.all(np.isfinite(to_np(out2)))
    assert np.all(np.isfinite(to_np(scores)))
    ref, _ = mha_reference(mha, q, v, mask=mask)
    np.testing.assert_allclose(to_np(out)[0].astype(np.float64), ref[0],
                               atol=5e-2, rtol=5e-2)


def test_compiled_cached_step_with_tensor_index():
    T = 5
    mha, x, _, _ = _make(seed=11, q_len=T)
    full = to_np(mha(query=x, value=x, use_causal_mask=True))

    @compiled
    def step(xi, cache, i):
        return mha(query=xi, value=xi, cache=cache, cache_update_index=i,
                   use_causal_mask=True)

    cache = np.zeros((B, 2, T, HEADS, KD), "float32")
    for i in range(T):
        out, cache = step(x[:, i:i + 1], cache, keras.ops.convert_to_tensor(i))
        np.testing.assert_allclose(to_np(out)[:, 0], full[:, i],
                                   atol=1e-5, rtol=1e-4)


def test_cached_decoding_runs_under_mixed_bfloat16_with_a_float32_cache():
    import layers as zoo_layers

    mha = zoo_layers.MultiHeadAttention(num_heads=2, key_dim=4, dtype="mixed_bfloat16")
    x = np.random.default_rng(3).normal(size=(2, 5, 8)).astype("float32")
    full = np.asarray(mha(x, x, use_causal_mask=True), np.float32)
    cache = np.zeros((2, 2, 5, 2, 4), np.float32)
    steps = []
    for t in range(5):
        out, cache = mha(x[:, t : t + 1], x[:, t : t + 1], use_causal_mask=True, cache=cache, cache_update_index=t)
        steps.append(np.asarray(out, np.float32))
    assert np.all(np.isfinite(np.asarray(cache, np.float32)))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=5e-2)


def test_keras_masks_on_value_act_like_a_padding_attention_mask():
    import keras

    import layers as zoo_layers

    ids = np.array([[3, 4, 5, 0, 0]])
    embedded = keras.layers.Embedding(10, 8, mask_zero=True)
    mha = zoo_layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = embedded(ids)
    with_keras_mask = np.asarray(mha(x, x))
    explicit = np.asarray(mha(x, x, attention_mask=np.broadcast_to(ids[:, None, :] != 0, (1, 5, 5))))
    np.testing.assert_allclose(with_keras_mask[:, :3], explicit[:, :3], atol=1e-6)


def test_causal_attention_mask_needs_as_many_queries_as_keys():
    import pytest

    import layers as zoo_layers

    with pytest.raises(ValueError, match="causal=True needs as many queries as keys"):
        zoo_layers.attention_mask(np.ones((1, 3), bool), np.ones((1, 4), bool), causal=True)


@tensorflow_only
def test_call_on_tokens_runs_under_the_layers_name_scope_as_call_does():
    import tensorflow as tf

    # Profiles (benchmarks/traces.py) tell attention's ops by this scope; without it, translation's attention
    # (trained with skip_padding) was counted with "the rest".
    from layers.masks import gather_tokens

    mha, q, v, _ = _make(seed=3, q_len=4, kv_len=4)
    mask = np.array([[True, True, True, False], [True] * 4])

    @tf.function
    def traced(q, v):
        return mha.call_on_tokens(gather_tokens(q, mask), gather_tokens(v, mask), mask, mask)

    graph = traced.get_concrete_function(tf.constant(q), tf.constant(v)).graph
    products = [op.name for op in graph.get_operations() if op.type in ("MatMul", "BatchMatMulV2", "Einsum")]
    assert len(products) == 6  # four projections, scores, weighted values
    assert all(name.startswith(f"{mha.name}/") for name in products), products


@pytest.mark.parametrize("causal", [False, True])
def test_call_on_tokens_matches_numpy_at_the_real_tokens(causal):
    from layers.masks import gather_tokens

    q_len = kv_len = 6
    mha, q, v, _ = _make(seed=7, q_len=q_len, kv_len=kv_len)
    q_mask = np.ones((B, q_len), bool)
    q_mask[0, 4:] = False
    v_mask = np.ones((B, kv_len), bool)
    v_mask[1, 3:] = False
    allowed = np.broadcast_to(v_mask[:, None, :], (B, q_len, kv_len))
    if causal:
        allowed = allowed & causal_np(q_len, kv_len)[None]
    got, scores = mha.call_on_tokens(
        gather_tokens(q, q_mask), gather_tokens(v, v_mask), q_mask, v_mask, use_causal_mask=causal,
        return_attention_scores=True,
    )
    expected, expected_scores = mha_reference(mha, q, v, mask=allowed)
    np.testing.assert_allclose(to_np(got), expected[q_mask], atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(to_np(scores)[q_mask.nonzero()[0], :, q_mask.nonzero()[1]],
                               expected_scores[q_mask.nonzero()[0], :, q_mask.nonzero()[1]], atol=1e-6)


@pytest.mark.parametrize("dropout, training, scores", [(0.0, True, False), (0.5, False, False), (0.5, True, False),
                                                       (0.0, False, True)])
def test_other_backends_fuse_the_attention_when_its_probabilities_are_neither_returned_nor_dropped(
    monkeypatch, dropout, training, scores
):
    mha, q, v, _ = _make(seed=12, dropout=dropout)
    calls = []
    fused = keras.ops.dot_product_attention
    monkeypatch.setattr(keras.ops, "dot_product_attention", lambda *a, **k: calls.append(1) or fused(*a, **k))
    mask = np.ones((B, 5, 6), bool)
    mask[1, :, 4:] = False
    result = mha(query=q, value=v, attention_mask=mask, training=training, return_attention_scores=scores)
    may_fuse = BACKEND != "tensorflow" and not scores and not (training and dropout)
    assert len(calls) == may_fuse
    if not (training and dropout):
        got = to_np(keras.tree.flatten(result)[0])
        np.testing.assert_allclose(got, mha_reference(mha, q, v, mask=mask)[0], atol=1e-5, rtol=1e-4)


def test_fused_and_explicit_attention_agree_in_mixed_bfloat16():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        mha, q, v, _ = _make(seed=13)
        mask = np.ones((B, 5, 6), bool)
        mask[0, :, 3:] = False
        fused = mha(query=q, value=v, attention_mask=mask)
        explicit, _ = mha(query=q, value=v, attention_mask=mask, return_attention_scores=True)
    finally:
        keras.config.set_dtype_policy(previous)
    as_float32 = lambda t: to_np(keras.ops.cast(t, "float32"))  # noqa: E731
    reference = mha_reference(mha, q, v, mask=mask)[0]
    np.testing.assert_allclose(as_float32(fused), reference, atol=3e-2, rtol=3e-2)
    np.testing.assert_allclose(as_float32(explicit), reference, atol=3e-2, rtol=3e-2)


@pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow computes the attention itself")
@pytest.mark.parametrize("keys, asked", [(6, False), (layers.multi_head_attention.FLASH_MIN_KEYS, None)])
def test_short_keys_ask_for_xla_attention_and_longer_ones_let_keras_choose(monkeypatch, keys, asked):
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    seen = []
    fused = keras.ops.dot_product_attention
    monkeypatch.setattr(keras.ops, "dot_product_attention",
                        lambda *a, **k: seen.append(k["flash_attention"]) or fused(*a, **k))
    rng = np.random.default_rng(0)
    mha(rng.normal(size=(2, 3, 8)).astype("float32"), rng.normal(size=(2, keys, 8)).astype("float32"))
    assert seen == [asked]


@pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow computes the attention itself")
def test_a_model_of_unknown_lengths_builds_and_runs_through_the_fused_attention():
    # Keras builds a functional model on symbolic lengths, which cannot be compared with FLASH_MIN_KEYS.
    tokens = keras.Input((None, 8))
    model = keras.Model(tokens, layers.EncoderBlock(num_heads=2, intermediate_dim=16)(tokens))
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    assert tuple(model(x).shape) == (2, 5, 8)
