"""Text to the language model's token ids.

Training and evaluation read a corpus (`Vocabulary.encode`) laid out as contiguous streams
(`stream_layout`), fed segment by segment (`stream_dataset`). Generation and scoring, in the
recipe and in the export alike, read each text of a batch through `text_ids`: its tokens after a
boundary token, as a line of the corpus follows the end of the line before it."""

import numpy as np
import tensorflow as tf


def text_ids(vocabulary, texts):
    """tf.string (batch,) -> ragged int32 (batch, None): each text's ids after a boundary token
    (<eos> or a newline), so an empty text starts at a sentence or line boundary."""
    ids = vocabulary.tokenize(texts)
    boundary = tf.fill([tf.shape(texts)[0], 1], tf.constant(vocabulary.boundary_id, ids.dtype))
    return tf.concat([boundary, ids], axis=1)


def stream_layout(ids, num_streams):
    """The corpus as `num_streams` contiguous rows (the tail that does not fill a row is dropped): (num_streams, n)
    int32. Row r continues where row r - 1's text ends. `ids` is an array, or the token cache's rows
    (zoo.data.cache.TokenRows) laid end to end: then the layout is `Streams`, read from disk a window at a time."""
    total = ids.num_tokens if hasattr(ids, "num_tokens") else len(ids)
    per_stream = total // num_streams
    if per_stream < 2:
        raise ValueError(f"{total} tokens are too few for {num_streams} streams: use a smaller --batch_size.")
    if hasattr(ids, "num_tokens"):
        return Streams(ids, (num_streams, per_stream))
    return np.asarray(ids, np.int32)[: per_stream * num_streams].reshape(num_streams, per_stream)


class Streams:
    """A stream layout on disk: indexing it (`streams[rows, columns]`) reads that window alone."""

    def __init__(self, token_rows, shape):
        self.token_rows, self.shape = token_rows, shape

    def __getitem__(self, key):
        # A fresh map per window (zoo.data.cache.TokenRows.ids says why).
        layout = self.token_rows.ids()[: self.shape[0] * self.shape[1]].reshape(self.shape)
        return np.asarray(layout[key], np.int32)


def segments_per_pass(streams, segment_length, random_offset=False):
    """Segments of `segment_length` (plus the next token, the last label) a pass reads from each
    stream; with `random_offset`, at most one fewer, since a pass may start up to segment_length - 1 in."""
    spare = segment_length - 1 if random_offset else 0
    return (streams.shape[1] - 1 - spare) // segment_length


def pass_offset(seed, pass_index, segment_length):
    """Where in every stream pass `pass_index` starts: uniform in [0, segment_length), a function
    of (seed, pass_index) alone, so a resumed run reads the same segments."""
    seed = tf.stack([tf.cast(seed, tf.int64), tf.cast(pass_index, tf.int64)])
    return tf.random.stateless_uniform([], seed, maxval=segment_length, dtype=tf.int32)


def stream_dataset(streams, segment_length, replicas, first_replica, num_local, start_step, steps, offset_seed=None):
    """Per-replica batches for training: step s feeds segment s % per_pass of every stream.

    Replica r owns streams [r * b, (r + 1) * b) of the global batch (b = streams / replicas), so each replica's
    memory always belongs to its own streams. Elements come step-major, one per local replica, as
    `distribute_datasets_from_function` expects; `reset` is True on the first segment of every pass (the memory
    starts empty).

    With `offset_seed`, every pass starts at `pass_offset(offset_seed, pass, segment_length)` in all streams, so
    segment boundaries (and the memory each token sees) differ between passes: over many passes of a small corpus
    the model does not see the same segments again (the idea of AWD-LSTM's variable BPTT length). Within a pass the
    streams stay contiguous."""
    random_offset = offset_seed is not None
    per_pass = segments_per_pass(streams, segment_length, random_offset)
    if per_pass < 1:
        raise ValueError("The corpus is shorter than one segment per stream"
                         + (" and its random offset" if random_offset else "")
                         + ": lower --batch_size or --segment_length.")
    per_replica = streams.shape[0] // replicas

    def read(first_row, begin):  # the replica's rows, one segment (and the next token) from `begin`
        return streams[first_row : first_row + per_replica, begin : begin + segment_length + 1]

    def element(i):
        step, local = i // num_local, i % num_local
        replica = first_replica + tf.cast(local, tf.int32)
        segment = tf.cast(step % per_pass, tf.int32)
        begin = segment * segment_length
        if random_offset:
            begin += pass_offset(offset_seed, step // per_pass, segment_length)
        window = tf.numpy_function(read, [replica * per_replica, begin], tf.int32, stateful=False)
        window = tf.ensure_shape(window, [per_replica, segment_length + 1])
        return {"inputs": window[:, :-1], "labels": window[:, 1:], "reset": tf.equal(segment, 0)}

    dataset = tf.data.Dataset.range(start_step * num_local, steps * num_local).map(element)
    return dataset.prefetch(4)
