r"""The classifier's three new task shapes (issue 51: text pairs, regression, multi-label) against the linear peer a
user would try first, in the same program, on tasks this program makes from the shared data (seeded, written under
--data_dir as the zoo reads them: csv: or jsonl: files with {split} train, validation, test):

- regression: IMDB reviews scored by their star rating (1-4, 7-10, from the archive's file names,
  `aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt`): a seeded 10,000 of IMDB train for training and another
  2,000 for validation, a seeded 2,000 of IMDB test for test. Figures: RMSE, MAE, Pearson and Spearman on test.
  Peer: TF-IDF + Ridge.
- pairs: SST-2 sentiment agreement: two SST-2 texts, label `same` when both have the same sentiment, else
  `different`, half of each. Training pairs are drawn from SST-2 train's phrases of at least 8 words (GLUE's
  train holds phrases of its sentences), 5% of those held out for the validation pairs; the test pairs from the
  872 dev sentences, which no training pair holds. Figures: accuracy and the F1 of `same` on test. Peer:
  LogisticRegression on [tfidf(a), tfidf(b), tfidf(a) * tfidf(b), |tfidf(a) - tfidf(b)|].
- multilabel: Multi30k: the German sentence in, as labels which of the 20 most frequent English nouns of a hand
  list (NOUNS, ranked by the number of train.en sentences holding them) its English translation holds, as whole
  lowercase words; rows holding none are left out (the zoo refuses an empty label set). train, val and
  test_2016_flickr are train, validation and test. Figures: micro F1, macro F1 and subset accuracy on test,
  threshold 0.5 for both. Peer: OneVsRestClassifier(LogisticRegression) on TF-IDF.

Each task's rows: the peer (scikit-learn, fitted on the train split alone, not tuned), the zoo from scratch
(`--preset=small`) and the zoo fine-tuned from all-MiniLM-L6-v2 (`--init_from`, benchmarks.common.minilm; the
`bench` extra), each `recipes.sentiment --mode=train_and_eval --eval_split=test` in a fresh run folder under
--bench_dir (an earlier one is removed: the time is a whole run's). Each task writes its own BENCHMARKS.md section,
`Task shapes: <task>`, from --bench_dir's results.json, so an arm run again alone keeps the others' rows.

  python -m benchmarks.tasks
  python -m benchmarks.tasks --shapes=pairs --arms=peer,minilm
  python -m benchmarks.tasks --quick   # a smoke run: tiny data, a few steps, BENCHMARKS.md untouched
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

from absl import app, flags

from benchmarks.common.report import ROOT, write_section

TASKS = ["regression", "pairs", "multilabel"]
ARMS = ["peer", "scratch", "minilm"]
flags.DEFINE_list("shapes", TASKS, f"Tasks to run: {', '.join(TASKS)}.")
flags.DEFINE_list("arms", ARMS, "Rows to run: peer (the scikit-learn model), scratch (the zoo's small preset from "
                  "scratch), minilm (the zoo fine-tuned from all-MiniLM-L6-v2).")
flags.DEFINE_string("data_dir", None, "Where the tasks' files are written (default runs/tasks_data, "
                    "runs/tasks_data_quick with --quick).")
flags.DEFINE_string("bench_dir", None, "Where the zoo's runs and results.json go (default runs/bench_tasks, "
                    "runs/bench_tasks_quick with --quick).")
flags.DEFINE_bool("quick", False, "A smoke run: tiny tasks (QUICK_SIZES), --quick_steps training steps a zoo run; "
                  "prints its tables and writes nothing in BENCHMARKS.md.")
flags.DEFINE_integer("quick_steps", 5, "Training steps of each zoo run with --quick.")
flags.DEFINE_bool("write_sections", True, "Write the sections into BENCHMARKS.md (never with --quick).")
FLAGS = flags.FLAGS

SEED = 0
SIZES = {
    "regression": {"train": 10000, "validation": 2000, "test": 2000},
    "pairs": {"train": 30000, "validation": 1000, "test": 2000},
    "multilabel": {"train": None, "validation": None, "test": None},  # None: every row that holds a label
}
QUICK_SIZES = {
    "regression": {"train": 200, "validation": 50, "test": 100},
    "pairs": {"train": 200, "validation": 50, "test": 100},
    "multilabel": {"train": 300, "validation": 50, "test": 100},
}
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
# The arms' training flags, each sized to about 5 (scratch) and 6 (MiniLM) minutes a run on a 2-core CPU, evaluation
# of the test split included: sized from BENCHMARKS.md's rates on a 2-core AMD EPYC in float32 (the `small` preset
# about 24,000 tokens/s on short texts; MiniLM about 800-1,000 tokens/s and 0.4 s a step), not tuned. Both warm up over
# about a tenth of their steps; MiniLM trains for a number of steps (a part of one pass over the training split) at
# BERT's fine-tuning rate scale.
ARM_FLAGS = {
    "regression": {
        "scratch": ["--preset=small", "--vocab_size=8000", "--max_length=256", "--epochs=3", "--batch_size=32",
                    "--learning_rate=1e-3", "--warmup_steps=90"],
        "minilm": ["--max_length=128", "--train_steps=100", "--batch_size=16", "--learning_rate=1e-4",
                   "--warmup_steps=10"],
    },
    "pairs": {
        "scratch": ["--preset=small", "--vocab_size=8000", "--max_length=128", "--epochs=3", "--batch_size=32",
                    "--learning_rate=1e-3", "--warmup_steps=280", "--label_smoothing=0"],
        "minilm": ["--max_length=128", "--train_steps=140", "--batch_size=32", "--learning_rate=1e-4",
                   "--warmup_steps=14", "--label_smoothing=0"],
    },
    "multilabel": {
        "scratch": ["--preset=small", "--vocab_size=8000", "--max_length=64", "--epochs=5", "--batch_size=32",
                    "--learning_rate=1e-3", "--warmup_steps=360", "--label_smoothing=0"],
        "minilm": ["--max_length=64", "--train_steps=240", "--batch_size=32", "--learning_rate=1e-4",
                   "--warmup_steps=24", "--label_smoothing=0"],
    },
}
FIGURES = {  # the test figures of each task: (metrics.json key, shown name)
    "regression": [("rmse", "RMSE"), ("mae", "MAE"), ("pearson", "Pearson"), ("spearman", "Spearman")],
    "pairs": [("accuracy", "accuracy"), ("f1", "F1 of `same`")],
    "multilabel": [("micro_f1", "micro F1"), ("macro_f1", "macro F1"), ("subset_accuracy", "subset accuracy")],
}
SECTIONS = {"regression": "Task shapes: regression", "pairs": "Task shapes: text pairs",
            "multilabel": "Task shapes: multi-label"}
ARM_NAMES = {"peer": None, "scratch": "zoo `small` from scratch", "minilm": "zoo fine-tuned from all-MiniLM-L6-v2"}
PEER_NAMES = {"regression": "TF-IDF + Ridge", "pairs": "TF-IDF [a, b, a*b, abs(a-b)] + LogisticRegression",
              "multilabel": "TF-IDF + OneVsRest(LogisticRegression)"}


# --- the tasks' data --------------------------------------------------------------------------------------------

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


# --- the linear peers ---------------------------------------------------------------------------------------------

def tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)


def regression_figures(labels, predictions):
    """RMSE, MAE, Pearson and Spearman (scikit-learn's and SciPy's), as the zoo's evaluation names them."""
    import numpy as np
    from scipy import stats
    from sklearn.metrics import mean_absolute_error, mean_squared_error

    labels, predictions = np.asarray(labels, float), np.asarray(predictions, float)
    return {"rmse": float(np.sqrt(mean_squared_error(labels, predictions))),
            "mae": float(mean_absolute_error(labels, predictions)),
            "pearson": float(stats.pearsonr(labels, predictions)[0]),
            "spearman": float(stats.spearmanr(labels, predictions)[0])}


