"""Pretraining's input: BERT's masking of a batch of token ids.

Masking is stateless (seeded by the batch's index), so a resumed run masks every batch as the
uninterrupted run did, and the masks are the same on every backend and device."""

import tensorflow as tf

MASK_ID = 4  # the pretraining tokenizer's first user-defined piece (zoo.data.tokenizer.USER_SYMBOLS)
FIRST_REGULAR_ID = 5  # ids below are <pad>, <unk>, <s>, </s>, <mask>: never chosen, never sampled


def mask_tokens(token_ids, seed, mask_rate, max_predictions, vocab_size, mask_id=MASK_ID,
                first_regular_id=FIRST_REGULAR_ID):
    """BERT's masking of a batch, stateless in `seed` (shape [2] int): ids below `first_regular_id` are special
    (never chosen), `mask_id` is the <mask> / [MASK] token.

    Of each row's selectable tokens (real, not special), round(mask_rate * count) (at least one, at most
    max_predictions) are chosen uniformly; each becomes <mask> with probability 0.8, a uniformly drawn regular token
    with 0.1, and stays with 0.1.

    Returns a dict: "token_ids" (batch, seq) the corrupted input, "mask_positions", "mask_ids" (the original tokens
    there) and "mask_weights" (1.0 where a slot holds a chosen position, 0.0 for unused slots), each (batch,
    max_predictions)."""
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)
    selectable = token_ids >= first_regular_id
    count = tf.reduce_sum(tf.cast(selectable, tf.float32), axis=1)
    chosen = tf.minimum(tf.maximum(tf.round(count * mask_rate), tf.minimum(count, 1.0)), float(max_predictions))
    scores = tf.where(selectable, tf.random.stateless_uniform(tf.shape(token_ids), seeds[0]), -1.0)
    k = tf.minimum(max_predictions, tf.shape(token_ids)[1])
    _, positions = tf.math.top_k(scores, k)  # (batch, k), the highest scores first
    positions = tf.pad(positions, [[0, 0], [0, max_predictions - k]])
    used = tf.range(max_predictions, dtype=tf.float32)[None, :] < chosen[:, None]
    positions = tf.where(used, positions, 0)
    originals = tf.gather(token_ids, positions, batch_dims=1)
    draw = tf.random.stateless_uniform(tf.shape(positions), seeds[1])
    random_ids = tf.random.stateless_uniform(tf.shape(positions), seeds[2], minval=first_regular_id, maxval=vocab_size,
                                             dtype=tf.int32)
    replaced = tf.where(draw < 0.8, mask_id, tf.where(draw < 0.9, random_ids, originals))
    corrupted = scatter_at(token_ids, positions, replaced, used)
    return {"token_ids": corrupted, "mask_positions": positions, "mask_ids": originals,
            "mask_weights": tf.cast(used, tf.float32)}


def scatter_at(token_ids, positions, values, used):
    """token_ids (batch, seq) with values (batch, k) written at positions (batch, k) where `used`
    (the used positions of a row distinct). Dense, one-hot over seq: static shapes, for XLA too."""
    hits = tf.one_hot(positions, tf.shape(token_ids)[1], dtype=tf.int32) * tf.cast(used, tf.int32)[..., None]
    written = tf.reduce_sum(hits, axis=1) > 0  # (batch, seq)
    new = tf.reduce_sum(hits * tf.cast(values, tf.int32)[..., None], axis=1)
    return tf.where(written, new, token_ids)


def with_masks(token_ids, seed, config):
    """The batch a Pretrainer reads: `mask_tokens` of token_ids plus "original_ids" and "seed"."""
    mask_seed, sample_seed = tf.unstack(tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2))
    batch = mask_tokens(token_ids, mask_seed, config.mask_rate, config.max_predictions, config.encoder.vocab_size,
                        config.mask_id, config.first_regular_id)
    return {**batch, "original_ids": tf.cast(token_ids, tf.int32), "seed": sample_seed}
