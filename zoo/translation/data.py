"""The translator's sentence pairs: a built-in dataset (multi30k, tfds:NAME) or the user's files
(see zoo.data.files):

- `text:corpus/{split}.{lang}`: aligned line files, one per language, line n of one the translation of
  line n of the other (fairseq-preprocess's and Hugging Face's run_translation's plain-text layout);
- `tsv:pairs/*.tsv`: one pair a line, source TAB target; a header row naming the two languages sets
  the order, without one the --source column comes first.

Lines are split at "\\n" alone (a Windows line's "\\r" dropped) and stripped, as Multi30k's are, so the
same text gives the same pairs whichever way it is read.
"""

from zoo.data import cache, files
from zoo.data.datasets import DatasetError
from zoo.translation import corpora
from zoo.translation.corpora import Translation

FORMS = ("text", "tsv")


def load(name, split, source, target, bad_rows="error"):
    """The `split` of dataset `name` as a corpora.Translation (source -> target)."""
    spec = files.parse(name, FORMS)
    if spec is None:
        return corpora.load_translation(name, split, source, target)
    if source == target:
        raise DatasetError(f"--source and --target are both {source!r}: choose two languages.")
    for language in (source, target) if spec.form == "text" else ("",):
        files.check_split(spec, split, lang=language)
    bad = files.BadRows(bad_rows)
    pairs = _aligned(spec, split, source, target) if spec.form == "text" else _tsv(spec, split, source, target, bad)
    bad.check(f"{spec} ({split})")
    if not pairs[0]:
        raise DatasetError(f"--dataset={spec} has no sentence pairs in its {split} split.")
    return Translation(*pairs)


def _raw_lines(path):
    with files.reading(path), files.open_text(path, bom=True) as f:
        for number, line in enumerate(files.lines_of(f), start=1):
            yield line.removesuffix("\n").removesuffix("\r").strip(), f"{path}:{number}"


def _aligned(spec, split, source, target):
    if "{lang}" not in spec.pattern:
        raise DatasetError(f"--dataset={spec}: aligned text files need {{lang}} in their pattern, one file per "
                           f"language (e.g. text:corpus/{{split}}.{{lang}} for corpus/train.{source} and "
                           f"corpus/train.{target}).")
    sides = [files.paths(spec, split, lang=language) for language in (source, target)]
    if len(sides[0]) != len(sides[1]):
        raise DatasetError(f"--dataset={spec} ({split}): {len(sides[0])} {source} files but {len(sides[1])} "
                           f"{target} files; each language needs one file per part.")
    keep = files.in_split(spec, split)
    sources, targets, index = [], [], 0
    for source_path, target_path in zip(*sides):
        left = [line for line, _ in _raw_lines(source_path)]
        right = [line for line, _ in _raw_lines(target_path)]
        if len(left) != len(right):
            raise DatasetError(f"{source_path} has {len(left)} lines but {target_path} has {len(right)}: aligned "
                               "files need one line per sentence pair.")
        for pair in zip(left, right):
            if keep(index):
                sources.append(pair[0])
                targets.append(pair[1])
            index += 1
    return sources, targets


def _tsv(spec, split, source, target, bad):
    keep = files.in_split(spec, split)
    sources, targets, index = [], [], 0
    for path in files.paths(spec, split):
        first = True
        order = (0, 1)
        for line, where in _raw_lines(path):
            fields = line.split("\t")
            if first:
                first = False
                if len(fields) == 2 and set(f.strip() for f in fields) == {source, target}:
                    order = (0, 1) if fields[0].strip() == source else (1, 0)
                    continue
            if not line:
                continue
            if len(fields) != 2:
                bad.add(where, f"{len(fields) - 1} TABs where a pair has exactly one (source TAB target)")
                continue
            if keep(index):
                sources.append(fields[order[0]].strip())
                targets.append(fields[order[1]].strip())
            index += 1
    return sources, targets


def files_digest(name, split, source, target):
    """One hash of the files a split is read from (None for a built-in dataset): a resumed run compares it."""
    spec = files.parse(name, FORMS)
    if spec is None:
        return None
    languages = (source, target) if spec.form == "text" else ("",)
    return cache.files_digest([p for language in languages for p in files.paths(spec, split, lang=language)])


def check_split(name, split, source, target):
    """Refuses early a split that the files do not have (a built-in dataset is checked by the recipe)."""
    spec = files.parse(name, FORMS)
    if spec is None:
        return
    for language in (source, target) if spec.form == "text" else ("",):
        files.check_split(spec, split, lang=language)
