"""Text to the classifier's token ids: one rule for training, evaluation, explanation and the export.

A start token (<s>, or BERT's [CLS]) heads every text, BERT's vocabularies end it with [SEP], and a text too long for
the model keeps its head and its tail. Training and evaluation frame their texts with `framed` into the token cache
(zoo.classifier.data.token_rows), explanation and the export call the preprocessor itself on a batch of strings: the
same TensorFlow function, so the ids a model is served are the ids it was trained on.

Text pairs (`pairs=True`) are framed as BERT's: [CLS] a [SEP] b [SEP] (the zoo's SentencePiece and word vocabularies:
<s> a </s> b </s>), the pair truncated `longest_first` as Hugging Face's tokenizers do, each side keeping its head; a
separator written in a text ("[SEP]") is dropped. Their segment ids (0 up to the first separator, 1 after it) are read
from the ids (`segment_ids`), so the token cache holds ids alone and training and the export derive them the same way.
"""

import tensorflow as tf

from zoo.data.tokenizer import END_ID, START_ID, framing, rows_of

PAIR_FRAMING = 3  # [CLS], [SEP] and [SEP] around a pair


def head_and_tail(max_length, end_id=None):
    """How many leading and trailing tokens a truncated text keeps (the framing tokens aside: the start token, and the
    end token when `end_id` is given).

    A quarter from the head and the rest from the tail: reviews often end with their verdict (Sun et al., 2019, "How to
    Fine-Tune BERT for Text Classification", found head + tail best on IMDB)."""
    room = max_length - 1 - (end_id is not None)
    if room < 1:
        raise ValueError(f"max_length={max_length} leaves no room for text beside the "
                         f"{2 if end_id is not None else 1} framing tokens: use at least {max_length - room + 1}.")
    head = room // 4
    return head, room - head


def longest_first(first, second, room):
    """How many tokens each text of a pair keeps, (batch,) int lengths in, within `room`: Hugging Face's `longest_first`
    (tokenizers' truncation.rs), as dropping one token at a time from the longer text, from the one that started shorter
    when they are level: a pair that fits is kept whole; when the shorter fits in half the room it is kept whole and the
    longer gets the rest; else the shorter keeps room // 2, the longer the rest (the second when both are as long)."""
    shorter, longer = tf.minimum(first, second), tf.maximum(first, second)
    half = room // 2
    fits_half = shorter <= room - shorter
    shorter_kept = tf.where(fits_half, shorter, half)
    longer_kept = tf.where(fits_half, tf.minimum(longer, room - shorter), room - half)
    first_shorter = first <= second
    fits = first + second <= room
    return (tf.where(fits, first, tf.where(first_shorter, shorter_kept, longer_kept)),
            tf.where(fits, second, tf.where(first_shorter, longer_kept, shorter_kept)))


def segment_ids(token_ids, separator_id):
    """(batch, seq) int32 segment ids of framed pairs: 0 for [CLS], the first text and its [SEP], 1 after it;
    0 at padding. A text's own pieces never hold the separator (`ClassifierPreprocessor.pieces_of`)."""
    after = tf.cumsum(tf.cast(token_ids == separator_id, tf.int32), axis=1, exclusive=True) > 0
    return tf.cast(after & (token_ids != 0), tf.int32)


