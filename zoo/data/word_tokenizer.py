"""Words as GloVe's vectors were made: one tokenization rule in TensorFlow ops, for training and serving.

GloVe 6B's words are lower-cased Stanford PTB tokens: clitics split off ("don't" -> "do", "n't";
"it's" -> "it", "'s"), punctuation a token of its own ("(hello)" -> "(", "hello", ")"; "end." -> "end",
".") while abbreviations and numbers stay whole ("u.s.", "mr.", "5.00", "3,000"). `split_words` follows
that with RE2 regular expressions (tf.strings and TF Text's regex_split) and a lookup table maps words to
ids, so a SavedModel turns raw text into the ids training saw, with no Python in between.

The vocabulary is the training text's most frequent words (ties in code-point order) after the special
tokens: ids 0-3 are <pad>, <unk>, <s> and </s>, as for the zoo's SentencePiece tokenizers
(zoo.data.tokenizer), then [MASK] when asked for (pretraining's). It is kept in the run folder as words.txt, one
word a line, id = line number - 1. A tokenizer whose vocabulary holds [MASK] reads "<mask>" (the zoo's
fill_mask marker) and "[MASK]" in a text as that token, as a pretraining SentencePiece model reads its <mask>.
"""

import collections
import itertools
import os

import tensorflow as tf
import tensorflow_text as tf_text

from zoo.core import disk

# Ids 0-3, as zoo.data.tokenizer's PAD_ID, UNK_ID, START_ID and END_ID (which imports this module, so these are
# not imported from it; tests/zoo/data/test_word_tokenizer.py checks they agree).
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
UNK_ID = SPECIALS.index("<unk>")
MASK = "[MASK]"
MASK_MARKS = r"<mask>|\[MASK\]"  # what a text writes for [MASK] (read so only where the vocabulary holds it)
# A private-use character stands in for a mask mark through split_words: NFKC and lower-casing keep it, and as no
# letter, digit or space it is a token of its own. The text's own are made spaces first.
MASK_STAND_IN = "\ue000"
WORDS_FILE = "words.txt"

LETTER = r"[\p{L}\p{N}\p{M}]"  # what words are made of: letters, digits and combining marks
SPACE = r"[\s\p{Z}\p{Cc}]"  # what separates words: Unicode spaces and control characters
# A quote opening a word is a token, not a clitic: "'sup'" -> "' sup'".
OPENING_QUOTE = (r"(^|[\s\p{Z}(\[{\"])(['’])", r"\1\2 ")
# A clitic ending a word is a token: "don't" -> "do n't" (and "can't" -> "ca n't"), "it's" -> "it 's".
CLITIC = (rf"({LETTER})(n['’]t|['’](?:s|re|ve|ll|d|m))([^\p{{L}}\p{{N}}\p{{M}}]|$)", r"\1 \2\3")
# PTB's abbreviations that keep their period (each more frequent in GloVe 6B than without it).
ABBREVIATIONS = ("mrs", "mr", "ms", "dr", "st", "jr", "sr", "inc", "co", "corp", "ltd", "vs", "etc", "jan",
                 "feb", "aug", "sept", "sep", "oct", "nov", "dec", "gov", "sen", "rep", "gen", "col", "lt",
                 "sgt", "capt", "prof", "mt", "ft", "ave", "dept")
TOKEN = "|".join([
    r"n['’]t|['’](?:s|re|ve|ll|d|m)",  # the clitics split off by CLITIC
    rf"(?:{'|'.join(ABBREVIATIONS)})\.",  # mr., inc.
    r"\p{L}(?:\.\p{L})+\.",  # initials: u.s., e.g., a.m. (not x.com)
    r"\p{N}+(?:[.,:/]\p{N}+)+",  # numbers: 5.00, 3,000, 3:30, 1/2
    rf"{LETTER}+(?:[-'’&/]{LETTER}+)*",  # words: well-known, o'neill, at&t, and/or, 1990s
    r"\.{2,}|[!?]+|-{2,}",  # runs: ..., !!, ?!, --
    rf"[^\s\p{{Z}}\p{{Cc}}]",  # any other character alone: $ ( ) . , " %
])


def split_words(texts):
    """Words of a batch of strings (any shape): a ragged tf.string tensor with one more dimension.

    Invalid UTF-8 becomes U+FFFD, text is NFKC-normalized (full-width letters, ligatures, "…" -> "...")
    and lower-cased; format characters (soft hyphens, zero-width joiners) are dropped."""
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
    texts = tf.strings.lower(tf_text.normalize_utf8(texts, "NFKC"), encoding="utf-8")
    texts = tf.strings.regex_replace(texts, r"\p{Cf}", "")
    texts = tf.strings.regex_replace(texts, *OPENING_QUOTE)
    texts = tf.strings.regex_replace(texts, *CLITIC)
    return tf_text.regex_split(texts, f"{SPACE}+|{TOKEN}", TOKEN)


def count_words(texts, batch_size=4096):
    """Each word's number of tokens in `texts` (any iterable of strings, read `batch_size` at a time, so a large
    corpus is never one tensor): a collections.Counter of str."""
    counts, texts = collections.Counter(), iter(texts)
    while batch := list(itertools.islice(texts, batch_size)):
        counts.update(split_words(tf.constant(batch, tf.string)).flat_values.numpy().tolist())
    return collections.Counter({word.decode("utf-8"): count for word, count in counts.items()})


