"""Plain-NumPy reference implementations shared by the layer tests.

Nothing in here imports the package under test: every number is computed
from first principles (formulas in the spec / the original papers) using
only NumPy, given weights read out of the layers.
"""

import math

import numpy as np


def to_np(x):
    """Converts a tensor / variable / array to a float64-free NumPy array."""
    if x is None:
        return None
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    try:
        import keras

        return np.asarray(keras.ops.convert_to_numpy(x))
    except Exception:  # pragma: no cover - fallback
        return np.asarray(x)


def sinusoid_loops(positions, hidden_dim):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same), by loops."""
    positions = list(np.asarray(positions, dtype=np.float64).reshape(-1))
    out = np.zeros((len(positions), hidden_dim), dtype=np.float64)
    for r, p in enumerate(positions):
        for k in range(hidden_dim):
            i = k // 2
            angle = p / (10000.0 ** (2.0 * i / hidden_dim))
            out[r, k] = math.sin(angle) if k % 2 == 0 else math.cos(angle)
    return out


def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def masked_softmax(scores, mask):
    """mask: bool, True = allowed. Masked entries get exactly 0 weight."""
    if mask is None:
        return softmax(scores)
    scores = np.where(mask, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(mask, np.exp(scores - m), 0.0)
    s = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(s == 0, 1.0, s)


def layer_norm(x, gamma=None, beta=None, epsilon=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + epsilon)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def relu(x):
    return np.maximum(x, 0.0)


def _kernel_and_bias(dense):
    """Returns (kernel, bias-or-None) of an EinsumDense/Dense or a variable."""
    if hasattr(dense, "kernel"):
        k = to_np(dense.kernel).astype(np.float64)
        b = getattr(dense, "bias", None)
        b = None if b is None else to_np(b).astype(np.float64)
        return k, b
    return to_np(dense).astype(np.float64), None


def mha_weights(mha):
    """Reads (Wq, bq, Wk, bk, Wv, bv, Wo, bo) from a keras-style MHA layer.

    Kernels: q/k/v (hidden, heads, key_dim); output (heads, value_dim, hidden).
    """
    out = []
    for name in ("query_dense", "key_dense", "value_dense", "output_dense"):
        k, b = _kernel_and_bias(getattr(mha, name))
        out.extend([k, b])
    return out


def mha_reference(mha, query, value, key=None, mask=None):
    """Scaled dot-product multi-head attention from the layer's own weights.

    Returns (output (b, q, hidden), probabilities (b, heads, q, k)).
    mask: bool (b, q, k) or None (True = allowed).
    """
    if key is None:
        key = value
    Wq, bq, Wk, bk, Wv, bv, Wo, bo = mha_weights(mha)
    query = np.asarray(query, np.float64)
    key = np.asarray(key, np.float64)
    value = np.asarray(value, np.float64)
    q = np.einsum("bqd,dhk->bqhk", query, Wq)
    k = np.einsum("bsd,dhk->bshk", key, Wk)
    v = np.einsum("bsd,dhk->bshk", value, Wv)
    if bq is not None:
        q = q + bq
    if bk is not None:
        k = k + bk
    if bv is not None:
        v = v + bv
    key_dim = Wq.shape[-1]
    scores = np.einsum("bqhk,bshk->bhqs", q, k) / math.sqrt(key_dim)
    m = None if mask is None else np.asarray(mask, bool)[:, None, :, :]
    probs = masked_softmax(scores, m)
    ctx = np.einsum("bhqs,bshk->bqhk", probs, v)
    out = np.einsum("bqhk,hke->bqe", ctx, Wo)
    if bo is not None:
        out = out + bo
    return out, probs


def causal_np(q_len, k_len=None, memory_length=0):
    if k_len is None:
        k_len = memory_length + q_len
    i = np.arange(q_len)[:, None]
    j = np.arange(k_len)[None, :]
    return j <= memory_length + i


def ffn_weights(ffn, hidden, intermediate):
    """Finds (W1, b1, W2, b2) of a FeedForward layer by shape.

    Requires hidden != intermediate so the shapes are unambiguous.
    """
    assert hidden != intermediate
    found = {}
    for w in ffn.weights:
        shape = tuple(w.shape)
        found.setdefault(shape, []).append(w)
    for s in [(hidden, intermediate), (intermediate,), (intermediate, hidden),
              (hidden,)]:
        assert len(found.get(s, [])) == 1, (
            f"expected exactly one weight of shape {s} in FeedForward, "
            f"got {[tuple(w.shape) for w in ffn.weights]}"
        )
    return (
        found[(hidden, intermediate)][0],
        found[(intermediate,)][0],
        found[(intermediate, hidden)][0],
        found[(hidden,)][0],
    )


def ffn_reference(x, W1, b1, W2, b2):
    return relu(x @ W1 + b1) @ W2 + b2


def randomize(variables, rng, scale=0.3):
    for v in variables:
        v.assign(rng.normal(size=tuple(v.shape)).astype("float32") * scale)
