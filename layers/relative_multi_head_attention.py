"""Transformer-XL's multi-head attention with relative position encoding."""

import math

import keras
from keras import ops

from layers.dropout import Dropout
from layers.flat_einsum_dense import FlatEinsumDense
from layers.masks import look_ahead_mask
from layers.positional_encoding import sinusoid


def rel_shift(x):
    """Turns scores indexed by relative distance into scores indexed by key.

    Column c of `x` holds the score for the distance k_len - 1 - c (the
    relative encodings run from the farthest key to distance 0). Query i sits
    at position m_len + i of the k_len keys (m_len = k_len - q_len), so its
    score for key j is the one at distance m_len + i - j, i.e. column
    j + q_len - 1 - i. The zero-pad-and-reshape trick of Dai et al. moves each
    row by its own offset without a gather.

    Args:
        x: (batch, heads, q_len, k_len).

    Returns:
        (batch, heads, q_len, k_len) with out[..., i, j] = x[..., i, j + q_len - 1 - i]
        wherever j <= i + k_len - q_len; other entries are garbage and must be
        masked (they are the future under the causal mask).
    """
    batch, heads, q_len, k_len = (ops.shape(x)[i] for i in range(4))
    x = ops.pad(x, [[0, 0], [0, 0], [0, 0], [1, 0]])  # (batch, heads, q_len, k_len + 1)
    # Read as (k_len + 1, q_len) rows, dropping the first: on the flattened last axis that is
    # the elements from q_len on. A plain slice, whose gradient is one Pad, where TensorFlow's
    # gradient of a strided slice (x[:, :, 1:]) is far slower on a CPU.
    x = ops.reshape(x, (batch, heads, (k_len + 1) * q_len))
    x = ops.slice(x, (0, 0, q_len), (batch, heads, k_len * q_len))
    return ops.reshape(x, (batch, heads, q_len, k_len))