def build_vocabulary(counts, vocab_size, mask=False):
    """The special tokens ([MASK] too when `mask`), then the most frequent words of `counts` (ties in
    code-point order), `vocab_size` in all at most."""
    specials = SPECIALS + ((MASK,) if mask else ())
    if vocab_size <= len(specials):
        raise ValueError(f"vocab_size={vocab_size} leaves no room for words beside the {len(specials)} special "
                         "tokens: raise it.")
    words = sorted((word for word in counts if word not in specials), key=lambda word: (-counts[word], word))
    return list(specials) + words[: vocab_size - len(specials)]


def vocabulary_problem(words):
    """What makes `words` unusable as a word vocabulary, in words; None when nothing does."""
    if tuple(words[: len(SPECIALS)]) != SPECIALS:
        return f"it does not start with the special tokens {', '.join(SPECIALS)}"
    first_line = {}
    for line, word in enumerate(words, start=1):
        if not word or word != word.strip() or "\n" in word:
            return f"line {line} holds {word!r}, which is not a word"
        if word in first_line:
            return f"it holds {word!r} twice, on lines {first_line[word]} and {line}"
        first_line[word] = line
    return None


def save_vocabulary(words, directory, name=WORDS_FILE):
    """Writes words.txt (or `name`: a translation run's source.words.txt ...) into `directory` atomically; a
    refused write is one zoo.core.disk.WriteError."""
    problem = vocabulary_problem(words)
    if problem:
        raise ValueError(f"This vocabulary cannot be saved: {problem}.")
    text = "".join(f"{word}\n" for word in words).encode("utf-8")
    return disk.write_atomically(os.path.join(directory, name), text, "the word vocabulary")


def holds_words(directory):
    return os.path.exists(os.path.join(directory, WORDS_FILE))


def load_word_tokenizer(directory, name=WORDS_FILE):
    """The WordTokenizer of the words.txt (or `name`) in `directory`; a file that no longer reads is one
    zoo.core.disk.DamagedFileError naming it."""
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: train a model with word vectors in this directory first.")
    with disk.reading(path, "the run's word vocabulary, whose ids the model was trained on",
                      (ValueError, UnicodeDecodeError)):
        with open(path, encoding="utf-8", newline="\n") as f:
            text = f.read()
        if not text.endswith("\n"):
            raise ValueError("its last line is cut short")
        words = text.split("\n")[:-1]
        problem = vocabulary_problem(words)
        if problem:
            raise ValueError(problem)
    return WordTokenizer(words)


class WordTokenizer(tf.Module):
    """Strings -> ragged int32 word ids (<unk> for words outside the vocabulary), in graph.

    The surface the preprocessors use of the zoo's SentencePiece tokenizers: `tokenize` (also the call),
    `detokenize`, `vocabulary_size`, `id_to_token`, `token_to_id`, `get_vocabulary`. A tf.Module, so an
    export that keeps it as an attribute saves its lookup table.

    Example:
    >>> tokenizer = WordTokenizer(build_vocabulary(count_words(["Don't panic."]), 10))
    >>> tokenizer.get_vocabulary()[4:]  # ['.', 'do', "n't", 'panic']
    """

    def __init__(self, vocabulary, name="word_tokenizer"):
        super().__init__(name=name)
        problem = vocabulary_problem(list(vocabulary))
        if problem:
            raise ValueError(f"Not a word vocabulary: {problem}.")
        self.vocabulary = tuple(vocabulary)
        self.mask_id = self.vocabulary.index(MASK) if MASK in self.vocabulary else None
        # Made outside any tf.function that first calls the tokenizer, so that every later one can use them.
        with tf.init_scope():
            self.words = tf.constant(self.vocabulary, tf.string)
            initializer = tf.lookup.KeyValueTensorInitializer(
                self.words, tf.range(len(self.vocabulary), dtype=tf.int32))
            self.table = tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)

    def tokenize(self, texts):
        """int32 ids of the words of `texts` (a string tensor, any shape): ragged, one more dimension."""
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank == 0:  # one string: its ids as a 1-D tensor
            return self.tokenize(texts[tf.newaxis])[0]
        if self.mask_id is not None:
            texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
            texts = tf.strings.regex_replace(texts, MASK_STAND_IN, " ")
            texts = tf.strings.regex_replace(texts, MASK_MARKS, f" {MASK_STAND_IN} ")
        words = split_words(texts)
        ids = self.table.lookup(words.flat_values)
        if self.mask_id is not None:
            ids = tf.where(words.flat_values == MASK_STAND_IN, self.mask_id, ids)
        return words.with_flat_values(ids)

    __call__ = tokenize

    def detokenize(self, ids):
        """The words of `ids` (ragged or dense, last axis the words) joined by spaces."""
        return tf.strings.reduce_join(tf.gather(self.words, ids), axis=-1, separator=" ")

    def vocabulary_size(self):
        return len(self.vocabulary)

    def get_vocabulary(self):
        return list(self.vocabulary)

    def id_to_token(self, id):
        if not 0 <= id < len(self.vocabulary):
            raise ValueError(f"id {id} is outside the vocabulary of {len(self.vocabulary)} words.")
        return self.vocabulary[id]

    def token_to_id(self, token):
        """`token`'s id, <unk>'s for a word outside the vocabulary."""
        return self.vocabulary.index(token) if token in self.vocabulary else UNK_ID
