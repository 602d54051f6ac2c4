"""What zoo.load's models are given, checked before TensorFlow sees it, and long lists answered a batch at a time: each
error names the argument (and the text's position), and memory grows with the batch, not the list."""

import math
import numbers
from collections.abc import Iterable, Mapping, Set

BATCH_SIZE = 32  # texts per call of a signature, as Keras's Model.predict
INT32 = (-(2**31), 2**31 - 1)  # the signatures' scalar arguments are int32


def in_batches(answer, texts, batch_size, name="texts", by_length=True, text_pairs=None):
    """`answer(batch)` (a list of at most `batch_size` UTF-8 byte strings -> one answer per text) over all
    of `texts`, checked first; the answers are a list in the order of `texts`.

    by_length: the texts are sorted by length before they are cut into batches, so a batch pads its texts
    to about their own length (a batch of one long text and 31 short ones costs 32 long ones). Off where a
    text's answer depends on its row in the batch (sampling draws per row).

    text_pairs: a pair model's second texts, checked as `texts` are and as many; `answer` then takes (text, text
    pair) tuples."""
    batch_size = whole("batch_size", batch_size, low=1)
    texts = utf8_texts(texts, name)
    if text_pairs is not None:
        seconds = utf8_texts(text_pairs, "text_pairs")
        if len(seconds) != len(texts):
            raise ValueError(f"text_pairs holds {len(seconds)} texts and {name} {len(texts)}: give one second text "
                             f"for each of {name}.")
        texts = list(zip(texts, seconds))
    size = (lambda i: sum(map(len, texts[i]))) if text_pairs is not None else (lambda i: len(texts[i]))
    order = sorted(range(len(texts)), key=size) if by_length else range(len(texts))
    answers = [None] * len(texts)
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        for row, one in zip(rows, answer([texts[i] for i in rows])):
            answers[row] = one
    return answers


def utf8_texts(texts, name="texts"):
    """`texts` (a list, tuple, NumPy array or any ordered collection of strings) as a list of UTF-8 bytes.
    One string alone is refused: the answers are a list, one per text, and a string would otherwise be read
    as one text per character."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of strings, e.g. [{shown(texts)}], not one string: the answers "
                        "are a list, one per text.")
    if isinstance(texts, (Mapping, Set)) or not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of strings, not {shown(texts)} ({type(texts).__name__}).")
    return [utf8(text, f"{name}[{i}]") for i, text in enumerate(texts)]


def utf8(text, where):
    """One text as UTF-8 bytes: a str, or bytes that are UTF-8."""
    if isinstance(text, str):
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as error:  # a lone surrogate, e.g. from bytes decoded with errors="surrogateescape"
            raise ValueError(f"{where} cannot be written as UTF-8 ({error.reason} at character {error.start}): "
                             "give text that is valid Unicode.") from None
    if isinstance(text, bytes):
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{where} is bytes that are not UTF-8 ({error.reason} at byte {error.start}): decode "
                             "them with their own encoding first, e.g. data.decode('latin-1').") from None
        return text
    raise TypeError(f"{where} is {shown(text)} ({type(text).__name__}): give strings (str, or UTF-8 bytes).")


def whole(name, value, low, high=INT32[1]):
    """`value` as an int in [low, high], else a TypeError or ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}={shown(value)} must be a whole number (int), not {type(value).__name__}.")
    if not low <= value <= high:
        raise ValueError(f"{name}={value} must be between {low} and {high}.")
    return int(value)


def finite(name, value, low, above=False, meaning=""):
    """`value` as a float, finite and at least `low` (above `low` when `above`), else a TypeError or
    ValueError naming `name`; `meaning` is added to the message (what the number does)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={shown(value)} must be a number, not {type(value).__name__}.")
    if not math.isfinite(value) or value < low or (above and value == low):
        bound = f"above {low}" if above else f"at least {low}"
        raise ValueError(f"{name}={value} must be a finite number {bound}{meaning}.")
    return float(value)


def shown(value, limit=40):
    """repr(value), cut to `limit` characters: a message names a long text without holding all of it."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
