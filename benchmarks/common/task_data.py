"""The data of benchmarks.tasks' three tasks (issue 51), made from the shared data, seeded, written as the zoo
reads them (csv: or jsonl: files with {split} train, validation, test); benchmarks.tasks' docstring says what each
task is. `build` makes a task's files; READ_FLAGS are the recipe flags that read them."""

import csv
import json
import os
import re

SEED = 0

PAIR_MIN_WORDS = 8  # SST-2 train phrases shorter than this are left out of the pairs
PAIR_HELD_OUT = 0.05  # of those phrases, held out for the validation pairs
LABEL_COUNT = 20  # multilabel: the most frequent nouns of NOUNS kept as labels
# Frequent nouns of Multi30k's English side (a hand list, content nouns only): the task keeps the LABEL_COUNT of
# them that the most train.en sentences hold.
NOUNS = ("man", "woman", "people", "shirt", "men", "girl", "boy", "group", "dog", "street", "water", "women", "child",
         "children", "person", "hat", "ball", "building", "jacket", "sidewalk", "field", "crowd", "beach", "table",
         "snow", "grass", "hair", "bike", "city", "girls", "player", "wall", "camera", "dress", "park", "guitar",
         "lady", "food", "car", "road", "bench", "baby", "stage")

# Each task's files and the recipe flags that read them (the folder in place of {folder}).
FILES = {"regression": "{split}.csv", "pairs": "{split}.jsonl", "multilabel": "{split}.jsonl"}
READ_FLAGS = {
    "regression": ["--dataset=csv:{folder}/{{split}}.csv", "--text_column=review", "--label_column=rating",
                   "--problem_type=regression"],
    "pairs": ["--dataset=jsonl:{folder}/{{split}}.jsonl", "--text_column=sentence_a", "--text_pair_column=sentence_b",
              "--label_column=label"],
    "multilabel": ["--dataset=jsonl:{folder}/{{split}}.jsonl", "--text_column=german", "--label_column=labels",
                   "--problem_type=multi_label_classification", "--threshold=0.5"],
}



def write_rows(path, rows, columns=None):
    """Writes `rows` (dicts) as CSV (with `columns`' header) or JSONL (by the name's ending), via a partial file."""
    partial = path + ".partial"
    with open(partial, "w", newline="", encoding="utf-8") as f:
        if path.endswith(".csv"):
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        else:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(partial, path)


def read_rows(path):
    """The rows (dicts) of a CSV or JSONL file that write_rows wrote."""
    with open(path, newline="", encoding="utf-8") as f:
        if path.endswith(".csv"):
            return list(csv.DictReader(f))
        return [json.loads(line) for line in f if line.strip()]


