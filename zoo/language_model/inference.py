"""A trained Transformer-XL reading text with its memory: evaluation over the stream layout, scoring of texts and
generation, each carrying the memory from segment to segment instead of recomputing the context."""

import weakref

import tensorflow as tf

from zoo.core import decoding
from zoo.language_model.preprocessor import segments_per_pass
from zoo.training.losses import smoothed_cross_entropy


_COMPILED = weakref.WeakKeyDictionary()  # model -> {key: tf.function}


def compiled(model, key, function, **options):
    """`tf.function` of `function(model, *args)` over `*args`, made once per (model, key): evaluating or generating
    again with the same model does not trace again. A key names one function and its options (a later call with the
    same key gets the first one). It holds the model weakly, so the cache entry goes with the model."""
    functions = _COMPILED.setdefault(model, {})
    if key not in functions:
        owner = weakref.ref(model)

        def call(*args):
            if owner() is None:
                raise RuntimeError(f"The model of compiled function {key!r} no longer exists.")
            return function(owner(), *args)

        functions[key] = tf.function(call, **options)
    return functions[key]


def evaluate_streams(model, streams, segment_length, progress=None, use_memory=True):
    """Summed negative log-likelihood (nats) and token count over the stream layout, carrying the memory from segment
    to segment (or, with use_memory=False, starting each segment empty). The memory is kept as each layer's keys and
    values (`model.step`): a segment projects only its own positions, and the position keys are computed once."""
    step = compiled(model, "nll", _nll)
    keys = model.position_keys(segment_length)  # every segment has the same key length
    empty = model.keys_values_state(model.initial_state(streams.shape[0]))
    state = empty
    total, count = 0.0, 0
    per_pass = segments_per_pass(streams, segment_length)
    for s in range(per_pass):
        window = streams[:, s * segment_length : (s + 1) * segment_length + 1]
        if not use_memory:
            state = empty
        nll, state = step(window[:, :-1], window[:, 1:], state, keys)
        total, count = total + float(nll), count + window[:, 1:].size
        if progress:
            progress.update(s + 1)
    return total, count


def _nll(model, inputs, labels, state, position_keys):
    logits, state = model.step(inputs, state, position_keys=position_keys)
    return tf.reduce_sum(smoothed_cross_entropy(labels, logits)), state


def left_padded(ragged, multiple):
    """A ragged (batch, None) int tensor as dense rows aligned to the right, width a multiple of
    `multiple` (at least one); with the mask of the real positions."""
    lengths = tf.cast(ragged.row_lengths(), tf.int32)
    width = tf.maximum((tf.reduce_max(lengths) + multiple - 1) // multiple * multiple, multiple)
    dense = ragged.to_tensor(0)
    # Reverse each row's real tokens, then the whole row: the tokens end up at the right, in order.
    aligned = tf.reverse(tf.reverse_sequence(dense, lengths, seq_axis=1, batch_axis=0), axis=[1])
    tokens = tf.pad(aligned, [[0, 0], [width - tf.shape(dense)[1], 0]])
    is_token = tf.range(width)[None, :] >= (width - lengths)[:, None]
    return tokens, is_token


def read_context(model, token_ids, is_token):
    """Feeds left-padded context tokens (batch, n * segment_length) through the model one
    segment at a time, as in training; returns the state and every position's logits."""
    c = model.config
    batch, count = tf.shape(token_ids)[0], tf.shape(token_ids)[1] // c.segment_length
    logits = tf.TensorArray(tf.float32, size=count, infer_shape=False)
    keys = model.position_keys(c.segment_length)

    def body(i, state, logits):
        begin = i * c.segment_length
        segment_logits, state = model(token_ids[:, begin : begin + c.segment_length], state,
                                      is_token[:, begin : begin + c.segment_length], position_keys=keys)
        return i + 1, state, logits.write(i, segment_logits)

    start = (tf.constant(0), model.initial_state(batch), logits)
    _, state, logits = tf.while_loop(lambda i, *_: i < count, body, start)
    stacked = tf.transpose(logits.stack(), [1, 0, 2, 3])  # (batch, count, T, vocab)
    return state, tf.reshape(stacked, [batch, count * c.segment_length, -1])


def generate(model, prompts, max_new_tokens, temperature=1.0, top_k=0, top_p=1.0, greedy=False, seed=(0, 0)):
    """Continuations of ragged prompt ids (batch, None), each at least one token, in graph.

    The prompt but its last token is read segment by segment into the memory; then each new token is one model step
    over the cached states. Returns int32 (batch, max_new_tokens)."""
    last = tf.gather(prompts.values, prompts.row_limits() - 1)
    context, is_token = left_padded(prompts[:, :-1], model.config.segment_length)
    state, _ = read_context(model, context, is_token)
    # Each step attends from one token over a fixed-size memory: the position keys are computed
    # once, and the memory is kept as its keys and values (each step projects only its token).
    state = model.keys_values_state(state)
    keys = model.position_keys(1)

    def step(token_ids, index, state):
        del index  # positions are relative: the memory is all the model needs
        logits, state = model.step(token_ids[:, None], state, position_keys=keys)
        return logits[:, 0], state

    if greedy:  # (tokens, scores): the tokens
        return decoding.greedy(step, state, last, max_new_tokens, end_id=-1)[0]
    return decoding.sample(step, state, last, max_new_tokens, -1, top_k, top_p, temperature, seed)[0]


def score(model, token_ids):
    """Per-text summed log-likelihood (nats) of ragged ids (batch, None) (`text_ids`: a boundary
    token, then the text) and the count of tokens scored, read segment by segment with memory."""
    tokens, is_token = left_padded(token_ids, model.config.segment_length)
    tokens, is_token = tf.pad(tokens, [[0, 0], [1, 0]]), tf.pad(is_token, [[0, 0], [1, 0]])
    scored = tf.logical_and(is_token[:, :-1], is_token[:, 1:])  # a real token predicting a real token
    _, logits = read_context(model, tokens[:, :-1], is_token[:, :-1])
    log_probs = -smoothed_cross_entropy(tokens[:, 1:], logits)
    log_likelihood = tf.reduce_sum(tf.where(scored, log_probs, 0.0), axis=1)
    return log_likelihood, tf.reduce_sum(tf.cast(scored, tf.int32), axis=1)
