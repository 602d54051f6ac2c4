"""Transformer encoder block: self-attention and feed-forward, each with Add & Norm."""

import keras

from layers.block_base import BlockBase, check_skip_padding, head_dim
from layers.masks import gather_tokens, merge_masks, scatter_tokens
from layers.multi_head_attention import MultiHeadAttention


@keras.saving.register_keras_serializable(package="zoo")
class EncoderBlock(BlockBase):
    """One encoder layer: x = AddNorm(x, SelfAttention(x)); x = AddNorm(x, FFN(x)).

    The hidden size is taken from the input; each of `num_heads` heads gets
    hidden_dim / num_heads dimensions.

    Args:
        num_heads: number of attention heads.
        intermediate_dim: inner width of the feed-forward network.
        dropout: dropout on attention probabilities, the FFN's inner
            activations and each sub-layer's output.
        activation: the FFN's activation.
        norm_first: pre-norm instead of the paper's post-norm.
        epsilon: LayerNorm's epsilon.
        attention_dropout: dropout on the attention probabilities alone (the
            paper drops none there: 0); None: `dropout`.

    Call arguments:
        inputs: (batch, seq, hidden_dim).
        padding_mask: bool (batch, seq), True on real tokens.
        attention_mask: bool (batch, seq, seq), True where attention is allowed.
        training: whether dropout is active.
        return_attention_scores: also return (batch, num_heads, seq, seq).
        skip_padding: compute the position-wise parts (projections, Add & Norm,
            FFN) at the real tokens of `padding_mask` only (`layers.masks.gather_tokens`):
            their outputs are the same, the padding's are 0. Faster when batches
            hold padding; needs dynamic shapes, so not under XLA (jit_compile, TPUs).

    Returns:
        (batch, seq, hidden_dim), and the attention scores if asked.

    Example:
    >>> block = EncoderBlock(num_heads=4, intermediate_dim=64)
    >>> ids = keras.ops.convert_to_tensor([[5, 3, 0]])
    >>> x = keras.random.normal((1, 3, 16))
    >>> block(x, padding_mask=ids != 0).shape  # (1, 3, 16)

    Reference: Vaswani et al., "Attention Is All You Need", 2017, section 3.1.
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        activation="relu",
        norm_first=False,
        epsilon=1e-5,
        attention_dropout=None,
        **kwargs,
    ):
        super().__init__(
            num_heads, intermediate_dim, dropout, activation, norm_first, epsilon, attention_dropout, **kwargs
        )
        self.attention_add_norm = self.add_norm("attention_add_norm")
        self.self_attention = None

    def build(self, inputs_shape):
        key_dim = head_dim(inputs_shape[-1], self.num_heads)
        self.self_attention = MultiHeadAttention(
            self.num_heads, key_dim, dropout=self.attention_rate(), dtype=self.dtype_policy, name="self_attention"
        )
        self.self_attention.build(inputs_shape, inputs_shape)
        self.attention_add_norm.build(inputs_shape)
        self.build_feed_forward(inputs_shape)
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        skip_padding=False,
    ):
        check_skip_padding(skip_padding, padding_mask)
        mask = merge_masks(attention_mask, padding_mask)  # (batch, 1 or seq, seq)
        # With skip_padding, x holds the real tokens' rows (tokens, hidden) until the end.
        x = gather_tokens(inputs, padding_mask) if skip_padding else inputs
        normalized = self.attention_add_norm.normalize(x)
        # Scores only when asked: without them, other backends than TensorFlow may fuse the attention.
        if skip_padding:
            attended = self.self_attention.call_on_tokens(
                normalized, normalized, padding_mask, padding_mask, mask,
                return_attention_scores=return_attention_scores, training=training,
            )
        else:
            attended = self.self_attention(
                normalized, normalized, attention_mask=mask, return_attention_scores=return_attention_scores,
                training=training,
            )
        attended, scores = attended if return_attention_scores else (attended, None)
        x = self.attention_add_norm(x, attended, training=training)
        outputs = self.feed_forward_sublayer(x, training=training)
        outputs = scatter_tokens(outputs, padding_mask) if skip_padding else outputs
        return (outputs, scores) if return_attention_scores else outputs
