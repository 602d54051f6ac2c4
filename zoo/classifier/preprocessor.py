"""Text to the classifier's token ids: one rule for training, evaluation, explanation and the export.

A start token (<s>, or BERT's [CLS]) heads every text, BERT's vocabularies end it with [SEP],
and a text too long for the model keeps its head and its tail. Training and evaluation call
`rows` (NumPy rows, for the length-bucketed batch plan), explanation and the export call the
preprocessor itself on a batch of strings; both run the same TensorFlow function (`framed`), so
the ids a model is served are the ids it was trained on.
"""

import tensorflow as tf

from zoo.data.tokenizer import START_ID, framing, rows_of


def head_and_tail(max_length, end_id=None):
    """How many leading and trailing tokens a truncated text keeps (the framing tokens aside:
    the start token, and the end token when `end_id` is given).

    A quarter from the head and the rest from the tail: reviews often end
    with their verdict (Sun et al., 2019, "How to Fine-Tune BERT for Text
    Classification", found head + tail best on IMDB)."""
    room = max_length - 1 - (end_id is not None)
    if room < 1:
        raise ValueError(f"max_length={max_length} leaves no room for text beside the "
                         f"{2 if end_id is not None else 1} framing tokens: use at least {max_length - room + 1}.")
    head = room // 4
    return head, room - head


class ClassifierPreprocessor(tf.Module):
    """Strings -> (batch, seq) int32 token ids, 0 = padding, at most `max_length` per text.

    `start_id` and `end_id` frame each text (`for_tokenizer` takes them from the tokenizer:
    [CLS] and [SEP] for WordPiece, <s> alone for the zoo's SentencePiece)."""

    def __init__(self, tokenizer, max_length, start_id=START_ID, end_id=None):
        super().__init__()
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.start_id, self.end_id = start_id, end_id
        self.head, self.tail = head_and_tail(max_length, end_id)

    @classmethod
    def for_tokenizer(cls, tokenizer, max_length):
        return cls(tokenizer, max_length, *framing(tokenizer))

    def framed(self, texts):
        """Ragged int32 ids of a batch of strings, framed and truncated. Graph code: keras-hub's
        tokenizers return Python lists when called eagerly."""
        ragged = self.tokenizer.tokenize(texts)
        ragged = tf.concat([ragged[:, : self.head], ragged[:, self.head :][:, -self.tail :]], axis=1)
        rows = tf.shape(texts)[0]
        parts = [tf.fill([rows, 1], tf.constant(self.start_id, ragged.dtype)), ragged]
        if self.end_id is not None:
            parts.append(tf.fill([rows, 1], tf.constant(self.end_id, ragged.dtype)))
        return tf.cast(tf.concat(parts, axis=1), tf.int32)

    @tf.function
    def __call__(self, texts):
        token_ids = self.framed(texts).to_tensor(0)
        # An empty batch still gets its start column: (0, 1), not (0, 0), so the head's [:, 0] exists.
        return tf.pad(token_ids, [[0, 0], [0, tf.maximum(1 - tf.shape(token_ids)[1], 0)]])

    def rows(self, texts, batch_size=2048):
        """The ids of every text, as a list of int32 NumPy arrays without padding."""
        return rows_of(self.framed, texts, batch_size)
