import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _np_ref import sinusoid_loops, to_np  # noqa: E402

VOCAB = 11
HIDDEN = 8
MAX_LEN = 7


def _ids(rng, batch=2, seq=5):
    return rng.integers(0, VOCAB, size=(batch, seq)).astype("int32")


def _embedding_matrix(layer):
    emb = layer.token_embedding
    assert emb.__class__.__name__ == "ReversibleEmbedding"
    E = to_np(emb.embeddings).astype(np.float64)
    assert E.shape == (VOCAB, HIDDEN)
    return E


def _position_matrix(layer):
    pe = layer.position_embedding
    cands = [w for w in pe.weights if tuple(w.shape) == (MAX_LEN, HIDDEN)]
    assert len(cands) == 1, [tuple(w.shape) for w in pe.weights]
    return to_np(cands[0]).astype(np.float64), cands[0]


@pytest.mark.parametrize("hidden", [8, 7])
def test_sinusoidal_output_matches_numpy(hidden):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    layer = layers.TokenAndPositionEmbedding(VOCAB, hidden, MAX_LEN)
    ids = _ids(rng)
    got = to_np(layer(ids))
    assert got.shape == (2, 5, hidden)
    E = to_np(layer.token_embedding.embeddings).astype(np.float64)
    expected = E[ids] * math.sqrt(hidden) + sinusoid_loops(range(5), hidden)[None]
    np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)


def test_sinusoidal_start_index():
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    layer = layers.TokenAndPositionEmbedding(VOCAB, HIDDEN, MAX_LEN)
    ids = _ids(rng, seq=MAX_LEN)
    full = to_np(layer(ids))
    E = _embedding_matrix(layer)
    for k in [1, 3, MAX_LEN - 1]:
        got = to_np(layer(ids[:, k:], start_index=k))
        np.testing.assert_allclose(got, full[:, k:], atol=1e-5, rtol=1e-5)
        expected = (
            E[ids[:, k:]] * math.sqrt(HIDDEN)
            + sinusoid_loops(range(k, MAX_LEN), HIDDEN)[None]
        )
        np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)


def test_learned_output_matches_numpy_and_start_index():
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(2)
    layer = layers.TokenAndPositionEmbedding(
        VOCAB, HIDDEN, MAX_LEN, position="learned"
    )
    ids = _ids(rng, seq=MAX_LEN)
    layer(ids)  # build
    P, pvar = _position_matrix(layer)
    # make the position table clearly non-trivial (and distinct from the PE)
    P = rng.normal(size=P.shape)
    pvar.assign(P.astype("float32"))
    E = _embedding_matrix(layer)

    got = to_np(layer(ids[:, :4]))
    expected = E[ids[:, :4]] * math.sqrt(HIDDEN) + P[None, :4]
    np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)

    got = to_np(layer(ids[:, 2:5], start_index=2))
    expected = E[ids[:, 2:5]] * math.sqrt(HIDDEN) + P[None, 2:5]
    np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)

    got = to_np(layer(ids[:, MAX_LEN - 1:], start_index=MAX_LEN - 1))
    expected = E[ids[:, MAX_LEN - 1:]] * math.sqrt(HIDDEN) + P[None, MAX_LEN - 1:]
    np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)


def test_learned_has_position_weight_sinusoidal_does_not_need_one():
    layer = layers.TokenAndPositionEmbedding(
        VOCAB, HIDDEN, MAX_LEN, position="learned"
    )
    layer(np.zeros((1, 3), "int32"))
    _position_matrix(layer)
    sin_layer = layers.TokenAndPositionEmbedding(VOCAB, HIDDEN, MAX_LEN)
    sin_layer(np.zeros((1, 3), "int32"))
    # sinusoidal: the only trainable weight is the token embedding
    assert sum(int(np.prod(w.shape)) for w in sin_layer.trainable_weights) == (
        VOCAB * HIDDEN
    )


