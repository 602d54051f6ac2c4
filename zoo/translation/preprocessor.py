"""Text to the translator's token ids and back: one rule for training, evaluation, translation and the export.

A source is its tokens cut to max_length - 1, then </s>. A target is <s>, its tokens cut to max_length - 1, then
</s>: the decoder reads the row without its last token and predicts it without its first. Training and evaluation
take `source_rows` and `target_rows` (NumPy rows, for the length-bucketed batch plan); translation and the export
call `source_ids` on a batch of strings. The rows are `source_ids` and `target_ids` run over the texts, so the ids a
model is served are the ids it was trained on. The functions on tensors are tf.functions, so that they also run
eagerly (keras-hub tokenizers return lists there)."""

import tensorflow as tf

from zoo.data.tokenizer import END_ID, START_ID, UNK_ID, rows_of


@tf.function
def source_ids(tokenizer, texts, max_length):
    """tf.string (batch,) -> ragged int32 (batch, None): each text's tokens cut to max_length - 1, then </s>."""
    tokens = tf.cast(tokenizer.tokenize(texts)[:, : max_length - 1], tf.int32)
    return tf.concat([tokens, tf.fill([tf.shape(texts)[0], 1], END_ID)], axis=1)


@tf.function
def target_ids(tokenizer, texts, max_length):
    """tf.string (batch,) -> ragged int32 (batch, None): <s>, then `source_ids`' row."""
    return tf.concat([tf.fill([tf.shape(texts)[0], 1], START_ID), source_ids(tokenizer, texts, max_length)], axis=1)


def source_rows(tokenizer, texts, max_length):
    """`source_ids` of every text, as a list of int32 NumPy arrays."""
    return rows_of(lambda batch: source_ids(tokenizer, batch, max_length), texts)


def target_rows(tokenizer, texts, max_length):
    """`target_ids` of every text, as a list of int32 NumPy arrays."""
    return rows_of(lambda batch: target_ids(tokenizer, batch, max_length), texts)


@tf.function
def text_from_ids(tokenizer, token_ids):
    """Detokenized strings of generated ids (batch, T): special ids and padding dropped."""
    token_ids = tf.cast(token_ids, tf.int32)
    keep = tf.logical_or(token_ids > END_ID, tf.equal(token_ids, UNK_ID))
    return tokenizer.detokenize(tf.ragged.boolean_mask(token_ids, keep))
