"""Translating source ids: greedy search, sampling or beam search over the decoder's caches.

Decoding starts from <s> and runs one token per step with each decoder layer's key/value cache; the encoder output
and its cross-attention keys/values are computed once per sentence and shared by all its beams."""

import dataclasses
import math

import tensorflow as tf

from zoo.core import checks, decoding
from zoo.data.tokenizer import END_ID, PAD_ID, START_ID


@dataclasses.dataclass(frozen=True)
class DecodeConfig:
    """How to search: beam_size 1 is greedy; top_k > 0 or top_p < 1 samples instead."""

    beam_size: int = 5  # hypotheses kept; 1: greedy search
    length_penalty: float = 0.6  # GNMT's alpha of beam search; 0: none
    num_return: int = 1  # translations returned per sentence, best first (--mode=translate's n-best)
    top_k: int = 0  # sample from the k most likely tokens instead of searching (needs beam_size 1)
    top_p: float = 1.0  # sample from the smallest set of tokens reaching this probability (needs beam_size 1)
    temperature: float = 1.0  # sampling's
    seed: int = 0  # sampling's; follows train.seed in a training run unless set
    max_extra_length: int = 50  # a translation has at most source length + this many tokens

    def __post_init__(self):
        checks.non_negative(self, "max_extra_length")
        checks.seed(self)
        if self.beam_size < 1:
            raise ValueError(f"beam_size={self.beam_size}: it must be at least 1 (1 = greedy search).")
        if not 1 <= self.num_return <= self.beam_size:
            raise ValueError(f"num_return={self.num_return} must be between 1 and beam_size={self.beam_size}.")
        if self.top_k < 0 or not 0.0 < self.top_p <= 1.0 or self.temperature <= 0:
            raise ValueError(f"top_k must be >= 0, top_p in (0, 1] and temperature > 0 (top_k={self.top_k}, "
                             f"top_p={self.top_p}, temperature={self.temperature}).")
        if not 0.0 <= self.length_penalty < math.inf:
            raise ValueError(f"length_penalty={self.length_penalty} must be a finite number, 0 or more (GNMT's alpha, "
                             "e.g. 0.6; 0 = none).")
        if not math.isfinite(self.temperature):
            raise ValueError(f"temperature={self.temperature} must be a finite number above 0 (1 samples from the "
                             "model's own distribution).")
        if self.sampling and self.beam_size > 1:
            raise ValueError("Sampling (top_k / top_p / temperature) draws one translation per sentence: use "
                             "beam_size=1.")

    @property
    def sampling(self):
        return self.top_k > 0 or self.top_p < 1.0 or self.temperature != 1.0


def never_generate(logits):
    """Padding and <s> are never a next token."""
    banned = tf.one_hot([PAD_ID, START_ID], tf.shape(logits)[-1], on_value=True, off_value=False)
    return tf.where(tf.reduce_any(banned, axis=0), decoding.NEG_INF, logits)


def search_steps(model, source_ids, decode_config):
    """The most tokens a translation of this batch may have: the source length plus max_extra_length, at most the
    model's max_length."""
    return tf.minimum(model.config.max_length, tf.shape(source_ids)[1] + decode_config.max_extra_length)


def cached_decoder(model, source_ids, steps, beams=1):
    """(step function, initial state) of `zoo.core.decoding` for the decoder over its key/value caches, with what the
    step closes over repeated for `beams` hypotheses per sentence."""
    encoder_output, source_mask = model.encode(source_ids)
    cross_caches = model.cross_attention_caches(encoder_output)  # once per sentence, then shared by its beams
    if beams > 1:
        source_mask, cross_caches = decoding.tile_beams((source_mask, cross_caches), beams)

    def step(token_ids, index, caches):
        logits, caches = model.decode_step(token_ids, index, caches, cross_caches, source_mask)
        return never_generate(logits), caches

    return step, model.empty_caches(tf.shape(source_ids)[0], steps)


def run_search(step, state, batch, steps, decode_config, beam):
    """`decode_config`'s search from <s>: beam search when `beam`, else sampling or greedy search.
    Returns (tokens (batch, num_return, steps) int32, scores (batch, num_return) float32)."""
    c = decode_config
    start = tf.fill([batch], START_ID)
    if beam:
        return decoding.beam_search(step, state, start, steps, END_ID, c.beam_size, c.length_penalty, c.num_return)
    if c.sampling:
        seed = (c.seed, 0)
        tokens, scores = decoding.sample(step, state, start, steps, END_ID, c.top_k, c.top_p, c.temperature, seed)
    else:
        tokens, scores = decoding.greedy(step, state, start, steps, END_ID)
    return tokens[:, None], scores[:, None]


def translate_ids(model, source_ids, decode_config):
    """Translations of a padded batch of source ids, in graph: (tokens (batch, num_return, steps) int32, scores
    (batch, num_return) float32), summed log-probabilities (divided by the length penalty for beam search). Beam
    size 1 runs the greedy loop (or samples)."""
    beams = decode_config.beam_size
    steps = search_steps(model, source_ids, decode_config)
    step, state = cached_decoder(model, source_ids, steps, beams)
    return run_search(step, state, tf.shape(source_ids)[0], steps, decode_config, beam=beams > 1)