def test_reverse_gives_logits():
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    layer = layers.TokenAndPositionEmbedding(VOCAB, HIDDEN, MAX_LEN)
    h = layer(_ids(rng))
    logits = to_np(layer.token_embedding(h, reverse=True))
    assert logits.shape == (2, 5, VOCAB)
    E = _embedding_matrix(layer)
    np.testing.assert_allclose(
        logits, to_np(h).astype(np.float64) @ E.T, atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("position", ["sinusoidal", "learned"])
def test_too_long_raises(position):
    layer = layers.TokenAndPositionEmbedding(
        VOCAB, HIDDEN, MAX_LEN, position=position
    )
    layer(np.zeros((2, MAX_LEN), "int32"))  # exactly max_length is fine
    with pytest.raises(ValueError):
        layer(np.zeros((2, MAX_LEN + 1), "int32"))


def test_dropout_inactive_at_inference():
    keras.utils.set_random_seed(4)
    rng = np.random.default_rng(4)
    layer = layers.TokenAndPositionEmbedding(VOCAB, HIDDEN, MAX_LEN, dropout=0.5)
    ids = _ids(rng)
    got = to_np(layer(ids, training=False))
    E = _embedding_matrix(layer)
    expected = E[ids] * math.sqrt(HIDDEN) + sinusoid_loops(range(5), HIDDEN)[None]
    np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)
    # and active in training: some entries zeroed
    got_train = to_np(layer(ids, training=True))
    assert np.any(got_train == 0.0)


def test_bert_embedding_unscaled_then_layer_normalized_matches_numpy():
    """scale_tokens=False, layer_norm_epsilon=eps: LayerNorm(E[ids] + P) with the layer's gamma and beta."""
    keras.utils.set_random_seed(4)
    rng = np.random.default_rng(4)
    layer = layers.TokenAndPositionEmbedding(
        VOCAB, HIDDEN, MAX_LEN, position="learned", scale_tokens=False, layer_norm_epsilon=1e-3
    )
    ids = _ids(rng, seq=MAX_LEN)
    layer(ids)
    P, pvar = _position_matrix(layer)
    P = rng.normal(size=P.shape)
    pvar.assign(P.astype("float32"))
    gamma, beta = rng.normal(1.0, 0.3, HIDDEN), rng.normal(0.0, 0.3, HIDDEN)
    layer.layer_norm.gamma.assign(gamma.astype("float32"))
    layer.layer_norm.beta.assign(beta.astype("float32"))
    E = _embedding_matrix(layer)
    assert abs(E.std() - 0.02) < 0.01  # BERT's initializer when the tokens are not scaled

    x = E[ids[:, 1:6]] + P[None, 1:6]
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-3) * gamma + beta
    got = to_np(layer(ids[:, 1:6], start_index=1))
    np.testing.assert_allclose(got, expected, atol=3e-5, rtol=1e-5)
    config = layer.get_config()
    assert config["scale_tokens"] is False and config["layer_norm_epsilon"] == 1e-3


def test_segments_add_their_row_before_the_layer_norm():
    """num_segments=2: LayerNorm(E[ids] + P + S[segment_ids]), S starting at zero (the sum without segments)."""
    keras.utils.set_random_seed(5)
    rng = np.random.default_rng(5)
    layer = layers.TokenAndPositionEmbedding(
        VOCAB, HIDDEN, MAX_LEN, position="learned", scale_tokens=False, layer_norm_epsilon=1e-3, num_segments=2
    )
    ids, segments = _ids(rng), np.array([[0, 0, 1, 1, 1], [0, 1, 1, 1, 0]], "int32")
    before = to_np(layer(ids, segment_ids=segments))
    assert not np.any(to_np(layer.segment_embedding.embeddings))
    layer.segment_embedding.embeddings.assign(rng.normal(size=(2, HIDDEN)).astype("float32"))
    S = to_np(layer.segment_embedding.embeddings).astype(np.float64)
    P, _ = _position_matrix(layer)
    x = _embedding_matrix(layer)[ids] + P[None, :5]
    np.testing.assert_allclose(before, (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3),
                               atol=3e-5, rtol=1e-5)
    x = x + S[segments]
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(to_np(layer(ids, segment_ids=segments)), expected, atol=3e-5, rtol=1e-5)
    assert layer.get_config()["num_segments"] == 2
    with pytest.raises(ValueError, match="segment_ids must be given exactly when num_segments > 0"):
        layer(ids)
