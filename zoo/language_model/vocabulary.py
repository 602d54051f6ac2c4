"""Word and character vocabularies for language modelling, with in-graph tokenization made of core TensorFlow ops only
(string split or Unicode decode, then a hash-table lookup), so an export needs no TF Text.

Id 0 is padding and id 1 is <unk>; the tokens of the training split follow, most frequent first (ties alphabetical).
Word-level text ends every line with <eos>, as in the standard PTB / WikiText setups; character-level text keeps its
newlines as characters."""

import json
import os
import re

import numpy as np
import tensorflow as tf

from zoo.core import disk

PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"
LEVELS = ("word", "char", "byte")  # byte: Latin-1 characters, one per byte (enwik8)
VOCABULARY_FILE = "vocabulary.json"


# Spaces within a line, as tf.strings.split splits at them (not U+00A0 and other Unicode spaces); one set for
# `split_words` and the in-graph `tokenize`, in Python's and RE2's regex syntax alike.
LINE_SPACE = r" \t\r\v\f"
ASCII_SPACE = re.compile(f"[{LINE_SPACE}]+")


def split_words(text):
    """Word tokens of `text`: separated by ASCII whitespace (as the in-graph `tokenize` splits them), <eos>
    at the end of every line."""
    tokens = []
    for line in text.split("\n"):
        words = [word for word in ASCII_SPACE.split(line) if word]
        tokens.extend([*words, EOS] if words else [])
    return tokens


def split(text, level):
    return split_words(text) if level == "word" else list(text)


class Vocabulary:
    """Tokens <-> ids, in NumPy for corpora and in graph for serving."""

    unk_id = 1

    def __init__(self, tokens, level):
        if level not in LEVELS:
            raise ValueError(f"level={level!r} is not one of {LEVELS}.")
        if tokens[:2] != [PAD, UNK]:
            raise ValueError("A vocabulary starts with <pad>, <unk>.")
        self.tokens, self.level = list(tokens), level
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        self._table = None

    @classmethod
    def from_counts(cls, counts, level):
        """The vocabulary of token counts (a collections.Counter, e.g. gathered a line at a time)."""
        for special in (PAD, UNK):
            counts.pop(special, None)
        return cls([PAD, UNK] + sorted(counts, key=lambda token: (-counts[token], token)), level)

    def __len__(self):
        return len(self.tokens)

    @property
    def boundary_id(self):
        """What precedes the first token of a text: <eos> (word) or a newline (char), else <unk>."""
        return self.ids.get(EOS if self.level == "word" else "\n", self.unk_id)

    def encode(self, text):
        """int32 NumPy ids of a whole corpus text."""
        return np.asarray([self.ids.get(t, self.unk_id) for t in split(text, self.level)], np.int32)

    def save(self, directory):
        """Writes vocabulary.json atomically; a write the file system refuses is one zoo.core.disk.WriteError."""
        data = json.dumps({"level": self.level, "tokens": self.tokens}, ensure_ascii=False).encode("utf-8")
        return disk.write_atomically(os.path.join(directory, VOCABULARY_FILE), data, "the vocabulary")

    @classmethod
    def load(cls, directory):
        """The vocabulary `save` wrote into `directory`; a damaged file is one zoo.core.disk.DamagedFileError."""
        path = os.path.join(directory, VOCABULARY_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} does not exist: train a language model in this directory first.")
        with disk.reading(path, "the run's vocabulary, whose ids the model was trained on"):
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            return cls(data["tokens"], data["level"])

    # --- in graph ------------------------------------------------------------------------------------

    def resource(self):
        """The tf.lookup.StaticHashTable token -> id (<unk> for the rest), made once: what an export must track
        for `tokenize` to work."""
        if self._table is None:
            # Made outside any tf.function that first asks for it, so that the next one can use it too.
            with tf.init_scope():
                initializer = tf.lookup.KeyValueTensorInitializer(self._token_strings(),
                                                                  tf.range(len(self), dtype=tf.int32))
                self._table = tf.lookup.StaticHashTable(initializer, default_value=self.unk_id)
        return self._table

    def _token_strings(self):
        if self.level == "byte":
            return tf.constant([t.encode("latin-1") if len(t) == 1 else t.encode() for t in self.tokens])
        return tf.constant(self.tokens)

    def tokenize(self, texts):
        """tf.string (batch,) -> ragged int32 ids (batch, None), core ops only."""
        if self.level == "word":
            # As `split_words`: blank lines (any ASCII whitespace: RE2's \s lacks \v, and "\r\n" ends a
            # Windows line) add nothing, each run of line ends is one <eos>.
            texts = tf.strings.regex_replace(texts, f"^[{LINE_SPACE}\\n]*\\n", "")
            texts = tf.strings.regex_replace(texts, f"(?:[{LINE_SPACE}]*\\n)+", f" {EOS} ")
            tokens = tf.strings.split(texts)
        elif self.level == "char":
            tokens = tf.strings.unicode_split(texts, "UTF-8")
        else:
            tokens = tf.strings.bytes_split(texts)
        return tf.ragged.map_flat_values(self.resource().lookup, tokens)

    def detokenize(self, ids):
        """int ids (batch, n), dense or ragged -> tf.string (batch,); <eos> becomes a newline."""
        strings = tf.gather(self._token_strings(), ids)
        if isinstance(strings, tf.Tensor):
            strings = tf.RaggedTensor.from_tensor(strings)
        if self.level != "word":
            return tf.strings.reduce_join(strings, axis=-1)
        text = tf.strings.reduce_join(strings, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, f" ?{EOS} ?", "\n")
