"""Padding, look-ahead and attention masks.

One convention everywhere: a mask is boolean and True means "may attend"
(for `padding_mask`: "is a real token"), as in Keras.
"""

import keras
from keras import ops


def _check_rank(name, value, rank):
    if len(value.shape) != rank:
        raise ValueError(
            f"`{name}` must have rank {rank}, got shape {tuple(value.shape)}."
        )


def padding_mask(token_ids, pad_id=0):
    """True on real tokens, False on padding.

    Args:
        token_ids: int tensor (batch, seq).
        pad_id: the id used for padding.

    Returns:
        bool tensor (batch, seq).

    Example:
    >>> padding_mask([[5, 7, 0]])  # [[True, True, False]]
    """
    token_ids = ops.convert_to_tensor(token_ids)
    _check_rank("token_ids", token_ids, 2)
    return ops.not_equal(token_ids, pad_id)


def look_ahead_mask(length, memory_length=0, window=None):
    """Causal mask: query i may attend key j iff j <= memory_length + i.

    Keys are `memory_length` cached positions followed by the `length` current
    ones (Transformer-XL's [memory; segment]); with `memory_length=0` this is
    the lower triangle, diagonal included. `window` additionally limits every
    query to its last `window` keys (Transformer-XL's `same_length`).

    Args:
        length: number of queries (current positions).
        memory_length: number of positions before them.
        window: optional int, how many keys (itself included) a query sees.

    Returns:
        bool tensor (length, memory_length + length).

    Example:
    >>> look_ahead_mask(3)  # [[1,0,0],[1,1,0],[1,1,1]] as booleans
    """
    query = ops.arange(length)[:, None] + memory_length
    key = ops.arange(memory_length + length)[None, :]
    mask = ops.less_equal(key, query)
    if window is not None:
        mask = ops.logical_and(mask, ops.greater(key, query - window))
    return mask


def attention_mask(query_mask, key_mask, causal=False):
    """Combines per-token masks into a (batch, q, k) attention mask.

    Args:
        query_mask: bool (batch, q), True on real query tokens.
        key_mask: bool (batch, k), True on real key tokens.
        causal: also forbid attending to later positions (requires q == k).

    Returns:
        bool tensor (batch, q, k).

    Example:
    >>> m = padding_mask([[4, 2, 0]])
    >>> attention_mask(m, m, causal=True).shape  # (1, 3, 3)
    """
    query_mask = ops.cast(query_mask, "bool")
    key_mask = ops.cast(key_mask, "bool")
    _check_rank("query_mask", query_mask, 2)
    _check_rank("key_mask", key_mask, 2)
    mask = ops.logical_and(query_mask[:, :, None], key_mask[:, None, :])
    if causal and query_mask.shape[1] != key_mask.shape[1]:
        raise ValueError(
            f"causal=True needs as many queries as keys, got query_mask {tuple(query_mask.shape)} "
            f"and key_mask {tuple(key_mask.shape)}."
        )
    if causal:
        mask = ops.logical_and(mask, look_ahead_mask(ops.shape(query_mask)[1])[None])
    return mask


def merge_masks(allowed=None, real_keys=None):
    """One attention mask from an optional (batch, q, k) mask and key padding.

    Args:
        allowed: bool (batch, q, k) or None (the blocks' `attention_mask`).
        real_keys: bool (batch, k), True on real keys, or None (their `padding_mask`).

    Returns:
        bool (batch, q or 1, k), or None when both are None.
    """
    if real_keys is not None:
        real_keys = ops.cast(real_keys, "bool")
        _check_rank("padding_mask", real_keys, 2)
        real_keys = real_keys[:, None, :]
    if allowed is None:
        return real_keys
    allowed = ops.cast(allowed, "bool")
    _check_rank("attention_mask", allowed, 3)
    if real_keys is None:
        return allowed
    return ops.logical_and(allowed, real_keys)


def gather_tokens(inputs, padding_mask):
    """The real tokens' vectors as one matrix: (batch, seq, ...) -> (tokens, ...), in order.

    Position-wise layers (feed-forward networks, projections) computed on this matrix skip
    the padding; `scatter_tokens` puts the results back. The number of rows depends on the
    data, so this needs dynamic shapes: not under XLA (TensorFlow's jit_compile, TPUs, and
    jax.jit, which Keras's JAX backend compiles with unless the model runs eagerly).

    On TensorFlow this is `tf.boolean_mask` (its gradient a scatter of the rows); other
    backends gather the rows at the mask's nonzero positions.

    Args:
        inputs: (batch, seq, ...).
        padding_mask: bool (batch, seq), True on real tokens.

    Returns:
        (tokens, ...), tokens = the number of True entries of `padding_mask`.

    Example:
    >>> gather_tokens(keras.random.normal((2, 3, 4)), [[True, True, False], [True, False, False]]).shape  # (3, 4)
    """
    mask = ops.cast(padding_mask, "bool")
    _check_rank("padding_mask", mask, 2)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf  # the TensorFlow backend has loaded it

        return tf.boolean_mask(inputs, mask)
    inputs = ops.convert_to_tensor(inputs)
    rows = ops.reshape(inputs, (-1, *inputs.shape[2:]))  # (batch * seq, ...)
    return ops.take(rows, _real_rows(mask), axis=0)


def scatter_tokens(tokens, padding_mask):
    """`gather_tokens` undone: (tokens, ...) -> (batch, seq, ...), zeros at padding.

    Example:
    >>> x, mask = keras.random.normal((1, 2, 4)), [[True, False]]
    >>> scatter_tokens(gather_tokens(x, mask), mask)  # x with x[0, 1] zeroed
    """
    mask = ops.cast(padding_mask, "bool")
    _check_rank("padding_mask", mask, 2)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf  # the TensorFlow backend has loaded it

        shape = tf.concat([tf.shape(mask, out_type=tf.int64), tf.shape(tokens, out_type=tf.int64)[1:]], axis=0)
        return tf.scatter_nd(tf.where(mask), tokens, shape)
    tokens = ops.convert_to_tensor(tokens)
    batch, length = ops.shape(mask)
    feature_shape = tuple(tokens.shape[1:])
    rows = ops.scatter(ops.expand_dims(_real_rows(mask), 1), tokens, (batch * length, *feature_shape))
    return ops.reshape(rows, (batch, length, *feature_shape))


def _real_rows(mask):
    """Indices of the True entries of a (batch, seq) mask in its flattened order: (tokens,)."""
    flat = ops.reshape(mask, (-1,))
    if keras.backend.backend() != "jax":
        return ops.nonzero(flat)[0]
    import jax  # the JAX backend has loaded it

    try:
        return ops.nonzero(flat)[0]
    except jax.errors.ConcretizationTypeError as error:
        raise ValueError(
            "gather_tokens and scatter_tokens (skip_padding=True) need the padding mask's values, since "
            "the number of real tokens is a shape, but jax.jit traces it: run the model eagerly "
            "(`jit_compile=False`) or use skip_padding=False."
        ) from error
