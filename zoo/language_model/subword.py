"""A subword vocabulary for language modelling (`--level=subword`): a SentencePiece unigram model trained
on the training text, so a user's text needs no pre-tokenization and has no out-of-vocabulary words.

The text is kept as it is (KEEP_TEXT): no Unicode normalization, every space kept (a run of them may be one
piece: code's indentation), no space added before a line, and a character the vocabulary lacks written as
its UTF-8 bytes (byte fallback, 256 pieces), so ids become the very same text again. Runs made before
(zoo.data.tokenizer's NFKC settings, case kept) keep their model, whose file carries its own normalization.

A line end is the piece <n> (id 4), as <eos> ends a word-level line: the text's "\n" are written as <n>
before SentencePiece sees them (an NFKC model would make them spaces) and <n> is a newline again when
ids become text. It has the interface of zoo.language_model.vocabulary.Vocabulary."""

import os

import numpy as np
import tensorflow as tf

from zoo.data import tokenizer as sentence_piece

NEWLINE = "<n>"
# SentencePiece trainer options that keep the text byte for byte (new runs).
KEEP_TEXT = dict(normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=False,
                 split_by_whitespace=True, allow_whitespace_only_pieces=True, byte_fallback=True)


def check_vocab_size(name, size):
    """Refuses a `size` (the field `name`) too small for a vocabulary of these settings (`SubwordVocabulary.build`)."""
    sentence_piece.check_vocab_size(name, size, (NEWLINE,), **KEEP_TEXT)


class SubwordVocabulary:
    """Pieces <-> ids, in graph (TF Text's SentencePiece ops, so an export imports tensorflow_text)."""

    level = "subword"
    unk_id = sentence_piece.UNK_ID

    def __init__(self, proto):
        self.proto = proto
        self.tokenizer = sentence_piece.load_tokenizer(proto)
        self.boundary_id = self.tokenizer.token_to_id(NEWLINE)  # what precedes the first token of a text: a line end
        self.processor = None  # the SentencePiece library's own, made when first used
        # An earlier run's model adds a word-start mark before each line: its space after <n> is not the text's.
        self.line_start = NEWLINE + " ?" if adds_space_before_text(proto) else NEWLINE

    @classmethod
    def build(cls, lines, vocab_size, seed=0):
        """Trained on `lines` (strings, newlines or not), a sample of the training text."""
        return cls(sentence_piece.train_tokenizer([line.rstrip("\n") for line in lines], vocab_size, lowercase=False,
                                                  seed=seed, user_symbols=(NEWLINE,), **KEEP_TEXT))

    def __len__(self):
        return self.tokenizer.vocabulary_size()

    def save(self, directory):
        return sentence_piece.save_tokenizer(self.proto, directory)

    @classmethod
    def load(cls, directory):
        path = os.path.join(directory, sentence_piece.TOKENIZER_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} does not exist: the run's subword vocabulary is missing.")
        with open(path, "rb") as f:
            return cls(f.read())

    def resource(self):
        """What an export must track for `tokenize` to work: the SentencePiece tokenizer."""
        return self.tokenizer

    def tokenize(self, texts):
        """tf.string (batch,) -> ragged int32 ids (batch, None)."""
        texts = tf.strings.regex_replace(texts, "\n", NEWLINE)
        ids = self.tokenizer.tokenize(texts)
        if isinstance(ids, list):  # keras-hub's tokenizers answer eager calls with Python lists
            ids = tf.ragged.constant(ids, dtype=tf.int32, ragged_rank=1)
        return tf.cast(ids, tf.int32)

    def encode_lines(self, texts):
        """Lists of ids of a list of strings (or bytes), by the SentencePiece library itself: the ids
        `tokenize` gives in graph (tests/zoo/language_model/test_subword.py checks), at the library's speed,
        for tokenizing a corpus into the token cache."""
        if self.processor is None:
            import sentencepiece

            self.processor = sentencepiece.SentencePieceProcessor(model_proto=self.proto)
        texts = [(t.decode("utf-8") if isinstance(t, bytes) else t).replace("\n", NEWLINE) for t in texts]
        return self.processor.encode(texts)

    def encode(self, text):
        """int32 NumPy ids of a whole text."""
        return np.asarray(self.tokenize(tf.constant([text]))[0].numpy(), np.int32)

    def detokenize(self, ids):
        """int ids (batch, n), dense or ragged -> tf.string (batch,)."""
        return tf.strings.regex_replace(self.tokenizer.detokenize(ids), self.line_start, "\n")


def adds_space_before_text(proto):
    """Whether the SentencePiece model `proto` (bytes) adds a space before every text (its add_dummy_prefix)."""
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(proto)
    return model.normalizer_spec.add_dummy_prefix