def pair_figures(labels, predictions):
    """Accuracy and the F1 of `same` (scikit-learn's)."""
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": float(accuracy_score(labels, predictions)),
            "f1": float(f1_score(labels, predictions, pos_label="same", zero_division=0))}


def multilabel_figures(labels, predictions, names):
    """Micro and macro F1 and subset accuracy of label sets over `names` (scikit-learn's, zero_division=0)."""
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    binarize = MultiLabelBinarizer(classes=list(names))
    y, p = binarize.fit_transform(labels), binarize.transform(predictions)
    return {"micro_f1": float(f1_score(y, p, average="micro", zero_division=0)),
            "macro_f1": float(f1_score(y, p, average="macro", zero_division=0)),
            "subset_accuracy": float(accuracy_score(y, p))}


def pair_features(vectorizer, rows):
    """[tfidf(a), tfidf(b), tfidf(a) * tfidf(b), |tfidf(a) - tfidf(b)|], sparse."""
    import scipy.sparse

    a = vectorizer.transform([row["sentence_a"] for row in rows])
    b = vectorizer.transform([row["sentence_b"] for row in rows])
    return scipy.sparse.hstack([a, b, a.multiply(b), abs(a - b)]).tocsr()


def peer(task, folder):
    """The task's scikit-learn model fitted on the train split: its test figures, fitting and whole time."""
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import MultiLabelBinarizer

    began = time.time()
    train, test = (read_rows(os.path.join(folder, FILES[task].format(split=s))) for s in ("train", "test"))
    vectorizer = tfidf()
    if task == "regression":
        x = vectorizer.fit_transform([row["review"] for row in train])
        model = Ridge(alpha=1.0).fit(x, [float(row["rating"]) for row in train])
        fitted = time.time() - began
        predictions = model.predict(vectorizer.transform([row["review"] for row in test]))
        figures = regression_figures([float(row["rating"]) for row in test], predictions)
    elif task == "pairs":
        vectorizer.fit(sorted({row[side] for row in train for side in ("sentence_a", "sentence_b")}))
        model = LogisticRegression(max_iter=1000).fit(pair_features(vectorizer, train), [r["label"] for r in train])
        fitted = time.time() - began
        figures = pair_figures([row["label"] for row in test], model.predict(pair_features(vectorizer, test)))
    else:
        names = sorted({label for row in train for label in row["labels"]})
        binarize = MultiLabelBinarizer(classes=names)
        x = vectorizer.fit_transform([row["german"] for row in train])
        model = OneVsRestClassifier(LogisticRegression(max_iter=1000))
        model.fit(x, binarize.fit_transform([row["labels"] for row in train]))
        fitted = time.time() - began
        probabilities = model.predict_proba(vectorizer.transform([row["german"] for row in test]))
        predicted = [[name for name, p in zip(names, row) if p >= 0.5] for row in probabilities]
        figures = multilabel_figures([[l for l in row["labels"] if l in names] for row in test], predicted, names)
    return {"figures": figures, "train_seconds": fitted, "seconds": time.time() - began}


