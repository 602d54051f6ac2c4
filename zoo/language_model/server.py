"""The language model's TF Serving module: prompt in, continuation out, and scoring; core ops only."""

import math

import tensorflow as tf

from zoo.language_model import inference as lm_inference
from zoo.language_model.preprocessor import text_ids


def check_generation_settings(max_new_tokens, temperature, top_k, vocab_size, limit):
    """Refuses generation settings that cannot be served (`top_k` above the vocabulary would be
    clipped to it, an infinite `temperature` gives uniform noise), naming the setting and its range."""
    if not 0 < max_new_tokens <= limit:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be between 1 and {limit}.")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature={temperature} must be a finite number above 0 (1 samples from the model's "
                         "own distribution).")
    if not 0 <= top_k <= vocab_size:
        raise ValueError(f"top_k={top_k} must be between 0 and the {vocab_size} tokens of the vocabulary "
                         "(0 = the whole vocabulary).")


class LanguageModelServer(tf.Module):
    """Prompt in, continuation out (`serving_default`, `generate`), and `score`; core ops only.

    The defaults of `serving_default` are checked here, when the export is made; `generate`'s
    arguments are checked in the graph, on every call."""

    def __init__(self, model, vocabulary, max_new_tokens=100, temperature=1.0, top_k=40, limit=2048):
        super().__init__()
        check_generation_settings(max_new_tokens, temperature, top_k, len(vocabulary), limit)
        self.model, self.vocabulary, self.limit = model, vocabulary, limit
        self.defaults = (max_new_tokens, temperature, top_k)
        self.table = vocabulary.resource()  # tracked, so the export holds the tokenizer's table or model

    def _generate(self, prompt, max_new_tokens, temperature, top_k, seed):
        vocab_size, limit = len(self.vocabulary), self.limit
        argument_checks = [
            tf.debugging.assert_positive(max_new_tokens, message="max_new_tokens must be positive"),
            tf.debugging.assert_less_equal(max_new_tokens, limit, message=f"max_new_tokens must be <= {limit}"),
            tf.debugging.assert_positive(temperature, message="temperature must be positive"),
            tf.debugging.assert_less(temperature, math.inf, message="temperature must be finite"),
            tf.debugging.assert_non_negative(top_k, message="top_k must be non-negative (0 = the whole vocabulary)"),
            tf.debugging.assert_less_equal(
                top_k, vocab_size, message=f"top_k must be <= {vocab_size}, the vocabulary's size (0 = all of it)"),
        ]
        with tf.control_dependencies(argument_checks):  # checked before any of the search runs, on every call
            max_new_tokens = tf.identity(max_new_tokens)
        tokens = lm_inference.generate(self.model, text_ids(self.vocabulary, prompt), max_new_tokens, temperature,
                                       top_k, seed=tf.stack([seed, 0]))
        return {"continuation": self.vocabulary.detokenize(tokens)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="prompt")])
    def serve(self, prompt):
        max_new_tokens, temperature, top_k = self.defaults
        return self._generate(prompt, tf.constant(max_new_tokens), tf.constant(temperature), tf.constant(top_k), 0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="prompt"),
                                  tf.TensorSpec([], tf.int32, name="max_new_tokens"),
                                  tf.TensorSpec([], tf.float32, name="temperature"),
                                  tf.TensorSpec([], tf.int32, name="top_k"), tf.TensorSpec([], tf.int32, name="seed")])
    def generate(self, prompt, max_new_tokens, temperature, top_k, seed):
        return self._generate(prompt, max_new_tokens, temperature, top_k, seed)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def score(self, text):
        log_likelihood, count = lm_inference.score(self.model, text_ids(self.vocabulary, text))
        perplexity = tf.exp(-log_likelihood / tf.cast(tf.maximum(count, 1), tf.float32))
        return {"log_likelihood": log_likelihood, "tokens": count, "perplexity": perplexity}
