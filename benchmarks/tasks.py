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
  python -m benchmarks.tasks --quick   # a smoke run: tiny data, a few steps, its sections in a temporary file

The tasks' data is made by benchmarks/common/task_data.py.
"""

import json
import os
import time

from absl import app, flags

from benchmarks.common import quick as quick_module, runs
from benchmarks.common.report import ROOT, write_section
from benchmarks.common.task_data import FILES, LABEL_COUNT, PAIR_HELD_OUT, PAIR_MIN_WORDS, READ_FLAGS, build, read_rows

TASKS = ["regression", "pairs", "multilabel"]
ARMS = ["peer", "scratch", "minilm"]
flags.DEFINE_list("shapes", TASKS, f"Tasks to run: {', '.join(TASKS)}.")
flags.DEFINE_list("arms", ARMS, "Rows to run: peer (the scikit-learn model), scratch (the zoo's small preset from "
                  "scratch), minilm (the zoo fine-tuned from all-MiniLM-L6-v2).")
flags.DEFINE_string("data_dir", None, "Where the tasks' files are written (default runs/tasks_data; with --quick, a "
                    "temporary folder).")
flags.DEFINE_string("bench_dir", None, "Where the zoo's runs and results.json go (default runs/bench_tasks; with "
                    "--quick, a temporary folder).")
flags.DEFINE_integer("quick_steps", 5, "Training steps of each zoo run with --quick (tiny tasks: QUICK_SIZES).")
flags.DEFINE_bool("write_sections", True, "Write the sections into BENCHMARKS.md (with --quick: the quick report).")
FLAGS = flags.FLAGS

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
    flags_ = ["--mode=train_and_eval", *zoo_flags(task, arm, folder, quick, steps)]
    metrics, seconds = runs.fresh_run("sentiment", run_dir, *flags_)
    return {"figures": zoo_figures(task, metrics["eval_test"]), "train_seconds": metrics["train"]["seconds"],
            "seconds": seconds, "command": runs.relative(runs.command("sentiment", flags_, run_dir))}


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
    quick = quick_module.active()
    runs_dir = quick_module.folder("tasks") if quick else os.path.join(ROOT, "runs")
    data_dir = os.path.abspath(FLAGS.data_dir or os.path.join(runs_dir, "tasks_data"))
    run_dir = os.path.abspath(FLAGS.bench_dir or os.path.join(runs_dir, "bench_tasks"))
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
        if FLAGS.arms and FLAGS.write_sections:
            write_section(SECTIONS[task], body)
        print(body, flush=True)


if __name__ == "__main__":
    app.run(main)
