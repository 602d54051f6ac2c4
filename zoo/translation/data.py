"""The translator's sentence pairs: a built-in dataset (multi30k, tfds:NAME) or the user's files, as the run's
zoo.data.spec.DatasetSpec names them (TranslateRunConfig.dataset_spec), their rows read by zoo.data.files:

- `text:corpus/{split}.{lang}`: aligned line files, one per language, line n of one the translation of
  line n of the other (fairseq-preprocess's and Hugging Face's run_translation's plain-text layout);
- `tsv:pairs/*.tsv`: one pair a line, source TAB target; a header row naming the two languages sets
  the order, without one the --source column comes first. A first line of two language codes, one of them
  --source or --target, is a header: naming another language there is refused.

A pair with one side blank is a bad row (refused with file:line, or skipped and counted with
--bad_rows=skip); a line blank on both sides is passed over.

Lines are split at "\\n" alone (a Windows line's "\\r" dropped) and stripped, as Multi30k's are, so the same text gives
the same pairs whichever way it is read. Nothing holds a split's texts (`Pairs`, `token_rows`)."""

import itertools
import re

import numpy as np

from zoo.data import cache, datasets, files, spec as dataset_spec
from zoo.data.sources import Sources
from zoo.data.datasets import DatasetError
from zoo.translation import corpora

FORMS = ("text", "tsv")
SIDES = ("source", "target")


class Pairs:
    """One split of sentence pairs, read again from its files (or a built-in dataset's lists) each time it is iterated:
    (source, target) texts. `count`, `chars` and `bytes` (characters and UTF-8 bytes of each side), `key` (the data's
    part of a token-cache key), `example` (the first source sentence), `skipped` (bad rows left out), `sources` (the
    files, zoo.data.sources.Sources, as `load` read them; None for a built-in dataset)."""

    def __init__(self, read, count, chars, key, example, skipped=0, sizes=None, sources=None):
        self._read, self.count, self.chars, self.key = read, count, tuple(chars), key
        self.example, self.skipped, self.sources = example, skipped, sources
        self.bytes = tuple(sizes) if sizes is not None else self.chars

    def __iter__(self):
        return self._read()

    def __len__(self):
        return self.count

    def texts(self, side):
        """The texts of one side (0: source, 1: target), in order."""
        return (pair[side] for pair in self)

    def tokenizer_sample(self, sides, max_characters, seed):
        """The texts of `sides` (all of the first side's, then the next's), all of them if they hold at most
        `max_characters`, else a seeded share of about that many, read in one pass a side."""
        texts = (text for side in sides for text in self.texts(side))
        return datasets.sample_share(texts, sum(self.chars[side] for side in sides), max_characters, seed)

    def subsample(self, count, seed):
        """A seeded random `count` of the pairs, in their original order (all of them if fewer)."""
        if count is None or count >= self.count:
            return self
        chosen = np.zeros(self.count, bool)  # a byte a pair
        chosen[np.random.default_rng(seed).permutation(self.count)[:count]] = True
        read = lambda: (pair for index, pair in enumerate(self) if chosen[index])  # noqa: E731
        _, chars, sizes, example = _measure(read())
        return Pairs(read, count, chars, {**self.key, "max_examples": count, "seed": seed}, example, self.skipped,
                     sizes, self.sources)


def _measure(pairs):
    """(count, characters and UTF-8 bytes of each side, the first source sentence) of `pairs`, read once."""
    count, chars, sizes, example = 0, [0, 0], [0, 0], None
    for count, pair in enumerate(pairs, start=1):
        for side in (0, 1):
            chars[side] += len(pair[side])
            sizes[side] += len(pair[side].encode("utf-8"))
        example = pair[0] if example is None else example
    return count, chars, sizes, example


def load(dataset, split, source, target, bad_rows="error"):
    """The `split` of `dataset` (a zoo.data.spec.DatasetSpec, or a dataset string) as `Pairs` (source -> target).
    Files are read once here, so that a bad row, or aligned files of different lengths, are refused before any work
    starts; training reads them again (once a side, into the token cache)."""
    spec = dataset_spec.given(dataset, FORMS)
    if not spec.files:
        data = corpora.load_translation(spec.name, split, source, target)
        chars = [sum(map(len, data.sources)), sum(map(len, data.targets))]
        key = {"dataset": spec.name, "split": split, "source": source, "target": target}
        return Pairs(lambda: zip(data.sources, data.targets), len(data.sources), chars, key,
                     data.sources[0] if data.sources else "")
    if source == target:
        raise DatasetError(f"--source and --target are both {source!r}: choose two languages.")
    check_split(spec, split, source, target)
    dataset_spec.say_held_out(spec, split, **_source_lang(spec, source))
    if spec.form == "text" and "{lang}" not in spec.pattern:
        raise DatasetError(f"--dataset={spec}: aligned text files need {{lang}} in their pattern, one file per "
                           f"language (e.g. text:corpus/{{split}}.{{lang}} for corpus/train.{source} and "
                           f"corpus/train.{target}).")
    bad = files.BadRows(bad_rows)
    languages = (source, target) if spec.form == "text" else ("",)  # aligned files: each language's; TSV: one
    sources = Sources(lambda: [p for language in languages for p in dataset_spec.paths(spec, split, lang=language)])
    count, chars, sizes, example = _measure(_pairs(spec, split, source, target, bad))
    bad.check(f"{spec} ({split})")
    if not count:
        raise DatasetError(f"--dataset={spec} has no sentence pairs in its {split} split.")
    key = {"files": sources.digest, "spec": str(spec), "split": split, "source": source, "target": target,
           "bad_rows": bad_rows}
    return Pairs(lambda: _pairs(spec, split, source, target, files.BadRows("skip")), count, chars, key, example,
                 bad.count if bad_rows == "skip" else 0, sizes, sources)


