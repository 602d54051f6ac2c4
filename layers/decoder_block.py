"""Transformer decoder block: masked self-attention, cross-attention, feed-forward."""

import keras
from keras import ops

from layers.block_base import BlockBase, check_skip_padding, head_dim
from layers.masks import gather_tokens, merge_masks, scatter_tokens
from layers.multi_head_attention import MultiHeadAttention


@keras.saving.register_keras_serializable(package="zoo")
class DecoderBlock(BlockBase):
    """One decoder layer, each sub-layer wrapped in Add & Norm:

        x = AddNorm(x, MaskedSelfAttention(x))
        x = AddNorm(x, CrossAttention(x, encoder_output))
        x = AddNorm(x, FFN(x))

    Self-attention is always causal (the look-ahead mask). For incremental
    decoding pass a self-attention `cache` (zeros of shape (batch, 2,
    max_length, num_heads, hidden_dim // num_heads) at the start) with
    `cache_update_index` = the position of the first new token: the block
    writes the new keys/values there and returns the updated cache, and its
    output equals the full-prefix call's output at those positions. The
    encoder side is constant while decoding: `compute_cross_attention_cache`
    projects its keys/values once, to pass as `cross_attention_cache`.

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
        inputs: (batch, target_length, hidden_dim).
        encoder_output: (batch, source_length, hidden_dim); may be None when
            `cross_attention_cache` is given.
        padding_mask: bool (batch, target_length), or (batch, cache_length)
            with a cache: True on real target tokens.
        encoder_padding_mask: bool (batch, source_length).
        cache: self-attention cache (batch, 2, cache_length, num_heads, head_dim).
        cache_update_index: position of `inputs`' first token in the cache.
        cross_attention_cache: from `compute_cross_attention_cache`.
        training: whether dropout is active.
        return_attention_scores: also return (self_scores, cross_scores).
        skip_padding: compute the position-wise parts (projections, Add & Norm,
            FFN) at the real tokens of `padding_mask` and `encoder_padding_mask` only
            (`layers.masks.gather_tokens`): their outputs are the same, the padding's
            are 0. Faster when batches hold padding; needs dynamic shapes, so not
            under XLA (jit_compile, TPUs). Not with caches.

    Returns:
        outputs (batch, target_length, hidden_dim); then (self_scores,
        cross_scores) if asked; then the updated cache if one was passed.

    Example:
    >>> block = DecoderBlock(num_heads=4, intermediate_dim=64)
    >>> y = block(keras.random.normal((2, 7, 16)), keras.random.normal((2, 9, 16)))

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
        self.self_attention_add_norm = self.add_norm("self_attention_add_norm")
        self.cross_attention_add_norm = self.add_norm("cross_attention_add_norm")
        self.self_attention = None
        self.cross_attention = None

    def _attention(self, key_dim, name):
        return MultiHeadAttention(
            self.num_heads, key_dim, dropout=self.attention_rate(), dtype=self.dtype_policy, name=name
        )

    def build(self, inputs_shape, encoder_output_shape=None):
        key_dim = head_dim(inputs_shape[-1], self.num_heads)
        self.self_attention = self._attention(key_dim, "self_attention")
        self.self_attention.build(inputs_shape, inputs_shape)
        self.cross_attention = self._attention(key_dim, "cross_attention")
        self.cross_attention.build(inputs_shape, encoder_output_shape or inputs_shape)
        self.self_attention_add_norm.build(inputs_shape)
        self.cross_attention_add_norm.build(inputs_shape)
        self.build_feed_forward(inputs_shape)
        self.built = True

    def compute_cross_attention_cache(self, encoder_output):
        """Cross-attention keys/values of `encoder_output`, computed once per sentence."""
        return self.cross_attention.compute_cache(encoder_output)

    def _attend_encoder(
        self, x, encoder_output, encoder_padding_mask, cross_attention_cache, tokens_of, return_scores, training
    ):
        """Cross-attention of x over the encoder output (or its cache): (attended, scores if
        `return_scores` else None). With `tokens_of` (the decoder's padding mask), x holds those tokens' rows."""
        if tokens_of is not None:
            if encoder_padding_mask is None:
                encoder_padding_mask = ops.ones(ops.shape(encoder_output)[:2], "bool")
            encoder_tokens = gather_tokens(encoder_output, encoder_padding_mask)
            results = self.cross_attention.call_on_tokens(
                x, encoder_tokens, tokens_of, encoder_padding_mask, return_attention_scores=return_scores,
                training=training,
            )
        else:
            mask = merge_masks(None, encoder_padding_mask)
            cache = {} if cross_attention_cache is None else {"cache": cross_attention_cache}
            value = encoder_output if cross_attention_cache is None else None
            results = self.cross_attention(
                x, value, attention_mask=mask, return_attention_scores=return_scores, training=training, **cache
            )
        attended, scores, _ = _unpack(results, return_scores, cross_attention_cache is not None)
        return attended, scores

    def call(
        self,
        inputs,
        encoder_output=None,
        padding_mask=None,
        encoder_padding_mask=None,
        cache=None,
        cache_update_index=None,
        cross_attention_cache=None,
        training=None,
        return_attention_scores=False,
        skip_padding=False,
    ):
        if encoder_output is None and cross_attention_cache is None:
            raise ValueError("DecoderBlock needs `encoder_output` or a `cross_attention_cache`.")
        if cache is not None and cache_update_index is None:
            raise ValueError("A self-attention `cache` needs `cache_update_index` (the position of the new tokens).")
        if skip_padding and (cache is not None or cross_attention_cache is not None):
            raise ValueError("skip_padding works on whole sequences, not with a `cache` or `cross_attention_cache`.")
        check_skip_padding(skip_padding, padding_mask)
        caching = {} if cache is None else {"cache": cache, "cache_update_index": cache_update_index}
        # With skip_padding, x holds the real target tokens' rows (tokens, hidden) until the end.
        x = gather_tokens(inputs, padding_mask) if skip_padding else inputs
        normalized = self.self_attention_add_norm.normalize(x)
        # Scores only when asked: without them, other backends than TensorFlow may fuse the attention.
        if skip_padding:
            results = self.self_attention.call_on_tokens(
                normalized, normalized, padding_mask, padding_mask, use_causal_mask=True,
                return_attention_scores=return_attention_scores, training=training,
            )
        else:
            results = self.self_attention(
                normalized,
                normalized,
                attention_mask=merge_masks(None, padding_mask),
                use_causal_mask=True,
                return_attention_scores=return_attention_scores,
                training=training,
                **caching,
            )
        attended, self_scores, new_cache = _unpack(results, return_attention_scores, cache is not None)
        x = self.self_attention_add_norm(x, attended, training=training)

        attended, cross_scores = self._attend_encoder(
            self.cross_attention_add_norm.normalize(x),
            encoder_output,
            encoder_padding_mask,
            cross_attention_cache,
            padding_mask if skip_padding else None,
            return_attention_scores,
            training,
        )
        x = self.cross_attention_add_norm(x, attended, training=training)

        outputs = self.feed_forward_sublayer(x, training=training)
        outputs = scatter_tokens(outputs, padding_mask) if skip_padding else outputs
        results = (outputs,)
        if return_attention_scores:
            results += ((self_scores, cross_scores),)
        if new_cache is not None:
            results += (new_cache,)
        return results[0] if len(results) == 1 else results


def _unpack(results, scores, cache):
    """An attention call's results as (output, scores or None, cache or None), from what it returns:
    the output, then the scores if `scores`, then the cache if `cache`."""
    if not (scores or cache):
        return results, None, None
    output, *rest = results
    return output, rest[0] if scores else None, rest[-1] if cache else None