@keras.saving.register_keras_serializable(package="zoo")
class RelativeMultiHeadAttention(keras.layers.Layer):
    """Multi-head attention over [memory; inputs] with relative positions.

    For query i and key j at distance i - j (Dai et al., 2019, section 3.3):

        A_ij = (W_q x_i + u)^T W_kE x_j      terms (a) + (c): content
             + (W_q x_i + v)^T W_kR R_{i-j}  terms (b) + (d): position

    softmax(A / sqrt(key_dim)) weights the values W_v x_j; heads are joined
    by W_o. u and v (`content_bias`, `position_bias`) are learned per head,
    R is the sinusoidal encoding of the distance (capped at `clamp_length`),
    and W_kE (`key_dense`) and W_kR (`position_dense`) are separate. The
    projections have no bias, as in the paper. Softmax runs in float32.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head.
        dropout: dropout rate on the attention probabilities.
        clamp_length: optional int; distances beyond it use R at clamp_length.

    Call arguments:
        inputs: the current segment, (batch, q_len, hidden_dim).
        memory: the previous segment's states, (batch, m_len, hidden_dim), or None.
        attention_mask: bool (batch, q_len, m_len + q_len), True where allowed
            (e.g. padding, or a window); it is always combined with the causal
            mask `look_ahead_mask(q_len, memory_length=m_len)`.
        training: whether dropout is active.
        return_attention_scores: also return (batch, heads, q_len, m_len + q_len).
        position_keys: optional `position_keys(m_len + q_len, hidden_dim)`, computed
            once where many calls share the key length (evaluation, generation),
            instead of projecting R at every call.
        memory_keys_values: optional `memory_keys_values(memory)`, in place of
            `memory`: a generation cache, so that each step projects only its own
            positions.
        return_keys_values: also return the (keys, values) of all m_len + q_len
            positions, each (batch, heads, m_len + q_len, key_dim): the next step's
            cache, without projecting the inputs a second time.

    Returns:
        (batch, q_len, hidden_dim), then the scores and the keys and values if asked.

    Example:
    >>> attention = RelativeMultiHeadAttention(num_heads=4, key_dim=8)
    >>> x, memory = keras.random.normal((2, 6, 32)), keras.random.normal((2, 10, 32))
    >>> attention(x, memory).shape  # (2, 6, 32)

    Reference: Dai et al., "Transformer-XL: Attentive Language Models Beyond a
    Fixed-Length Context", ACL 2019, section 3.3.
    """

    def __init__(self, num_heads, key_dim, dropout=0.0, clamp_length=None, **kwargs):
        super().__init__(**kwargs)
        for name, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        if clamp_length is not None and (not isinstance(clamp_length, int) or clamp_length <= 0):
            raise ValueError(f"clamp_length={clamp_length!r} must be None or a positive integer.")
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout
        self.clamp_length = clamp_length
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)

    def _projection(self, equation, output_shape, name):
        return FlatEinsumDense(equation, output_shape=output_shape, dtype=self.dtype_policy, name=name)

    def build(self, inputs_shape, memory_shape=None):
        hidden_dim = inputs_shape[-1]
        # Keys, values and position keys are head-major (heads before length): the attention
        # products then read them without a transpose, and a cache is joined and cut on axis 2.
        n, h = self.num_heads, self.key_dim
        self.query_dense = self._projection("bqd,dnh->bqnh", (None, n, h), "query")
        self.key_dense = self._projection("bkd,dnh->bnkh", (n, None, h), "key")
        self.value_dense = self._projection("bkd,dnh->bnkh", (n, None, h), "value")
        self.position_dense = self._projection("kd,dnh->knh", (n, h), "position")  # transposed in position_keys
        self.output_dense = self._projection("bqnh,nhd->bqd", (None, hidden_dim), "attention_output")
        for layer in (self.query_dense, self.key_dense, self.value_dense):
            layer.build(inputs_shape)
        self.position_dense.build((None, hidden_dim))
        self.output_dense.build((*inputs_shape[:-1], self.num_heads, self.key_dim))
        bias_init = keras.initializers.RandomNormal(stddev=0.02)
        self.content_bias = self.add_weight((self.num_heads, self.key_dim), bias_init, name="content_bias")
        self.position_bias = self.add_weight((self.num_heads, self.key_dim), bias_init, name="position_bias")
        self.built = True

    def relative_encoding(self, key_length, hidden_dim):
        """R for distances key_length - 1, ..., 0 (clamped), float32 (key_length, hidden_dim)."""
        distances = key_length - 1 - ops.arange(key_length)
        if self.clamp_length is not None:
            distances = ops.minimum(distances, self.clamp_length)
        return sinusoid(distances, hidden_dim)

    def position_keys(self, key_length, hidden_dim):
        """W_kR R for distances key_length - 1, ..., 0: (heads, key_length, key_dim)."""
        relative = self.relative_encoding(key_length, hidden_dim)
        return ops.transpose(self.position_dense(ops.cast(relative, self.compute_dtype)), (1, 0, 2))

    def memory_keys_values(self, memory):
        """W_kE and W_v applied to memory states: (keys, values), each (batch, heads, m_len, key_dim)."""
        return self.key_dense(memory), self.value_dense(memory)

    def call(
        self,
        inputs,
        memory=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        position_keys=None,
        memory_keys_values=None,
        return_keys_values=False,
    ):
        if memory_keys_values is not None:
            if memory is not None:
                raise ValueError("Pass `memory` or `memory_keys_values`, not both.")
            key = ops.concatenate([ops.cast(memory_keys_values[0], inputs.dtype), self.key_dense(inputs)], axis=2)
            value = ops.concatenate([ops.cast(memory_keys_values[1], inputs.dtype), self.value_dense(inputs)], axis=2)
        else:
            context = inputs if memory is None else ops.concatenate([ops.cast(memory, inputs.dtype), inputs], axis=1)
            key = self.key_dense(context)  # (batch, heads, k_len, key_dim)
            value = self.value_dense(context)
        q_len, k_len = ops.shape(inputs)[1], ops.shape(key)[2]
        # Always causal: rel_shift leaves garbage where keys are in the future.
        causal = look_ahead_mask(q_len, memory_length=k_len - q_len)[None]
        if attention_mask is None:
            attention_mask = causal
        elif len(attention_mask.shape) != 3:
            raise ValueError(
                "`attention_mask` must have shape (batch, q_len, m_len + q_len), "
                f"got shape {tuple(attention_mask.shape)}."
            )
        else:
            attention_mask = ops.logical_and(ops.cast(attention_mask, "bool"), causal)
        query = self.query_dense(inputs)  # (batch, q_len, heads, key_dim)
        if position_keys is None:
            position_keys = self.position_keys(k_len, inputs.shape[-1])  # (heads, k_len, key_dim)
        position = ops.cast(position_keys, self.compute_dtype)

        u = ops.cast(self.content_bias, query.dtype)
        v = ops.cast(self.position_bias, query.dtype)
        content_scores = ops.einsum("bqnh,bnkh->bnqk", query + u, key)  # (a) + (c)
        position_scores = rel_shift(ops.einsum("bqnh,nkh->bnqk", query + v, position))  # (b) + (d)
        scores = ops.cast(content_scores + position_scores, "float32") / math.sqrt(self.key_dim)

        scores = ops.where(ops.cast(attention_mask, "bool")[:, None], scores, -1e9)
        probabilities = ops.softmax(scores, axis=-1)  # (batch, heads, q_len, k_len)
        dropped = ops.cast(self.dropout_layer(probabilities, training=training), value.dtype)
        outputs = self.output_dense(ops.einsum("bnqk,bnkh->bqnh", dropped, value))
        extras = ((probabilities,) if return_attention_scores else ()) + (((key, value),) if return_keys_values else ())
        return (outputs, *extras) if extras else outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout, clamp_length=self.clamp_length
        )
        return config