class ClassifierPreprocessor(tf.Module):
    """Strings -> (batch, seq) int32 token ids, 0 = padding, at most `max_length` per text; with `pairs`,
    two strings a row -> {"token_ids", "segment_ids"}, the model's inputs.

    `start_id` and `end_id` frame each text (`for_tokenizer` takes them from the tokenizer:
    [CLS] and [SEP] for WordPiece, <s> alone for the zoo's SentencePiece); a pair's separator is
    `end_id`, or </s> where a text has no end token."""

    def __init__(self, tokenizer, max_length, start_id=START_ID, end_id=None, pairs=False):
        super().__init__()
        self.tokenizer, self.max_length, self.pairs = tokenizer, max_length, pairs
        self.start_id, self.end_id = start_id, end_id
        self.separator_id = END_ID if end_id is None else end_id
        if pairs:  # the tokens of a pair's two texts that fit beside [CLS] and the two [SEP]s
            self.room = max_length - PAIR_FRAMING
            if self.room < 1:
                raise ValueError(f"max_length={max_length} leaves no room for a text pair beside [CLS] and two [SEP]: "
                                 f"use at least {PAIR_FRAMING + 1}.")
        else:
            self.head, self.tail = head_and_tail(max_length, end_id)

    @classmethod
    def for_tokenizer(cls, tokenizer, max_length, pairs=False):
        return cls(tokenizer, max_length, *framing(tokenizer), pairs=pairs)

    @property
    def signature(self):
        """The export's inputs: `text`, and `text_pair` for a pair model ((batch,) strings each)."""
        names = ("text", "text_pair") if self.pairs else ("text",)
        return [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def framed(self, texts):
        """Ragged int32 ids of a batch of strings ((batch, 2) for pairs), framed and truncated. Graph code:
        keras-hub's tokenizers return Python lists when called eagerly."""
        if self.pairs:
            return self.framed_pairs(texts[:, 0], texts[:, 1])
        ragged = self.tokenizer.tokenize(texts)
        ragged = tf.concat([ragged[:, : self.head], ragged[:, self.head :][:, -self.tail :]], axis=1)
        column = lambda token: tf.fill([tf.shape(texts)[0], 1], tf.constant(token, ragged.dtype))  # noqa: E731
        parts = [column(self.start_id), ragged] + ([] if self.end_id is None else [column(self.end_id)])
        return tf.cast(tf.concat(parts, axis=1), tf.int32)

    def pieces_of(self, texts):
        """A pair's text as pieces, less any separator written in it ("[SEP]": WordPiece reads special pieces
        in a text as themselves), which would move the segments' boundary."""
        ragged = self.tokenizer.tokenize(texts)
        return tf.ragged.boolean_mask(ragged, ragged != tf.constant(self.separator_id, ragged.dtype))

    def framed_pairs(self, first, second):
        """[CLS] a [SEP] b [SEP] as ragged int32 ids of two (batch,) strings, truncated `longest_first`."""
        rows = tf.shape(first)[0]
        both = self.pieces_of(tf.concat([first, second], axis=0))  # one tokenizer call (and graph) for both texts
        a, b = both[:rows], both[rows:]
        keep_a, keep_b = longest_first(a.row_lengths(), b.row_lengths(), self.room)
        a = tf.ragged.boolean_mask(a, tf.ragged.range(a.row_lengths()) < keep_a[:, None])
        b = tf.ragged.boolean_mask(b, tf.ragged.range(b.row_lengths()) < keep_b[:, None])
        column = lambda token: tf.fill([rows, 1], tf.constant(token, a.dtype))  # noqa: E731
        separator = column(self.separator_id)
        return tf.cast(tf.concat([column(self.start_id), a, separator, b, separator], axis=1), tf.int32)

    @tf.function
    def __call__(self, texts, text_pairs=None):
        """The model's inputs of a batch: token ids (batch, seq); for pairs, of `texts` and `text_pairs` (as many
        strings), {"token_ids", "segment_ids"}."""
        if self.pairs:
            with tf.control_dependencies([tf.debugging.assert_equal(
                    tf.shape(texts), tf.shape(text_pairs), message="text and text_pair must hold as many strings")]):
                texts = tf.stack([texts, text_pairs], axis=1)
        token_ids = self.framed(texts).to_tensor(0)
        # An empty batch still gets its start column: (0, 1), not (0, 0), so the head's [:, 0] exists.
        return self.inputs_of(tf.pad(token_ids, [[0, 0], [0, tf.maximum(1 - tf.shape(token_ids)[1], 0)]]))

    def inputs_of(self, token_ids):
        """The model's inputs for padded token ids (batch, seq): the ids, or a pair's with their segment ids."""
        if not self.pairs:
            return token_ids
        return {"token_ids": token_ids, "segment_ids": segment_ids(token_ids, self.separator_id)}

    def with_segments(self, batches):
        """A tf.data.Dataset of training's or evaluation's batches (dicts with "token_ids"), each given its
        "segment_ids" for a pair model (zoo.classifier.model.model_inputs takes them); unchanged otherwise."""
        if not self.pairs:
            return batches
        separator_id = self.separator_id
        return batches.map(lambda batch: {**batch, "segment_ids": segment_ids(batch["token_ids"], separator_id)})

    def rows(self, texts, batch_size=2048):
        """The ids of every text (or (text, text pair)), as a list of int32 NumPy arrays without padding."""
        return rows_of(self.framed, texts, batch_size)
