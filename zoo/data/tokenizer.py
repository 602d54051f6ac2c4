"""Subword tokenizers trained from a training split.

A SentencePiece unigram model (keras-hub's `compute_sentence_piece_proto` settings) is trained once per run and saved as
`tokenizer.model` beside the checkpoints; the same bytes go inside every export, so serving tokenizes exactly as
training did. Ids 0-3 are fixed: <pad>, <unk>, <s> (start, also the classifier's head token) and </s> (end).

A run fine-tuned from a published BERT-style checkpoint (`zoo.pretraining.published`) keeps that checkpoint's WordPiece
vocabulary instead, as `vocab.txt` and `tokenizer_config.json` (Hugging Face's names): its [PAD] is 0, its text is
framed as [CLS] ... [SEP].
"""

import bisect
import io
import itertools
import json
import os
import random
import re
import uuid

import keras_hub
import numpy as np
import sentencepiece
import tensorflow as tf
from tensorflow_text.python.ops import sentencepiece_tokenizer

from zoo.core import disk
from zoo.data import sources, word_tokenizer

PAD_ID, UNK_ID, START_ID, END_ID = 0, 1, 2, 3
TOKENIZER_FILE = "tokenizer.model"
VOCABULARY_FILE = "vocab.txt"  # a WordPiece vocabulary, one piece per line, id = line number
WORDPIECE_CONFIG_FILE = "tokenizer_config.json"
# keras-hub's BertTokenizer needs each of these pieces in a WordPiece vocabulary.
WORDPIECE_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# SentencePiece learns as good a vocabulary from a sample: this caps the time.
MAX_TRAINING_CHARACTERS = 10_000_000


def sample_texts(texts, max_characters, seed):
    """A random sample of `texts` with at most `max_characters` in all (all of them if fewer)."""
    if sum(map(len, texts)) <= max_characters:
        return list(texts)
    shuffled = random.Random(seed).sample(list(texts), len(texts))
    return shuffled[: bisect.bisect_right(list(itertools.accumulate(map(len, shuffled))), max_characters)]


# SentencePiece skips, without a word, training sentences longer than this many bytes (its default).
MAX_SENTENCE_BYTES = 4192


