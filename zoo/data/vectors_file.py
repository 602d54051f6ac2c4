"""Word-vector files read as a stream for a vocabulary: the formats, told apart by content, and their checks.

Not the name but the content says the format: gzip by its magic bytes; a first line of two integers `COUNT DIM`
is word2vec's header, followed by text rows (word2vec's text format, fastText's .vec) or by binary records
(word2vec's binary format, GoogleNews': the word, a space, DIM little-endian float32, maybe a newline); any
other first line is the first row of GloVe's text format, which has no header. A text row's values are its
last DIM fields, so a word may hold spaces (glove.840B's few do).

Every row's shape is checked, and its characters (digits, sign, point, exponent); the values of the rows the
vocabulary uses are parsed and must be finite float32. Binary records are all checked (UTF-8 words, finite
values), a block at a time. A bad file is one VectorsFileError naming the file and its line (binary: the
word's number and byte offset, of the unpacked data for a gzip file). A header whose dimension is not the rows'
names both, and a file that is no text and has no header (random bytes, an image) is said to be no vectors file.
"""

import gzip
import os
import re
import zlib

import numpy as np

FORMATS = ("glove", "word2vec_text", "word2vec_binary")
BLOCK = 1 << 20  # bytes read at a time
HEAD = 1 << 20  # bytes read at most to tell the format
HEADER = re.compile(rb"[ \t]*(\d+)[ \t]+(\d+)[ \t\r]*")  # word2vec's first line: COUNT DIM
NUMBER_BYTES = b"0123456789.+-eE "  # what a text row's values are written with
NUMBER = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|nan|inf(?:inity)?)", re.IGNORECASE)
GZIP, ZIP, FASTTEXT_BIN = b"\x1f\x8b", b"PK\x03\x04", (793712314).to_bytes(4, "little")
CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # bytes no text file's line holds (tab and CR may)
KINDS = "GloVe text, word2vec text or binary, or fastText .vec"
PROBED = 3  # binary records read with each dimension to find the one a wrong header hides
MAX_DIM = 10_000  # the widest binary records looked for


class VectorsFileError(ValueError):
    """A vectors file that cannot be used; the message names the file and where in it."""


def read(path, ids, setting="model.word_vectors"):
    """(format, dim, vectors, found, rows, duplicates) of the file at `path` for the words of `ids` (UTF-8
    bytes -> row): vectors (len(ids), dim) float32, zeros where `found` (len(ids),) is False; rows in the file;
    duplicates: rows of a vocabulary word after its first, which is the one kept. A path that names no file
    is refused naming `setting`, the config field (or flag) that gave it."""
    check_path(path, setting)
    with open(path, "rb") as f:
        packed = f.read(2) == GZIP
    with gzip.open(path, "rb") if packed else open(path, "rb") as stream:
        return _Reader(path, stream, ids).read(len(ids))


def check_path(path, setting):
    """Refuses (VectorsFileError naming `setting`) an empty path, a folder (naming a file in it to give), a path
    that does not exist or a file that cannot be read."""
    if not path:
        raise VectorsFileError(f"{setting}={path!r} names no file: give the path of a word-vectors file ({KINDS}), "
                               "or leave it out.")
    if os.path.isdir(path):
        inside = sorted(name for name in os.listdir(path) if os.path.isfile(os.path.join(path, name))
                        and re.search(r"\.(txt|vec|bin)(\.gz)?\Z", name))
        example = f", e.g. {setting}={os.path.join(path, inside[0])}" if inside else ""
        raise VectorsFileError(f"{setting}={path} is a folder: give one word-vectors file ({KINDS}){example}.")
    if not os.path.exists(path):
        raise VectorsFileError(f"{setting}={path}: no such file. Give the path of a word-vectors file ({KINDS}).")
    if not os.access(path, os.R_OK):
        raise VectorsFileError(f"{setting}={path} cannot be read (no permission): give a file you may read.")


