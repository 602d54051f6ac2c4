"""Multi-head scaled dot-product attention with a key/value cache."""

import keras
from keras import ops

from layers.dropout import Dropout
from layers.flat_einsum_dense import FlatEinsumDense
from layers.masks import gather_tokens, scatter_tokens

# Keys below which `_fused_attention` does not ask for cuDNN's flash attention. On an NVIDIA H200 the paper's
# base model trained 9.5% faster with XLA's attention on sentences of 10-40 tokens, and 25% slower on sentences
# of 184-200 (BENCHMARKS.md, "GPU: notes"); the crossing lies between, 128 is a guess within that range.
FLASH_MIN_KEYS = 128


@keras.saving.register_keras_serializable(package="zoo")
class MultiHeadAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention` with float32 softmax and a key/value cache.

    softmax(Q K^T / sqrt(key_dim)) V over `num_heads` heads, joined by W_O.
    Constructor and call signature are Keras's; the additions are:

    - the softmax always runs in float32 and masked positions get a -1e9 bias,
      so mixed precision is stable and a fully masked row stays finite;
    - `cache` / `cache_update_index` for incremental decoding, where the keys
      and values of earlier positions are kept instead of recomputed;
    - `compute_cache(value)`, the projected keys/values of a fixed sequence
      (the encoder output, for cross-attention), computed once per sentence;
    - `call_on_tokens`, the same attention over the real tokens' rows of padded
      batches (`layers.masks.gather_tokens`): the projections skip the padding;
    - on backends other than TensorFlow, a call whose probabilities are neither
      returned nor dropped (no scores asked, dropout 0 or inference) computes
      them inside `keras.ops.dot_product_attention`: cuDNN flash attention on
      JAX with a recent NVIDIA GPU, the same float32 softmax elsewhere.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head's queries and keys.
        value_dim: size of each head's values (default key_dim; must equal
            key_dim when a cache is used).
        dropout: dropout rate on the attention probabilities.
        **kwargs: the other arguments of `keras.layers.MultiHeadAttention`
            (initializers, regularizers, `use_bias`, `output_shape`, ...),
            except `use_gate`, `sliding_window` and `flash_attention`, which
            the cached path does not implement.

    Call arguments:
        query: (batch, q, query_dim).
        value: (batch, k, value_dim); may be None when `cache` holds
            precomputed keys/values (`cache_update_index=None`).
        key: (batch, k, key_input_dim), default `value`.
        attention_mask: bool (batch, q, k), True where attention is allowed.
        return_attention_scores: also return the probabilities
            (batch, num_heads, q, k), float32.
        training: whether dropout is active.
        use_causal_mask: forbid attending to later positions.
        cache: (batch, 2, cache_length, num_heads, key_dim): keys at [:, 0],
            values at [:, 1]; Keras casts it to the compute dtype.
        cache_update_index: position at which the keys/values of this call's
            `value` are written into `cache`; None uses `cache` as it is.
        query_mask, value_mask, key_mask: Keras's per-token masks (without a cache).

    Returns:
        `output` (batch, q, query_dim); then the scores if asked; then the
        updated cache if one was passed (a tuple when more than one).

    Example:
    >>> mha = MultiHeadAttention(num_heads=8, key_dim=32)
    >>> x = keras.random.normal((2, 10, 256))
    >>> y, scores = mha(x, x, use_causal_mask=True, return_attention_scores=True)

    Reference: Vaswani et al., "Attention Is All You Need", 2017, section 3.2.
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, **kwargs):
        for name in ("use_gate", "sliding_window", "flash_attention"):
            if kwargs.get(name):
                raise ValueError(f"{name}={kwargs[name]!r} is not supported by the zoo's MultiHeadAttention.")
        super().__init__(num_heads, key_dim, value_dim=value_dim, dropout=dropout, **kwargs)

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        # Keras builds the projections as EinsumDense and the dropout as Dropout; the same
        # layers, weights and config, computed as one 2-D matmul each (see FlatEinsumDense)
        # and with the zoo's cheaper dropout mask (see layers.dropout.Dropout).
        for projection in (self._query_dense, self._key_dense, self._value_dense, self._output_dense):
            projection.__class__ = FlatEinsumDense
        self._dropout_layer.__class__ = Dropout

    def call(
        self,
        query,
        value,
        key=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        cache=None,
        cache_update_index=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
    ):
        if attention_mask is not None and len(attention_mask.shape) != 3:
            raise ValueError(
                "`attention_mask` must have shape (batch, query_length, key_length), "
                f"got shape {tuple(attention_mask.shape)}."
            )
        if cache is None:
            return super().call(
                query,
                value,
                key=key,
                query_mask=query_mask,
                value_mask=value_mask,
                key_mask=key_mask,
                attention_mask=attention_mask,
                return_attention_scores=return_attention_scores,
                training=training,
                use_causal_mask=use_causal_mask,
            )
        if any(m is not None for m in (query_mask, value_mask, key_mask)):
            raise ValueError("With a cache, pass padding as `attention_mask` (batch, q, cache_length), not Keras masks.")
        if self.value_dim != self.key_dim:
            raise ValueError(
                f"A cache needs value_dim == key_dim, got value_dim={self.value_dim}, key_dim={self.key_dim}."
            )
        if cache_update_index is not None:
            new_cache = ops.cast(self.compute_cache(value, key), cache.dtype)
            cache = ops.slice_update(cache, [0, 0, cache_update_index, 0, 0], new_cache)
        keys, values = ops.cast(cache[:, 0], self.compute_dtype), ops.cast(cache[:, 1], self.compute_dtype)
        if use_causal_mask:
            start = 0 if cache_update_index is None else cache_update_index
            query_positions = ops.arange(ops.shape(query)[1])[:, None] + start
            causal = ops.arange(ops.shape(keys)[1])[None, :] <= query_positions  # (q, cache_length)
            attention_mask = causal[None] if attention_mask is None else ops.logical_and(attention_mask, causal)
        output, scores = self._compute_attention(
            self._query_dense(query), keys, values, attention_mask, training, return_attention_scores
        )
        output = self._output_dense(output)
        if return_attention_scores:
            return output, scores, cache
        return output, cache

    def call_on_tokens(
        self,
        query,
        value,
        query_padding_mask,
        value_padding_mask,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        """`call` on the real tokens of padded batches, each side as one matrix of rows.

        The four projections run on those rows only; the attention itself on the
        padded (batch, heads, q, k) layout, keys at padding masked out.

        Args:
            query: (query_tokens, query_dim), `gather_tokens(query, query_padding_mask)`.
            value: (value_tokens, value_dim), `gather_tokens(value, value_padding_mask)`
                (also the keys).
            query_padding_mask: bool (batch, q), True on the tokens `query` holds.
            value_padding_mask: bool (batch, k), True on the tokens `value` holds.
            attention_mask: optional bool (batch, q or 1, k), True where attention is allowed.
            use_causal_mask: forbid attending to later positions (q == k).
            return_attention_scores: also return the probabilities.
            training: whether dropout is active.

        Returns:
            the output's rows (query_tokens, query_dim), the same as `call`'s at those
            tokens (but for a query that may attend to no key at all: `call` then
            averages every value, padding included, and this only the real ones); and
            the probabilities (batch, num_heads, q, k) if asked.
        """
        if not self.built:
            raise ValueError("call_on_tokens needs a built layer: call it (or `build` it) on padded inputs first.")
        if attention_mask is not None and len(attention_mask.shape) != 3:
            raise ValueError(
                f"`attention_mask` must have shape (batch, q or 1, k), got shape {tuple(attention_mask.shape)}."
            )
        # Under the layer's own name scope, as `call` runs: profiles count these ops as attention.
        with keras.name_scope(self.name, caller=self):
            mask = ops.cast(value_padding_mask, "bool")[:, None, :]
            if attention_mask is not None:
                mask = ops.logical_and(mask, ops.cast(attention_mask, "bool"))
            if use_causal_mask:
                length = ops.shape(value_padding_mask)[1]
                mask = ops.logical_and(mask, ops.arange(length)[None, :] <= ops.arange(length)[:, None])

            def project(dense, rows, padding_mask):  # (tokens, dim) -> (batch, length, heads, head_dim)
                return scatter_tokens(dense(rows[None])[0], padding_mask)

            output, scores = self._compute_attention(
                project(self._query_dense, query, query_padding_mask),
                project(self._key_dense, value, value_padding_mask),
                project(self._value_dense, value, value_padding_mask),
                mask,
                training,
                return_attention_scores,
            )
            output = self._output_dense(gather_tokens(output, query_padding_mask)[None])[0]
        return (output, scores) if return_attention_scores else output

    def compute_cache(self, value, key=None):
        """Projected keys and values: (batch, 2, length, num_heads, key_dim)."""
        key = value if key is None else key
        return ops.stack([self._key_dense(key), self._value_dense(value)], axis=1)

    def _compute_attention(
        self,
        query,
        key,
        value,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        # Keras passes use_causal_mask=True only with no mask at all, relying
        # on a fused kernel; the paths below need the mask itself.
        if use_causal_mask and attention_mask is None:
            attention_mask = self._compute_causal_mask(query, value)
        # TensorFlow keeps the explicit product below, whose speed BENCHMARKS.md's figures measure.
        explicit = return_attention_scores or (bool(training) and self._dropout > 0) or len(query.shape) != 4
        if keras.backend.backend() != "tensorflow" and not explicit:
            return self._fused_attention(query, key, value, attention_mask), None
        query = ops.multiply(query, ops.cast(self._inverse_sqrt_key_dim, query.dtype))
        scores = ops.einsum(self._dot_product_equation, key, query)  # (batch, heads, q, k)
        probabilities = self._masked_softmax(scores, attention_mask)
        dropped = self._dropout_layer(probabilities, training=training)
        output = ops.einsum(self._combine_equation, ops.cast(dropped, value.dtype), value)
        return output, probabilities

    def _fused_attention(self, query, key, value, attention_mask):
        """The attention output (batch, q, heads, value_dim) from `ops.dot_product_attention`,
        for backends other than TensorFlow when the probabilities are neither returned nor
        dropped: cuDNN's flash attention where JAX has it (bfloat16 or float16 on recent NVIDIA
        GPUs, for FLASH_MIN_KEYS keys or more; `keras.config.disable_flash_attention()` turns it
        off), otherwise the same
        float32-softmax product as `_compute_attention`'s. Masked keys get a large negative
        bias there too, so a fully masked row averages every value, as it does here."""
        mask = None
        if attention_mask is not None:
            # (batch, 1, q, k) in full: cuDNN takes the mask as a bias of the scores' own length.
            batch, q_len, k_len = ops.shape(query)[0], ops.shape(query)[1], ops.shape(key)[1]
            mask = ops.broadcast_to(ops.cast(attention_mask, "bool")[:, None], (batch, 1, q_len, k_len))
        flash, length = self._flash_attention, key.shape[1]
        # On JAX, a length known as a number (as in a compiled step; not while Keras builds a model on symbolic
        # shapes). PyTorch's own choice is left alone.
        short = isinstance(length, int) and length < FLASH_MIN_KEYS
        if flash is None and keras.backend.backend() == "jax" and short:
            flash = False  # XLA's attention: faster than cuDNN's on short sequences (FLASH_MIN_KEYS)
        return ops.dot_product_attention(
            query, key, value, mask=mask, scale=self._inverse_sqrt_key_dim, flash_attention=flash
        )

    def _masked_softmax(self, attention_scores, attention_mask=None):
        scores = ops.cast(attention_scores, "float32")
        if attention_mask is not None:
            mask = ops.cast(attention_mask, "bool")
            mask_expansion_axis = -len(self._attention_axes) * 2 - 1
            for _ in range(len(scores.shape) - len(mask.shape)):
                mask = ops.expand_dims(mask, axis=mask_expansion_axis)
            # A large negative bias, not -inf: a fully masked row stays finite.
            scores = ops.where(mask, scores, -1e9)
        axes = self._softmax.axis
        if len(axes) == 1:
            return ops.softmax(scores, axis=axes[0])  # one fused kernel
        return ops.exp(scores - ops.logsumexp(scores, axis=axes, keepdims=True))