def training_pieces(texts, max_characters=MAX_SENTENCE_BYTES // 4):
    """`texts` with every text longer than `max_characters` cut at spaces into parts no longer
    than that (a character is at most 4 UTF-8 bytes), so that SentencePiece learns from all of it."""
    for text in texts:
        while len(text) > max_characters:
            cut = text.rfind(" ", 0, max_characters)
            cut = max_characters if cut <= 0 else cut
            yield text[:cut]
            text = text[cut:].lstrip(" ")
        if text:
            yield text


def check_vocab_size(name, size, user_symbols=(), byte_fallback=False, add_dummy_prefix=True, **settings):
    """Refuses a `size` (the field `name`) below the fewest pieces `train_tokenizer` makes a vocabulary of, with these
    settings, from any text: ids 0-3, the `user_symbols`, byte fallback's 256 bytes, one character and the word-start
    mark SentencePiece puts before each text (add_dummy_prefix). More characters need more pieces, which train_tokenizer
    names (found by trying, sentencepiece 0.2: below this it fails with an INTERNAL error or asks for more)."""
    least = 4 + len(user_symbols) + 256 * bool(byte_fallback) + 1 + bool(add_dummy_prefix)
    if size < least:
        parts = ["4 special ones", *user_symbols, *(["256 bytes"] if byte_fallback else []), "a character",
                 *(["the word-start mark"] if add_dummy_prefix else [])]
        raise ValueError(f"{name}={size} is too small for a SentencePiece vocabulary: it needs at least {least} pieces "
                         f"({', '.join(parts)}). Raise --vocab_size.")


def train_tokenizer(texts, vocabulary_size, lowercase=True, seed=0, user_symbols=(), **settings):
    """A SentencePiece unigram model (serialized proto bytes) learnt from `texts`.

    The settings of keras-hub's `compute_sentence_piece_proto` (ids 0-3 as above), plus
    `user_symbols`: pieces that are never split, numbered from 4 on (pretraining's <mask>);
    `settings`: SentencePiece trainer options that replace these (the subword LM's text kept as it is)."""
    check_vocab_size("vocab_size", vocabulary_size, user_symbols, **settings)
    texts = sample_texts(texts, MAX_TRAINING_CHARACTERS, seed)
    writer = io.BytesIO()
    options = dict(vocab_size=vocabulary_size, model_type="unigram", pad_id=PAD_ID, unk_id=UNK_ID, bos_id=START_ID,
                   eos_id=END_ID, normalization_rule_name="nmt_nfkc_cf" if lowercase else "nmt_nfkc",
                   user_defined_symbols=list(user_symbols), minloglevel=2)
    try:
        sentencepiece.SentencePieceTrainer.train(sentence_iterator=training_pieces(texts), model_writer=writer,
                                                 **{**options, **settings})
    except RuntimeError as error:
        least = re.search(r"smaller than required_chars\. \d+ vs (\d+)", str(error))
        if least is not None:  # byte fallback's 256 byte pieces, the text's characters and the special pieces
            raise ValueError(f"vocab_size={vocabulary_size} is too small for this training text: the vocabulary "
                             f"needs at least {least.group(1)} pieces for its characters (and bytes). Raise "
                             "--vocab_size.") from None
        limit = re.search(r"<= (\d+)", str(error))
        if limit is None:
            raise ValueError(f"SentencePiece could not learn a vocabulary from this text: {error}") from None
        raise ValueError(f"vocab_size={vocabulary_size} is too large for this training text: SentencePiece can make "
                         f"at most {limit.group(1)} pieces from it. Lower --vocab_size.") from None
    return writer.getvalue()


def save_tokenizer(proto, directory, name=TOKENIZER_FILE):
    """Writes the model atomically: a crash never leaves half a tokenizer file, and a write the
    file system refuses (a full disk ...) is one zoo.core.disk.WriteError."""
    return disk.write_atomically(os.path.join(directory, name), proto, "the tokenizer")


def wordpiece_problem(vocabulary):
    """What makes `vocabulary` (a list of pieces, id = line number - 1) unusable by `wordpiece_tokenizer`,
    in words ("it holds 'the' twice, on lines 23 and 40"); None when nothing does. TF Text refuses a
    piece written twice, and keras-hub a vocabulary without BERT's special pieces, without naming the file."""
    if not vocabulary:
        return "it is empty"
    first_line = {}
    for line, piece in enumerate(vocabulary, start=1):
        if piece in first_line:
            return f"it holds {piece!r} twice, on lines {first_line[piece]} and {line}"
        first_line[piece] = line
    missing = [piece for piece in WORDPIECE_SPECIALS if piece not in first_line]
    if missing:
        return f"it lacks {', '.join(missing)}, which BERT's tokenizer needs"
    return None


def wordpiece_tokenizer(vocabulary, lowercase, strip_accents=None):
    """keras-hub's BertTokenizer (BERT's basic tokenization, then WordPiece, in TF Text ops) over `vocabulary` (a list
    of pieces, which `wordpiece_problem` finds usable). strip_accents=None follows `lowercase`, as in BERT. Special
    pieces written in a text ("[MASK]") are those pieces, as Hugging Face's tokenizers read them."""
    return keras_hub.models.BertTokenizer(vocabulary=list(vocabulary), lowercase=lowercase,
                                          strip_accents=lowercase if strip_accents is None else strip_accents,
                                          special_tokens_in_strings=True)


def save_wordpiece(vocabulary, lowercase, strip_accents, directory):
    """Writes vocab.txt and tokenizer_config.json into `directory`, each atomically."""
    text = "".join(f"{piece}\n" for piece in vocabulary)
    save_tokenizer(text.encode("utf-8"), directory, VOCABULARY_FILE)
    settings = {"do_lower_case": lowercase, "strip_accents": strip_accents}
    save_tokenizer(json.dumps(settings).encode("utf-8"), directory, WORDPIECE_CONFIG_FILE)


def files_key(directory, names=(TOKENIZER_FILE, VOCABULARY_FILE, WORDPIECE_CONFIG_FILE, word_tokenizer.WORDS_FILE)):
    """The contents of the tokenizer files a run folder holds (`names`, each once; a translation run's
    source.model and target.model): the tokenizer's part of a token-cache key."""
    return sources.folder_files_digest(directory, list(dict.fromkeys(names)))


def holds_wordpiece(directory):
    """Whether `directory` is a run that keeps a WordPiece vocabulary (either of its two files is there)."""
    return any(os.path.exists(os.path.join(directory, name)) for name in (VOCABULARY_FILE, WORDPIECE_CONFIG_FILE))


def load_wordpiece(directory):
    """The tokenizer `save_wordpiece` wrote into `directory`; a file of it that is missing or no longer
    reads is one zoo.core.disk.DamagedFileError naming it."""
    role = "the run's WordPiece vocabulary, whose ids the model was trained on"
    path = os.path.join(directory, VOCABULARY_FILE)
    if not os.path.exists(path):
        raise disk.DamagedFileError(f"{path} is missing: it is {role} ({WORDPIECE_CONFIG_FILE} is there). Restore it "
                                    "from a backup or copy the vocab.txt of the checkpoint or run this one started "
                                    "from (its --init_from), or train again in a new --model_dir.")
    with disk.reading(path, role), open(path, encoding="utf-8") as f:
        vocabulary = f.read().split("\n")[:-1]
        problem = wordpiece_problem(vocabulary)
        if problem:
            raise ValueError(problem)
    path = os.path.join(directory, WORDPIECE_CONFIG_FILE)
    with disk.reading(path, "the run's WordPiece settings"), open(path, encoding="utf-8") as f:
        settings = json.load(f)
        lowercase, strip_accents = settings["do_lower_case"], settings.get("strip_accents")
    return wordpiece_tokenizer(vocabulary, lowercase, strip_accents)


def framing(tokenizer):
    """(start_id, end_id) a classifier puts around each text: [CLS] and [SEP] for a WordPiece
    tokenizer, <s> and None (no end token) for the zoo's SentencePiece ones."""
    if isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
        return tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    return START_ID, None


def load_tokenizer(source, name=TOKENIZER_FILE):
    """A keras-hub SentencePieceTokenizer from proto bytes or a run directory's `name` file;
    for a run directory that holds a WordPiece vocabulary (`save_wordpiece`), its BertTokenizer; for a word
    vocabulary (words.txt, or `name` ending so), zoo.data.word_tokenizer's WordTokenizer."""
    folder = isinstance(source, (str, os.PathLike))
    if folder and name == TOKENIZER_FILE and holds_wordpiece(source):
        return load_wordpiece(source)
    if folder and name == TOKENIZER_FILE and word_tokenizer.holds_words(source):
        return word_tokenizer.load_word_tokenizer(source)
    if name.endswith(word_tokenizer.WORDS_FILE):  # a word vocabulary by name (a translation run's side)
        return word_tokenizer.load_word_tokenizer(source, name)
    if not folder:
        return _sentence_piece(source, name)
    path = os.path.join(source, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: train a model in this directory first.")
    with open(path, "rb") as f:
        proto = f.read()
    # TF Text reads the model when the tokenizer is made: a damaged file fails there, deep in SentencePiece.
    with disk.reading(path, "the run's tokenizer, whose ids the model was trained on", (tf.errors.OpError,),
                      "it is not a SentencePiece model"):
        return _sentence_piece(proto, name)


def _sentence_piece(proto, name):
    tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(proto=proto)
    tokenizer._sentence_piece._model_resource = _ModelResource(proto, name)  # keras-hub keeps TF Text's here
    return tokenizer


class _ModelResource(sentencepiece_tokenizer._SentencepieceModelResource):
    """The TF Text resource that holds the SentencePiece model, owned by the tokenizer that made it.

    TF Text's own belongs to the kernel that creates it, which `tf.random.set_seed` (every training run) drops with
    TensorFlow's eager caches: a tokenizer loaded before a training run in the same process was lost
    (`SentencepieceResource ... does not exist`). Under a name of its own, as TensorFlow's lookup tables are, it lives
    as long as the tokenizer; in an export, whose function keeps its kernel, it is TF Text's. Named after its file
    (`name`), not TF Text's one default name: a loaded SavedModel shares a resource between creators of one name, so an
    export with two tokenizers would decode the target language with the source's model (test_translate.py checks)."""

    def __init__(self, model, name):
        self._shared_name = f"zoo_sentencepiece_{uuid.uuid4().hex}"
        super().__init__(model, name)

    def _create_resource(self):
        if not tf.executing_eagerly():
            return super()._create_resource()
        return sentencepiece_tokenizer.gen_sentencepiece_tokenizer.sentencepiece_op(
            model=self._model, shared_name=self._shared_name)

    def _destroy_resource(self):
        handle = self._resource_handle
        if tf.executing_eagerly() and handle is not None and not tf.is_symbolic_tensor(handle):
            tf.raw_ops.DestroyResourceOp(resource=handle, ignore_lookup_error=True)


def tokenize(tokenizer, texts, batch_size=2048):
    """Token ids of every text, as a list of int32 NumPy arrays (no special tokens)."""
    return rows_of(tokenizer.tokenize, texts, batch_size)


def rows_of(ids, texts, batch_size=2048):
    """`ids` (a batch of strings -> ragged ids, graph code) over every text, in tf.data batches: a list
    of int32 NumPy arrays, in the order of `texts`. The preprocessors make training's rows with it
    from the same function their exports run on each request."""
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string)).batch(batch_size)
    dataset = dataset.map(ids, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    rows = []
    for ragged in dataset:
        values, lengths = ragged.flat_values.numpy(), ragged.row_lengths().numpy()
        rows.extend(np.split(values.astype(np.int32), np.cumsum(lengths)[:-1]))
    return rows