# --- the zoo ----------------------------------------------------------------------------------------------------

def shown(text):
    """A path or command as BENCHMARKS.md prints it: relative to the repository root."""
    return text.replace(ROOT + os.sep, "")


def zoo_flags(task, arm, folder, quick=False, steps=5):
    """The recipe flags of `task`'s `arm` reading the files in `folder`; with `quick`, `steps` training steps."""
    from benchmarks.common.minilm import minilm_folder

    flags_ = [flag.format(folder=folder) for flag in READ_FLAGS[task]] + ["--eval_split=test"]
    flags_ += ARM_FLAGS[task][arm]
    if arm == "minilm":
        flags_.append(f"--init_from={minilm_folder()}")
    if quick:
        flags_ = [f for f in flags_ if not f.startswith(("--epochs=", "--train_steps=", "--warmup_steps=",
                                                         "--vocab_size="))]
        flags_ += [f"--train_steps={steps}", "--warmup_steps=1", f"--checkpoint_every={steps}", "--log_every=1"]
        if arm == "scratch":
            flags_.append("--vocab_size=600")
    return flags_


def zoo_figures(task, evaluation):
    if task == "pairs":
        return {"accuracy": evaluation["accuracy"], "f1": evaluation["per_class"]["same"]["f1"]}
    return {key: evaluation[key] for key, _ in FIGURES[task]}


