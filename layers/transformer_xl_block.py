"""Transformer-XL block: relative attention over [memory; segment], then FFN."""

import keras
from keras import ops

from layers.block_base import BlockBase, head_dim
from layers.relative_multi_head_attention import RelativeMultiHeadAttention


@keras.saving.register_keras_serializable(package="zoo")
class TransformerXLBlock(BlockBase):
    """One Transformer-XL layer with segment-level recurrence.

        h~ = [SG(memory); inputs]                    keys/values span both
        x  = AddNorm(inputs, RelAttention(inputs, memory))
        y  = AddNorm(x, FFN(x))
        new_memory = SG(last memory_length positions of h~)

    The memory is data, passed in and returned (never state on the layer):
    the caller feeds `new_memory` to the same layer on the next segment. It
    is cut with stop_gradient, so no gradient reaches the previous segment.

    Args:
        num_heads: number of attention heads.
        intermediate_dim: inner width of the feed-forward network.
        memory_length: how many positions the returned memory keeps.
        dropout: dropout on FFN activations and each sub-layer's output,
            and (unless `attention_dropout` is given) on attention probabilities.
        activation: the FFN's activation.
        norm_first: pre-norm instead of the paper's post-norm.
        clamp_length: optional cap on relative distances.
        epsilon: LayerNorm's epsilon.
        attention_dropout: dropout on the attention probabilities (the
            reference implementation's `dropatt`); None: `dropout`.

    Call arguments:
        inputs: (batch, q_len, hidden_dim), this layer's input for the segment.
        memory: (batch, m_len, hidden_dim), this layer's inputs for the
            previous positions, or None.
        attention_mask: bool (batch, q_len, m_len + q_len), combined with the
            causal mask (which alone applies when it is None).
        training: whether dropout is active.
        return_attention_scores: also return (batch, heads, q_len, m_len + q_len).
        position_keys: optional `block.attention.position_keys(m_len + q_len,
            hidden_dim)`, reused by calls that share the key length.

    Returns:
        (outputs (batch, q_len, hidden_dim)[, scores], new_memory
        (batch, min(memory_length, m_len + q_len), hidden_dim)).

    Example:
    >>> block = TransformerXLBlock(num_heads=4, intermediate_dim=64, memory_length=16)
    >>> y, memory = block(keras.random.normal((2, 8, 32)))
    >>> y, memory = block(keras.random.normal((2, 8, 32)), memory)

    Reference: Dai et al., "Transformer-XL: Attentive Language Models Beyond a
    Fixed-Length Context", ACL 2019, sections 3.2-3.3.
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        memory_length,
        dropout=0.1,
        activation="relu",
        norm_first=False,
        clamp_length=None,
        epsilon=1e-5,
        attention_dropout=None,
        **kwargs,
    ):
        super().__init__(
            num_heads, intermediate_dim, dropout, activation, norm_first, epsilon, attention_dropout, **kwargs
        )
        if not isinstance(memory_length, int) or memory_length < 0:
            raise ValueError(f"memory_length={memory_length!r} must be a non-negative integer.")
        self.memory_length = memory_length
        self.clamp_length = clamp_length
        self.attention_add_norm = self.add_norm("attention_add_norm")
        self.attention = None

    def build(self, inputs_shape, memory_shape=None):
        key_dim = head_dim(inputs_shape[-1], self.num_heads)
        self.attention = RelativeMultiHeadAttention(
            self.num_heads,
            key_dim,
            self.attention_rate(),
            self.clamp_length,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention.build(inputs_shape, memory_shape)
        self.attention_add_norm.build(inputs_shape)
        self.build_feed_forward(inputs_shape)
        self.built = True

    def call(
        self,
        inputs,
        memory=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        position_keys=None,
    ):
        if memory is not None:
            memory = ops.stop_gradient(ops.cast(memory, inputs.dtype))
        normalize = self.attention_add_norm.normalize
        attended, scores = self.attention(
            normalize(inputs),
            None if memory is None else normalize(memory),
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=True,
            position_keys=position_keys,
        )
        x = self.attention_add_norm(inputs, attended, training=training)
        outputs = self.feed_forward_sublayer(x, training=training)
        context = inputs if memory is None else ops.concatenate([memory, inputs], axis=1)
        new_memory = ops.stop_gradient(_last(context, self.memory_length, axis=1))
        if return_attention_scores:
            return outputs, scores, new_memory
        return outputs, new_memory

    def memory_keys_values(self, memory):
        """The attention's keys and values of memory states: a cache for `step`."""
        memory = ops.cast(memory, self.compute_dtype)
        return self.attention.memory_keys_values(self.attention_add_norm.normalize(memory))

    def step(self, inputs, keys_values, attention_mask=None, position_keys=None):
        """`call` for generation: the memory comes as its projected keys and values
        (`memory_keys_values`), so each step projects only its own positions. Returns
        (outputs, the keys and values of the last memory_length positions)."""
        normalized = self.attention_add_norm.normalize(inputs)
        attended, keys_values = self.attention(
            normalized,
            memory_keys_values=keys_values,
            attention_mask=attention_mask,
            position_keys=position_keys,
            return_keys_values=True,
        )
        x = self.attention_add_norm(inputs, attended)
        outputs = self.feed_forward_sublayer(x)
        # keys and values: (batch, heads, length, key_dim)
        return outputs, tuple(_last(t, self.memory_length, axis=2) for t in keys_values)

    def get_config(self):
        config = super().get_config()
        config.update(memory_length=self.memory_length, clamp_length=self.clamp_length)
        return config


def _last(x, count, axis):
    """The last `count` positions of `x` along `axis`, all of them when there are fewer. The start is the
    constant -count, which every backend clamps to the first position: no length is needed, and under JAX a
    length left None in a functional model is symbolic and takes no computed start."""
    kept = slice(-count, None) if count else slice(0, 0)
    return x[(slice(None),) * axis + (kept,)]