class _Reader:
    def __init__(self, path, stream, ids):
        self.path, self.stream, self.ids = path, stream, ids
        self.rows = self.duplicates = 0
        self.vectors = self.found = None

    def fail(self, where, what):
        raise VectorsFileError(f"{self.path}{where}: {what}")

    def chunk(self):
        try:
            return self.stream.read(BLOCK)
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            self.fail("", f"its gzip data is damaged or cut short ({error}). Download it again.")

    def read(self, size):
        """(format, dim, vectors, found, rows, duplicates) for `size` vocabulary words."""
        head = b""  # enough to tell the format: a header or first row, and the line after it
        while (head.count(b"\n") < 2 and len(head) < HEAD) or not head:
            more = self.chunk()
            if not more:
                break
            head += more
        if not head.strip():
            self.fail("", "the file is empty")
        if head.startswith(ZIP):
            self.fail("", "it is a zip archive: unzip it and give one of its files")
        if head.startswith(FASTTEXT_BIN):
            self.fail("", "it is a fastText .bin model: give the .vec file of the same vectors")
        end = head.find(b"\n")
        first = head[: end if end >= 0 else len(head)]
        header = HEADER.fullmatch(first)
        if header:
            count, dim = int(header[1]), int(header[2])
            body = head[len(first) + 1:]
            form = self.header_format(body, count, dim, len(first) + 1)
        else:
            control = CONTROL.search(first)
            if control:
                self.fail("", f"not a word-vectors file: line 1 holds byte {first[control.start()]:#04x}, which no "
                              f"text holds, and no word2vec header (COUNT DIM). Give {KINDS} vectors")
            count, body, form = None, head, "glove"
            dim = first.rstrip(b" \r").count(b" ")
        if dim == 0:
            self.fail(":1", f"a dimension of 0: the rows hold no values (is it a word-vectors file? {KINDS})")
        self.vectors = np.zeros((size, dim), np.float32)
        self.found = np.zeros(size, bool)
        if form == "word2vec_binary":
            self.binary(body, count, dim, len(first) + 1)
        else:
            expected = f"line 1 has {dim}" if count is None else f"the header (line 1) says {dim}"
            self.text(body, dim, 0 if count is None else 1, expected)
        if count is not None and self.rows != count:
            self.fail(":1", f"the header says {count:,} words but the file holds {self.rows:,}")
        if self.rows == 0:
            self.fail("", "the file holds no vectors")
        return form, dim, self.vectors, self.found, self.rows, self.duplicates

    def header_format(self, body, count, dim, offset):
        """word2vec_text or word2vec_binary, told by the line after the header (`body`, from byte `offset`); a
        text row or binary records of another width than the header's `dim` are refused, naming both."""
        line = body.split(b"\n", 1)[0]
        fields = line.rstrip(b" \r").split(b" ")
        numbers = _trailing_numbers(fields)
        values = numbers % len(fields)  # 0: none, or no word before them
        if values not in (0, dim) and not CONTROL.search(line) and _decodes(line):
            self.fail(":2", f"a row of {values} values where the header (line 1) says {dim}: correct the header's "
                            f"dimension (COUNT DIM), or give the file it belongs to")
        if not line or (len(fields) > dim and numbers >= dim):  # a word and `dim` numbers, or a text cut short
            return "word2vec_text"
        probed = min(count, PROBED)
        if not _records_parse(body, dim, probed):
            width = next((d for d in range(1, MAX_DIM + 1) if d != dim and _records_parse(body, d, probed)), None)
            if width is not None:
                self.fail(":1", f"the header says {dim} dimensions but the binary records hold {width} (the first "
                                f"{probed} read from byte {offset:,}): correct the header's dimension (COUNT DIM), "
                                "or give the file it belongs to")
        return "word2vec_binary"

    def keep(self, word):
        """The id of `word` (bytes) when it is a vocabulary word not seen before, else None."""
        i = self.ids.get(word)
        if i is not None and self.found[i]:
            self.duplicates += 1
            return None
        if i is not None:
            self.found[i] = True
        return i

    def utf8(self, data, lines_before):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = lines_before + data.count(b"\n", 0, error.start) + 1
            self.fail(f":{line}", f"invalid UTF-8 (byte {data[error.start]:#04x}); convert the file to UTF-8")

    def text(self, data, dim, line, expected):
        """Text rows, `data` first, then the rest of the stream; `line`: lines before `data`."""
        rest = data
        while True:
            more = self.chunk()
            data = rest + more
            cut = data.rfind(b"\n") + 1 if more else len(data)
            if cut == 0 and more:  # a row longer than a block: read on
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            self.utf8(block, line)
            rows = block.split(b"\n")
            if block.endswith(b"\n"):
                rows.pop()
            kept = []  # (line, id, word, values) of the vocabulary's rows
            for row in rows:
                line += 1
                row = row.rstrip(b" \r")  # fastText ends each row with a space
                if not row:
                    continue
                if row.count(b" ") == dim:
                    word, _, values = row.partition(b" ")
                else:  # a word holding spaces (glove.840B has a few), or a ragged row
                    word = row.rsplit(b" ", dim)[0]
                    values = row[len(word) + 1:]
                    if values.count(b" ") != dim - 1 or _is_number(word.rsplit(b" ", 1)[-1]):
                        word = b""
                if not word or values.translate(None, NUMBER_BYTES):
                    self.fail(f":{line}", _problem(row, dim, expected))
                self.rows += 1
                i = self.keep(word)
                if i is not None:
                    kept.append((line, i, word, values))
            self.parse(kept, dim, expected)
            if not more:
                return

    def parse(self, kept, dim, expected):
        """The values of the vocabulary's rows, parsed and checked finite, into `vectors`."""
        if not kept:
            return
        try:
            with np.errstate(over="ignore"):  # a value beyond float32 becomes inf, refused below
                numbers = np.array(b" ".join(row[3] for row in kept).split(b" "), np.float32)
            numbers = numbers.reshape(len(kept), dim)
            good = np.isfinite(numbers).all()
        except ValueError:
            good = False
        if not good:
            line, _, word, values = next(row for row in kept if not _finite(row[3]))
            self.fail(f":{line}", _problem(word + b" " + values, dim, expected))
        self.vectors[[row[1] for row in kept]] = numbers

    def binary(self, buffer, count, dim, offset):
        """`count` records of word, space, `dim` float32; `buffer` holds the bytes from `offset` on."""
        size, pos, index = 4 * dim, 0, 0
        words, starts = [], []  # the records in `buffer` not yet checked
        while index < count:
            pos += buffer.startswith(b"\n", pos)  # word2vec.c ends each record with a newline
            space = buffer.find(b" ", pos)
            if space < 0 or len(buffer) - space - 1 < size:
                self.check_records(buffer, words, starts, index, dim)
                more = self.chunk()
                if not more:
                    self.fail(f", word {index + 1:,} of {count:,} (byte {offset + pos:,})",
                              f"the file is cut short before its {dim} values")
                buffer, offset, pos = buffer[pos:] + more, offset + pos, 0
                continue
            word = buffer[pos:space]
            if not word:
                self.fail(f", word {index + 1:,} (byte {offset + pos:,})", "a record without a word")
            words.append((word, offset + pos))
            starts.append(space + 1)
            i = self.keep(word)
            if i is not None:
                self.vectors[i] = np.frombuffer(buffer, "<f4", dim, space + 1)
            pos, index = space + 1 + size, index + 1
            self.rows += 1
        self.check_records(buffer, words, starts, index, dim)
        tail = buffer[pos:] + self.chunk()
        if tail.strip():
            at = offset + pos + len(tail) - len(tail.lstrip())
            self.fail(f", byte {at:,}", f"the file goes on after the {count:,} words its header says")

    def check_records(self, buffer, words, starts, index, dim):
        """UTF-8 words and finite values for the records just read (`index`: the records read so far)."""
        first = index - len(words) + 1
        try:
            b"\n".join(word for word, _ in words).decode("utf-8")
        except UnicodeDecodeError:
            number, (word, at) = next((n, w) for n, w in enumerate(words, first) if not _decodes(w[0]))
            self.fail(f", word {number:,} (byte {at:,})", f"invalid UTF-8 in the word {word!r}")
        view = memoryview(buffer)
        values = np.frombuffer(b"".join(view[s:s + 4 * dim] for s in starts), "<f4").reshape(-1, dim)
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            n = int(np.argmax(bad))
            word, at = words[n]
            self.fail(f", word {first + n:,} (byte {at:,})", f"the vector of {word.decode()!r} holds NaN or inf")
        words.clear()
        starts.clear()