def zoo(task, arm, folder, run_dir, quick=False, steps=5):
    """Trains and evaluates the arm's `recipes.sentiment` run in a fresh run_dir: its test figures, training
    time (metrics.json's), the whole run's and the command."""
    from zoo.runs.run_dir import RunDir

    flags_ = zoo_flags(task, arm, folder, quick, steps)
    shutil.rmtree(run_dir, ignore_errors=True)
    command = [sys.executable, "-m", "recipes.sentiment", "--mode=train_and_eval", *flags_, f"--model_dir={run_dir}"]
    began = time.time()
    subprocess.run(command, cwd=ROOT, check=True)
    seconds = time.time() - began
    metrics = RunDir(run_dir).read_metrics()
    return {"figures": zoo_figures(task, metrics["eval_test"]), "train_seconds": metrics["train"]["seconds"],
            "seconds": seconds, "command": shown(" ".join(["python -m recipes.sentiment", *command[3:]]))}


# --- the report -----------------------------------------------------------------------------------------------

HOW = {
    "regression": "IMDB reviews scored by their star rating (1-4 and 7-10, from the archive's file names "
                  "`aclImdb/{{train,test}}/{{pos,neg}}/<id>_<rating>.txt`): a seeded {train:,} of IMDB train for "
                  "training, another {validation:,} for validation, a seeded {test:,} of IMDB test for the "
                  "figures; `--problem_type=regression`.",
    "pairs": "SST-2 sentiment agreement: two SST-2 texts, labelled `same` when both have the same sentiment, else "
             "`different`, half of each; {train:,} training and {validation:,} validation pairs drawn from SST-2 "
             f"train's distinct phrases of at least {PAIR_MIN_WORDS} words (GLUE's train holds phrases of its "
             f"sentences; a seeded {PAIR_HELD_OUT:.0%} of them held out for the validation pairs), {{test:,}} test "
             "pairs from the 872 dev sentences, which no training pair holds; `--text_pair_column`. Agreement is an "
             "exclusive or of the two sentiments: the linear peer reaches it only through the words the two texts "
             "share (the product and the difference).",
    "multilabel": f"Multi30k: the German sentence in; as labels, which of the {LABEL_COUNT} most frequent English "
                  "nouns of a hand list (by the number of train.en sentences holding them) its English translation "
                  "holds as whole lowercase words; rows holding none are left out (the zoo refuses an empty label "
                  "set). train, val and test_2016_flickr are the splits; `--problem_type=multi_label_classification`, "
                  "threshold 0.5 for the zoo and the peer. all-MiniLM-L6-v2's WordPiece vocabulary is English's: "
                  "it reads German in more, shorter pieces.",
}


def flag_value(flags_, name):
    return next((f.split("=", 1)[1] for f in flags_ if f.startswith(f"--{name}=")), None)


def budget(task):
    """A sentence on what each zoo arm trains on: sized to about 5 (scratch) and 6 (MiniLM) minutes a run."""
    scratch, minilm = ARM_FLAGS[task]["scratch"], ARM_FLAGS[task]["minilm"]
    examples = int(flag_value(minilm, "train_steps")) * int(flag_value(minilm, "batch_size"))
    return (f"The zoo's runs are sized to about 5 (scratch: {flag_value(scratch, 'epochs')} epochs, "
            f"{flag_value(scratch, 'max_length')} tokens) and 6 minutes (MiniLM: {flag_value(minilm, 'train_steps')} "
            f"steps of {flag_value(minilm, 'batch_size')}, {examples:,} training examples, "
            f"{flag_value(minilm, 'max_length')} tokens) on a 2-core CPU; neither is tuned.")


