"""References for the zoo's decoding and evaluation: the same searches and scores recomputing what
the zoo keeps in a cache or a memory. benchmarks.translate and benchmarks.lm time the zoo's against them;
the translation and language-model tests (tests/zoo/*/test_model.py) check that the zoo's give the same results."""

import numpy as np
import tensorflow as tf

from zoo.core import decoding
from zoo.translation import search as translation_search
from zoo.language_model.inference import compiled
from zoo.language_model.preprocessor import segments_per_pass
from zoo.training.losses import smoothed_cross_entropy

# --- translation --------------------------------------------------------------------------------------


def recomputing_decoder(model, source_ids, steps, beams=1):
    """(step function, initial state) that run the decoder over the whole prefix at every step
    (what decoders without a cache do); the state is the prefix (batch, steps)."""
    encoder_output, source_mask = model.encode(source_ids)
    if beams > 1:
        encoder_output, source_mask = decoding.tile_beams((encoder_output, source_mask), beams)

    def step(token_ids, index, prefix):
        prefix = tf.where(tf.equal(tf.range(steps), index)[None, :], token_ids[:, None], prefix)
        logits = model.decode(prefix, encoder_output, source_mask)
        return translation_search.never_generate(tf.gather(logits, index, axis=1)), prefix

    return step, tf.zeros([tf.shape(source_ids)[0], steps], tf.int32)


def translate_ids(model, source_ids, decode_config, cached=True, always_beam=False):
    """`zoo.translation.search.translate_ids` with the comparisons' options: `cached=False`
    recomputes the decoder over the whole prefix at every step; `always_beam` runs beam search
    for beam size 1 too, where the zoo runs the greedy loop (the same result)."""
    beams = decode_config.beam_size
    steps = translation_search.search_steps(model, source_ids, decode_config)
    decoder = translation_search.cached_decoder if cached else recomputing_decoder
    step, state = decoder(model, source_ids, steps, beams)
    batch = tf.shape(source_ids)[0]
    return translation_search.run_search(step, state, batch, steps, decode_config, beam=beams > 1 or always_beam)


# --- language model -----------------------------------------------------------------------------------


def generate_recomputing(model, prompt_ids, max_new_tokens):
    """Greedy continuation of one dense prompt batch that recomputes the whole context (no
    memory, no cache) for every new token: the reference `zoo.language_model.inference.generate` is compared with."""
    ids = tf.convert_to_tensor(prompt_ids, tf.int32)
    # One graph for every length (as a compiled baseline would be), not one trace per length.
    forward = compiled(model, "forward", lambda m, x: m(x)[0], input_signature=[tf.TensorSpec([None, None], tf.int32)])
    out = []
    for _ in range(max_new_tokens):
        logits = forward(ids)
        token = tf.argmax(logits[:, -1], axis=-1, output_type=tf.int32)
        out.append(token)
        ids = tf.concat([ids, token[:, None]], axis=1)
    return tf.stack(out, axis=1)


def evaluate_sliding_window(model, streams, segment_length, context, progress=None):
    """The vanilla evaluation: each segment scored after recomputing `context` - segment_length
    earlier tokens from scratch (no memory). Same NLL bookkeeping as `zoo.language_model.inference.evaluate_streams`.
    segment_length=1 is Al-Rfou et al.'s evaluation (one prediction per window). Give it a model
    with memory_length 0: a memory would only add masked positions to every window."""
    keys = model.position_keys(context)  # every window has the same length
    step = compiled(model, ("window_nll", segment_length), lambda *args: _window_nll(*args, segment_length))
    history = context - segment_length
    total, count = 0.0, 0
    per_pass = segments_per_pass(streams, segment_length)
    for s in range(per_pass):
        begin = s * segment_length
        first = max(0, begin - history)
        window = streams[:, first : begin + segment_length + 1]
        pad = history - (begin - first)
        inputs = np.pad(window[:, :-1], [[0, 0], [pad, 0]])
        labels = np.pad(window[:, 1:], [[0, 0], [pad, 0]])
        is_token = np.pad(np.ones_like(window[:, :-1], bool), [[0, 0], [pad, 0]])
        total += float(step(inputs, labels, is_token, keys))
        count += streams.shape[0] * segment_length
        if progress:
            progress.update(s + 1)
    return total, count


def _window_nll(model, inputs, labels, is_token, position_keys, segment_length):
    logits, _ = model(inputs, is_token=is_token, position_keys=position_keys, logits_to_keep=segment_length)
    losses = smoothed_cross_entropy(labels[:, -segment_length:], logits)
    return tf.reduce_sum(losses)
