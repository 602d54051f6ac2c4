"""The translator's TF Serving module: source sentences in, translations out, tokenization and
search inside the graph."""

import tensorflow as tf

from zoo.translation.preprocessor import source_ids, text_from_ids
from zoo.translation.search import translate_ids


class TranslatorServer(tf.Module):
    """Source sentences in, translations out (`serve`, `translate_n_best`), with `decode_config`'s search."""

    def __init__(self, model, source_tokenizer, target_tokenizer, decode_config, jit_compile=False):
        super().__init__()
        vocab_size = model.config.target_vocab_size
        if decode_config.top_k > vocab_size:
            raise ValueError(f"top_k={decode_config.top_k} is more than the {vocab_size} tokens of the target "
                             f"vocabulary: use at most {vocab_size}, or 0 for the whole vocabulary.")
        self.model, self.decode_config = model, decode_config
        self.source_tokenizer, self.target_tokenizer = source_tokenizer, target_tokenizer
        self._search = tf.function(lambda ids: translate_ids(model, ids, decode_config), jit_compile=jit_compile)

    def translate_n_best(self, text):
        """(translations (batch, num_return) strings, scores (batch, num_return)); '' for empty input."""
        ids = source_ids(self.source_tokenizer, text, self.model.config.max_length).to_tensor(0)
        tokens, scores = self._search(ids)
        shape = tf.shape(tokens)
        flat = text_from_ids(self.target_tokenizer, tf.reshape(tokens, [-1, shape[2]]))
        translations = tf.reshape(flat, shape[:2])
        empty = tf.equal(tf.strings.strip(text), "")[:, None]
        return tf.where(empty, "", translations), tf.where(empty, 0.0, scores)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        translations, scores = self.translate_n_best(text)
        return {"translation": translations[:, 0], "score": scores[:, 0]}