def duration(seconds):
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def cell(value, key):
    if value is None:
        return "–"
    return f"{value:.2%}" if key in ("accuracy", "subset_accuracy") else f"{value:.4f}"


def table(task, results, made, quick=False):
    """The task's section body: how the data was made (`made`: the rows written), one row an arm run so far, the
    commands."""
    heads = [name for _, name in FIGURES[task]]
    lines = [HOW[task].format(**(QUICK_SIZES if quick else SIZES)[task]) + " " + made, "",
             f"Test figures; peer: {PEER_NAMES[task]} (scikit-learn, TF-IDF of uni- and bigrams, min_df=2, "
             "sublinear tf, fitted on the train split, not tuned). Training: the peer's fitting (TF-IDF included), "
             "the zoo's `metrics.json` training time; whole run: everything, test evaluation included. "
             + budget(task), "",
             "| model | " + " | ".join(heads) + " | training | whole run |", "|---" * (len(heads) + 3) + "|"]
    commands = []
    for arm in ARMS:
        row = results.get(arm)
        if row is None:
            continue
        name = PEER_NAMES[task] if arm == "peer" else ARM_NAMES[arm]
        figures = " | ".join(cell(row["figures"][key], key) for key, _ in FIGURES[task])
        lines.append(f"| {name} | {figures} | {duration(row['train_seconds'])} | {duration(row['seconds'])} |")
        if "command" in row:
            commands.append(f"- {ARM_NAMES[arm]} ({row.get('day', 'undated')}): `{row['command']}`")
    data_command = "python -m benchmarks.tasks --shapes=" + task + " --arms=" + (" --quick" if quick else "")
    lines += ["", f"The files are this program's (`{data_command}` makes them alone). The zoo's runs:", *commands]
    return "\n".join(lines)


def main(argv):
    del argv
    unknown = (set(FLAGS.shapes) - set(TASKS)) | (set(FLAGS.arms) - set(ARMS))
    if unknown:
        raise app.UsageError(f"Unknown --shapes or --arms {sorted(unknown)}: tasks {TASKS}, arms {ARMS}.")
    quick = FLAGS.quick
    suffix = "_quick" if quick else ""
    data_dir = os.path.abspath(FLAGS.data_dir or os.path.join(ROOT, "runs", f"tasks_data{suffix}"))
    run_dir = os.path.abspath(FLAGS.bench_dir or os.path.join(ROOT, "runs", f"bench_tasks{suffix}"))
    os.makedirs(run_dir, exist_ok=True)
    results_path = os.path.join(run_dir, "results.json")
    results = json.load(open(results_path)) if os.path.exists(results_path) else {}
    sizes = QUICK_SIZES if quick else SIZES
    for task in FLAGS.shapes:
        folder = os.path.join(data_dir, task)
        began = time.time()
        made = build(task, folder, sizes[task])
        print(f"{task}: files in {folder} ({time.time() - began:.0f} s): {made}", flush=True)
        entry = results.setdefault(task, {})
        entry["made"] = made
        for arm in FLAGS.arms:
            if arm == "peer":
                entry[arm] = peer(task, folder)
            else:
                entry[arm] = zoo(task, arm, folder, os.path.join(run_dir, task, arm), quick, FLAGS.quick_steps)
            entry[arm]["day"] = time.strftime("%Y-%m-%d")
            print(f"{task} {arm}: {entry[arm]['figures']} ({entry[arm]['seconds']:.0f} s)", flush=True)
            with open(results_path, "w") as f:
                json.dump(results, f, indent=1)
        body = table(task, {arm: entry[arm] for arm in ARMS if arm in entry}, entry["made"], quick)
        if FLAGS.arms and FLAGS.write_sections and not quick:
            write_section(SECTIONS[task], body)
        print(body, flush=True)


if __name__ == "__main__":
    app.run(main)