def token_rows(pairs, tokenizers, tokenizer_key, max_length):
    """(source rows, target rows): zoo.data.cache.TokenRows of the pairs' framed ids (`source_ids`,
    `target_ids`), tokenized once into the token cache, a side at a time; the files are read again here, and
    one that differs from what `load` checked is refused."""
    from zoo.translation import preprocessor

    rows = []
    for side, (name, tok, ids) in enumerate(zip(SIDES, tokenizers, (preprocessor.source_ids, preprocessor.target_ids))):
        key = {"data": pairs.key, "side": name, "tokenizer": tokenizer_key, "max_length": max_length}
        encode = lambda texts, tok=tok, ids=ids: ids(tok, texts, max_length)  # noqa: E731
        texts = ((text, None) for text in pairs.texts(side))
        rows.append(cache.token_rows(key, texts, encode, f"tokenizing {name}s", pairs.bytes[side],
                                     sources=pairs.sources))
    return rows


def _raw_lines(path, strip=True):
    with files.reading(path), files.open_text(path, bom=True) as f:
        for number, line in enumerate(files.lines_of(f), start=1):
            line = line.removesuffix("\n").removesuffix("\r")
            yield line.strip() if strip else line, f"{path}:{number}"


def _pairs(spec, split, source, target, bad):
    """The split's good pairs, in order (a held-out share's rows kept or left out as `split` says); a pair with one
    side blank goes to `bad`."""
    keep = dataset_spec.in_split(spec, split, **_source_lang(spec, source))
    index = 0
    for texts, where in (_aligned if spec.form == "text" else _tsv)(spec, split, source, target, bad):
        if not texts[0] or not texts[1]:
            bad.add(where, f"an empty {source if not texts[0] else target} side (a pair needs both sentences)")
            continue
        if keep(index):
            yield texts
        index += 1


def _aligned(spec, split, source, target, bad):
    """(pair, where) of aligned text files, line by line (a line blank in both files passed over)."""
    sides = [dataset_spec.paths(spec, split, lang=language) for language in (source, target)]
    if len(sides[0]) != len(sides[1]):
        raise DatasetError(f"--dataset={spec} ({split}): {len(sides[0])} {source} files but {len(sides[1])} "
                           f"{target} files; each language needs one file per part.")
    for source_path, target_path in zip(*sides):
        left, right = _raw_lines(source_path), _raw_lines(target_path)
        lines = 0
        for pair in itertools.zip_longest(left, right):
            if pair[0] is None or pair[1] is None:  # one file ended first: count the other's lines
                more = 1 + sum(1 for _ in (right if pair[0] is None else left))
                counts = (lines, lines + more) if pair[0] is None else (lines + more, lines)
                raise DatasetError(f"{source_path} has {counts[0]} lines but {target_path} has {counts[1]}: "
                                   "aligned files need one line per sentence pair.")
            lines += 1
            if pair[0][0] or pair[1][0]:
                yield (pair[0][0], pair[1][0]), f"{pair[0][1]} and line {lines} of {target_path}"


def _tsv(spec, split, source, target, bad):
    """(pair, where) of TSV files, a header's order applied; a line without exactly one TAB goes to `bad`."""
    for path in dataset_spec.paths(spec, split):
        order = (0, 1)
        for number, (line, where) in enumerate(_raw_lines(path, strip=False)):  # a blank side's TAB kept
            fields = line.split("\t")
            if number == 0 and _is_header(fields, source, target, where):
                order = (0, 1) if fields[0].strip() == source else (1, 0)
                continue
            if not line.strip():
                continue
            if len(fields) != 2:
                bad.add(where, f"{len(fields) - 1} TABs where a pair has exactly one (source TAB target)")
                continue
            yield (fields[order[0]].strip(), fields[order[1]].strip()), where


LANGUAGE_CODE = re.compile(r"[a-z]{2,3}([-_][A-Za-z0-9]{2,8})*")  # de, en, pt_BR, zh-Hant: a header's names


def _is_header(fields, source, target, where):
    """Whether a file's first line is a header naming the languages: two language codes, one of them --source
    or --target. One naming another language is refused, so that it is never trained on as a pair."""
    names = [field.strip() for field in fields]
    if len(names) != 2 or not all(LANGUAGE_CODE.fullmatch(name) for name in names) or not {source, target} & set(names):
        return False
    if set(names) != {source, target}:
        raise DatasetError(f"{where}: the header names the languages {names[0]!r} and {names[1]!r}, but --source="
                           f"{source} and --target={target}: give the files' languages, or fix the header.")
    return True


def held_out(spec, source):
    """Whether validation is a held-out share of the training pairs (zoo.data.spec.holds_out; aligned text files
    are matched by their `source` side's)."""
    return dataset_spec.holds_out(spec, **_source_lang(spec, source))


def _source_lang(spec, source):
    """The `lang` of the files whose rows a held-out share is taken of: aligned text files' source side."""
    return {"lang": source} if spec.form == "text" else {}


def check_split(spec, split, source, target):
    """Refuses early a split that the files (a zoo.data.spec.DatasetSpec) do not have (a built-in dataset is
    checked by the recipe)."""
    if not spec.files:
        return
    for language in (source, target) if spec.form == "text" else ("",):
        dataset_spec.check_split(spec, split, lang=language)