def imdb_reviews():
    """Every labelled IMDB review as (key, rating, text), key `<train|test>/<neg|pos>/<id>`, the rating from the
    file name, read from the archive as it streams ($ZOO_DATA_DIR/imdb/aclImdb_v1_labeled.tar.gz)."""
    import tarfile

    from zoo.data import datasets

    path = datasets.fetch(datasets.IMDB_LOCAL)
    reviews = []
    with datasets.reading(path), tarfile.open(path, "r|gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 4 and parts[1] in ("train", "test") and parts[2] in ("neg", "pos"):
                review_id, rating = parts[3].removesuffix(".txt").split("_")
                text = archive.extractfile(member).read().decode("utf-8").replace("<br />", " ")
                reviews.append((f"{parts[1]}/{parts[2]}/{int(review_id)}", int(rating), text))
    return reviews


def make_regression(reviews, sizes, seed=SEED):
    """{split: rows} of the regression task from imdb_reviews()' tuples: a seeded sample of IMDB train split into
    train and validation (disjoint), a seeded sample of IMDB test; rows {id, review, rating}."""
    import numpy as np

    by_folder = {folder: sorted(r for r in reviews if r[0].startswith(folder + "/")) for folder in ("train", "test")}
    rng = np.random.default_rng(seed)
    train_order = rng.permutation(len(by_folder["train"]))
    test_order = rng.permutation(len(by_folder["test"]))
    if sizes["train"] + sizes["validation"] > len(by_folder["train"]) or sizes["test"] > len(by_folder["test"]):
        raise ValueError(f"The regression sizes {sizes} ask for more reviews than IMDB holds.")
    chosen = {"train": train_order[: sizes["train"]],
              "validation": train_order[sizes["train"]: sizes["train"] + sizes["validation"]],
              "test": test_order[: sizes["test"]]}
    rows = {}
    for split, order in chosen.items():
        folder = by_folder["test" if split == "test" else "train"]
        rows[split] = [{"id": folder[i][0], "review": folder[i][2], "rating": folder[i][1]} for i in order]
    return rows


def sst2_sentences():
    """{"train": [(text, label)], "dev": [...]}: SST-2's train rows and dev sentences, label 0 or 1."""
    from zoo.data import datasets

    train, dev = (datasets.load_classification("sst2", split) for split in ("train", "validation"))
    return {"train": list(zip(train.texts, train.labels.tolist())), "dev": list(zip(dev.texts, dev.labels.tolist()))}


def draw_pairs(sentences, count, rng):
    """`count` pairs of two different sentences ((text, label) tuples), every second one of the same sentiment:
    the first text drawn at random, the second at random among those of its sentiment (`same`) or the other's
    (`different`); rows {sentence_a, sentence_b, label}, shuffled."""
    by_label = {label: [s for s in sentences if s[1] == label] for label in (0, 1)}
    rows = []
    for i in range(count):
        first = sentences[rng.integers(len(sentences))]
        same = i % 2 == 0
        pool = by_label[first[1] if same else 1 - first[1]]
        if len(pool) < (2 if same else 1):  # another sentence of its sentiment, or one of the other
            raise ValueError(f"No second sentence for a pair with {first[0]!r}: too few sentences of a sentiment.")
        second = pool[rng.integers(len(pool))]
        while second[0] == first[0]:
            second = pool[rng.integers(len(pool))]
        rows.append({"sentence_a": first[0], "sentence_b": second[0], "label": "same" if same else "different"})
    return [rows[i] for i in rng.permutation(len(rows))]


def make_pairs(sentences, sizes, seed=SEED):
    """{split: rows} of the sentiment-agreement task from sst2_sentences()' dict: the training and validation pairs
    from SST-2 train's distinct phrases of at least PAIR_MIN_WORDS words (a seeded PAIR_HELD_OUT of them held out
    for validation, never in a training pair), the test pairs from the dev sentences."""
    import numpy as np

    rng = np.random.default_rng(seed)
    distinct = {}
    for text, label in sentences["train"]:
        if len(text.split()) >= PAIR_MIN_WORDS:
            distinct.setdefault(text, label)
    phrases = sorted(distinct.items())
    order = rng.permutation(len(phrases))
    held = int(round(len(phrases) * PAIR_HELD_OUT))
    pools = {"train": [phrases[i] for i in order[held:]], "validation": [phrases[i] for i in order[:held]],
             "test": sorted(set(sentences["dev"]))}
    return {split: draw_pairs(pools[split], sizes[split], rng) for split in ("train", "validation", "test")}


def words_of(sentence):
    return set(re.findall(r"[a-z]+", sentence.lower()))


def multi30k_sentences():
    """{split: (German sentences, English sentences)} of Multi30k (train, validation = val, test = test_2016_flickr)."""
    from zoo.translation import corpora

    return {split: (data.sources, data.targets) for split in ("train", "validation", "test")
            for data in [corpora.load_translation("multi30k", split, "de", "en")]}


def label_nouns(english, count=None):
    """The `count` (default LABEL_COUNT) nouns of NOUNS that the most of the `english` sentences hold (ties: NOUNS'
    order)."""
    count = LABEL_COUNT if count is None else count
    held = [words_of(sentence) for sentence in english]
    frequency = {noun: sum(noun in words for words in held) for noun in NOUNS}
    return sorted(NOUNS, key=lambda noun: (-frequency[noun], NOUNS.index(noun)))[:count]


def make_multilabel(sentences, sizes, seed=SEED):
    """({split: rows}, the label nouns) of the multi-label task from multi30k_sentences()' dict: rows {german,
    labels}, labels the label nouns (by frequency) its English sentence holds as whole lowercase words; rows with
    none left out; with a size, a seeded sample of that many rows, in their order."""
    import numpy as np

    nouns = label_nouns(sentences["train"][1])
    rng = np.random.default_rng(seed)
    splits = {}
    for split in ("train", "validation", "test"):
        german, english = sentences[split]
        rows = [{"german": de, "labels": [n for n in nouns if n in words_of(en)]} for de, en in zip(german, english)]
        rows = [row for row in rows if row["labels"]]
        if sizes[split] is not None and sizes[split] < len(rows):
            rows = [rows[i] for i in np.sort(rng.permutation(len(rows))[: sizes[split]])]
        splits[split] = rows
    return splits, nouns


def build(task, folder, sizes):
    """Makes `task`'s files in `folder` ({split}.csv or .jsonl); returns a note on what was made."""
    os.makedirs(folder, exist_ok=True)
    note = ""
    if task == "regression":
        splits, columns = make_regression(imdb_reviews(), sizes), ["id", "review", "rating"]
    elif task == "pairs":
        splits, columns = make_pairs(sst2_sentences(), sizes), None
    else:
        splits, nouns = make_multilabel(multi30k_sentences(), sizes)
        columns, note = None, "Labels: " + ", ".join(nouns) + "."
    for split, rows in splits.items():
        write_rows(os.path.join(folder, FILES[task].format(split=split)), rows, columns)
    counts = ", ".join(f"{split} {len(rows):,}" for split, rows in splits.items())
    return f"Rows: {counts}. {note}".strip()