def _decodes(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _finite(values):
    try:
        with np.errstate(over="ignore"):
            return bool(np.isfinite(np.array(values.split(b" "), np.float32)).all())
    except ValueError:
        return False


def _is_number(field):
    return NUMBER.fullmatch(field) is not None


def _trailing_numbers(fields):
    """How many of `fields` (bytes) at their end are numbers."""
    return next((n for n in range(len(fields)) if not _is_number(fields[-1 - n])), len(fields))


def _records_parse(buffer, dim, count):
    """Whether `buffer` starts with `count` binary records of `dim` values each: a word of printable UTF-8, a
    space, `dim` finite float32 (maybe a newline before each record), all within `buffer`."""
    pos = 0
    for _ in range(count):
        pos += buffer.startswith(b"\n", pos)
        space = buffer.find(b" ", pos, pos + 1000)
        end = space + 1 + 4 * dim
        if space <= pos or end > len(buffer):
            return False
        word = buffer[pos:space]
        if CONTROL.search(word) or b"\n" in word or not _decodes(word):
            return False
        if not np.isfinite(np.frombuffer(buffer, "<f4", dim, space + 1)).all():
            return False
        pos = end
    return True


def _problem(row, dim, expected):
    """What is wrong with a text `row` (bytes) that should hold a word and `dim` numbers."""
    fields = row.split(b" ")
    word = b" ".join(fields[:-dim])
    if b"" in fields[1:]:
        return "an empty value (two spaces in a row)"
    if len(fields) <= dim or (b" " in word and _is_number(fields[-dim - 1])):
        # A row of numbers alone (no word among them): its first is read as the word.
        return f"a row of {min(_trailing_numbers(fields), len(fields) - 1)} values where {expected} (a ragged row?)"
    if not word:
        return "a row without a word"
    bad = next((field for field in fields[-dim:] if not _is_number(field)), None)
    if bad is not None:
        return f"{bad.decode(errors='replace')!r} is not a number"
    return "a value is NaN or inf, or too large for float32"
