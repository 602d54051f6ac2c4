"""benchmarks.tasks: the three tasks' builders (seeded, disjoint splits, labels as described, files the zoo reads),
the linear peers' figures on tiny data against hand-computed and scikit-learn's, and the report's rows. Nothing
trains here but the one test marked slow."""

import io
import json
import math
import os
import tarfile

import numpy as np
import pytest

from benchmarks import tasks
from benchmarks.common import task_data
from zoo.classifier import data as classifier_data

pytest.importorskip("sklearn")


# --- fake sources, in the shapes the readers return ---------------------------------------------------------

def fake_reviews():
    """imdb_reviews()' tuples: 30 train and 20 test reviews of each polarity, ratings by id."""
    reviews = []
    for folder, count in (("train", 30), ("test", 20)):
        for polarity, ratings in (("neg", (1, 2, 3, 4)), ("pos", (7, 8, 9, 10))):
            for i in range(count):
                rating = ratings[i % 4]
                reviews.append((f"{folder}/{polarity}/{i}", rating, f"{polarity} review {folder} {i} rated {rating}"))
    return reviews[::-1]  # not in the archive's order: the builder must not depend on it


def fake_sst2():
    """sst2_sentences()' dict: train phrases of 8 words or more and shorter ones, dev sentences."""
    words = "one two three four five six seven eight nine".split()
    train = [(" ".join([f"t{i}", *words[: 7 + i % 3]]), i % 2) for i in range(200)]
    train += [(f"short {i}", i % 2) for i in range(20)]  # under 8 words: left out
    train += [train[0]]  # a phrase twice: counted once
    dev = [(" ".join([f"d{i}", *words]), (i // 2) % 2) for i in range(16)]
    return {"train": train, "dev": dev}


def fake_multi30k():
    """multi30k_sentences()' dict: German and English sentences; 'dog' is in most train sentences, 'cat' in none."""
    english = {"train": ["A man and a dog.", "A dog runs.", "Two dogs play.", "A woman, a man.", "The sky.",
                         "A Man with a DOG.", "Children play.", "A woman sings."],
               "validation": ["A dog.", "Nothing here.", "A woman."],
               "test": ["A man.", "A dog and a woman.", "The street.", "Mandolins."]}
    return {split: ([f"de {split} {i}" for i in range(len(en))], en) for split, en in english.items()}


def columns_of(task):
    """classifier_data.Columns as the task's READ_FLAGS give them to the recipe."""
    given = dict(flag.removeprefix("--").split("=", 1) for flag in tasks.READ_FLAGS[task])
    return classifier_data.Columns(text=given["text_column"], label=given["label_column"],
                                   text_pair=given.get("text_pair_column"),
                                   problem_type=given.get("problem_type", classifier_data.SINGLE_LABEL))


def written(task, splits, folder):
    """Writes `splits` as build() does and returns the --dataset the recipe gets."""
    columns = ["id", "review", "rating"] if task == "regression" else None
    for split, rows in splits.items():
        task_data.write_rows(os.path.join(folder, tasks.FILES[task].format(split=split)), rows, columns)
    dataset = tasks.READ_FLAGS[task][0].removeprefix("--dataset=").format(folder=folder)
    return dataset


# --- regression -----------------------------------------------------------------------------------------------

def test_imdb_reviews_reads_ratings_from_the_archives_names(tmp_path, monkeypatch):
    archive_path = tmp_path / "aclImdb.tar.gz"
    with tarfile.open(archive_path, "w:gz") as archive:
        for name, text in (("aclImdb/train/pos/12_9.txt", "Fine.<br />Very."), ("aclImdb/test/neg/3_2.txt", "Bad."),
                           ("aclImdb/train/unsup/5_0.txt", "No label."), ("aclImdb/README", "About.")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    from zoo.data import datasets

    monkeypatch.setattr(datasets, "fetch", lambda source: str(archive_path))
    assert sorted(task_data.imdb_reviews()) == [("test/neg/3", 2, "Bad."), ("train/pos/12", 9, "Fine. Very.")]


def test_regression_splits_are_seeded_disjoint_and_labelled_by_the_rating():
    reviews = fake_reviews()
    sizes = {"train": 30, "validation": 10, "test": 25}
    splits = task_data.make_regression(reviews, sizes)
    assert splits == task_data.make_regression(list(reversed(reviews)), sizes)  # the same whatever the order read
    assert splits != task_data.make_regression(reviews, sizes, seed=1)
    assert {split: len(rows) for split, rows in splits.items()} == sizes
    ids = {split: {row["id"] for row in rows} for split, rows in splits.items()}
    assert not ids["train"] & ids["validation"] and all(len(ids[s]) == sizes[s] for s in sizes)
    assert all(i.startswith("train/") for i in ids["train"] | ids["validation"])
    assert all(i.startswith("test/") for i in ids["test"])
    by_id = {key: (rating, text) for key, rating, text in reviews}
    for rows in splits.values():
        for row in rows:
            assert (row["rating"], row["review"]) == by_id[row["id"]]
            assert row["rating"] in (1, 2, 3, 4, 7, 8, 9, 10)
    with pytest.raises(ValueError, match="more reviews"):
        task_data.make_regression(reviews, {"train": 50, "validation": 20, "test": 5})


def test_the_zoo_reads_the_regression_files(tmp_path):
    splits = task_data.make_regression(fake_reviews(), {"train": 30, "validation": 10, "test": 25})
    dataset = written("regression", splits, str(tmp_path))
    for split, rows in splits.items():
        examples = classifier_data.load(dataset, split, columns_of("regression"))
        assert examples.count == len(rows)
        np.testing.assert_array_equal(examples.targets.values, [row["rating"] for row in rows])
        assert list(examples.texts()) == [row["review"] for row in rows]


# --- pairs ----------------------------------------------------------------------------------------------------

def test_pairs_are_balanced_labelled_by_agreement_and_test_holds_only_dev_sentences():
    sentences = fake_sst2()
    sizes = {"train": 40, "validation": 10, "test": 30}
    splits = task_data.make_pairs(sentences, sizes)
    assert splits == task_data.make_pairs(sentences, sizes)
    assert splits != task_data.make_pairs(sentences, sizes, seed=1)
    sentiment = {**dict(sentences["train"]), **dict(sentences["dev"])}
    sides = {}
    for split, rows in splits.items():
        assert len(rows) == sizes[split]
        assert sum(row["label"] == "same" for row in rows) == math.ceil(sizes[split] / 2)  # every second pair
        for row in rows:
            a, b = row["sentence_a"], row["sentence_b"]
            assert a != b
            assert row["label"] == ("same" if sentiment[a] == sentiment[b] else "different")
        sides[split] = {row[side] for row in rows for side in ("sentence_a", "sentence_b")}
    dev = {text for text, _ in sentences["dev"]}
    assert sides["test"] <= dev
    assert not (sides["train"] | sides["validation"]) & dev
    assert not sides["train"] & sides["validation"]  # validation's phrases are held out of training's
    assert all(len(text.split()) >= tasks.PAIR_MIN_WORDS for text in sides["train"] | sides["validation"])


def test_pairs_need_a_second_sentence_of_each_sentiment():
    rng = np.random.default_rng(0)
    rows = task_data.draw_pairs([("good", 1), ("bad", 0), ("fine", 1), ("awful", 0)], 40, rng)
    assert {row["label"] for row in rows} == {"same", "different"}
    with pytest.raises(ValueError, match="too few sentences"):
        task_data.draw_pairs([("good", 1), ("bad", 0)], 2, rng)


def test_the_zoo_reads_the_pair_files(tmp_path):
    splits = task_data.make_pairs(fake_sst2(), {"train": 40, "validation": 10, "test": 30})
    dataset = written("pairs", splits, str(tmp_path))
    examples = classifier_data.load(dataset, "train", columns_of("pairs"))
    assert examples.class_names == ("different", "same")
    rows = list(examples)
    assert [text for text, _ in rows] == [(row["sentence_a"], row["sentence_b"]) for row in splits["train"]]
    assert [examples.class_names[i] for _, i in rows] == [row["label"] for row in splits["train"]]
    test = classifier_data.load(dataset, "test", columns_of("pairs"), class_names=examples.class_names)
    assert test.count == 30


# --- multi-label ------------------------------------------------------------------------------------------------

def test_label_nouns_rank_the_hand_list_by_sentences_holding_them():
    english = ["a dog and a man", "a dog", "dogs", "a Man", "a woman, a dog"]
    # dog 3 sentences ("dogs" is another word), man 2, woman 1; the rest of NOUNS none: NOUNS' order.
    assert task_data.label_nouns(english, count=5) == ["dog", "man", "woman", *[n for n in task_data.NOUNS
                                                                             if n not in ("dog", "man", "woman")][:2]]


def test_multilabel_rows_hold_the_nouns_of_their_english_and_rows_without_are_left_out(monkeypatch):
    monkeypatch.setattr(task_data, "LABEL_COUNT", 3)
    sentences = fake_multi30k()
    splits, nouns = task_data.make_multilabel(sentences, {"train": None, "validation": None, "test": None})
    assert nouns == ["man", "dog", "woman"]  # man 3 sentences (case folded), dog 3 (man first in NOUNS), woman 2
    assert splits["train"] == [
        {"german": "de train 0", "labels": ["man", "dog"]}, {"german": "de train 1", "labels": ["dog"]},
        {"german": "de train 3", "labels": ["man", "woman"]}, {"german": "de train 5", "labels": ["man", "dog"]},
        {"german": "de train 7", "labels": ["woman"]}]
    assert splits["validation"] == [{"german": "de validation 0", "labels": ["dog"]},
                                    {"german": "de validation 2", "labels": ["woman"]}]
    # "Mandolins" holds no noun as a whole word; the German of a row is its own sentence's.
    assert splits["test"] == [{"german": "de test 0", "labels": ["man"]},
                              {"german": "de test 1", "labels": ["dog", "woman"]}]
    sampled, _ = task_data.make_multilabel(sentences, {"train": 3, "validation": None, "test": None})
    assert sampled == task_data.make_multilabel(sentences, {"train": 3, "validation": None, "test": None})[0]
    assert len(sampled["train"]) == 3 and all(row in splits["train"] for row in sampled["train"])
    assert [splits["train"].index(row) for row in sampled["train"]] == sorted(  # kept in their order
        splits["train"].index(row) for row in sampled["train"])


def test_the_zoo_reads_the_multilabel_files(tmp_path, monkeypatch):
    monkeypatch.setattr(task_data, "LABEL_COUNT", 3)
    splits, nouns = task_data.make_multilabel(fake_multi30k(), {"train": None, "validation": None, "test": None})
    dataset = written("multilabel", splits, str(tmp_path))
    examples = classifier_data.load(dataset, "train", columns_of("multilabel"))
    assert examples.class_names == tuple(sorted(nouns))
    expected = [[int(name in row["labels"]) for name in sorted(nouns)] for row in splits["train"]]
    np.testing.assert_array_equal(examples.targets.values, expected)
    assert list(examples.texts()) == [row["german"] for row in splits["train"]]


def test_build_writes_every_split_in_the_recipes_form(tmp_path, monkeypatch):
    monkeypatch.setattr(task_data, "sst2_sentences", fake_sst2)
    made = task_data.build("pairs", str(tmp_path / "pairs"), {"train": 8, "validation": 4, "test": 6})
    assert made == "Rows: train 8, validation 4, test 6."
    assert sorted(os.listdir(tmp_path / "pairs")) == ["test.jsonl", "train.jsonl", "validation.jsonl"]
    with open(tmp_path / "pairs" / "test.jsonl") as f:
        assert len([json.loads(line) for line in f]) == 6


# --- the peers' figures -------------------------------------------------------------------------------------------

def test_regression_figures_against_hand_computed_values():
    figures = tasks.regression_figures([1, 2, 3, 4], [2, 2, 3, 6])
    # errors 1, 0, 0, 2: MSE 5/4, MAE 3/4; Spearman: ranks 1,2,3,4 against 1.5,1.5,3,4.
    assert figures["rmse"] == pytest.approx(math.sqrt(5 / 4))
    assert figures["mae"] == pytest.approx(0.75)
    x, y = np.array([1, 2, 3, 4.0]), np.array([2, 2, 3, 6.0])
    pearson = ((x - x.mean()) @ (y - y.mean())) / math.sqrt(((x - x.mean()) ** 2).sum() * ((y - y.mean()) ** 2).sum())
    assert figures["pearson"] == pytest.approx(pearson)
    ranks = np.array([1.5, 1.5, 3, 4])
    spearman = ((x - 2.5) @ (ranks - 2.5)) / math.sqrt(((x - 2.5) ** 2).sum() * ((ranks - 2.5) ** 2).sum())
    assert figures["spearman"] == pytest.approx(spearman)


def test_pair_figures_against_hand_computed_values():
    labels = ["same", "same", "different", "different", "same"]
    predicted = ["same", "different", "same", "different", "same"]
    # same: 2 true positives, 1 false positive, 1 false negative: precision 2/3, recall 2/3, F1 2/3.
    assert tasks.pair_figures(labels, predicted) == pytest.approx({"accuracy": 0.6, "f1": 2 / 3})


def test_multilabel_figures_against_hand_computed_values():
    labels = [["a"], ["a", "b"], ["c"], []]
    predicted = [["a"], ["a"], ["b"], []]
    # a: tp 2; b: fn 1, fp 1; c: fn 1. Micro: tp 2, fp 1, fn 2 -> 4 / (4 + 3). Macro: a 1, b 0, c 0 -> 1/3.
    figures = tasks.multilabel_figures(labels, predicted, ["a", "b", "c"])
    assert figures == pytest.approx({"micro_f1": 4 / 7, "macro_f1": 1 / 3, "subset_accuracy": 0.5})


def tiny_folder(task, tmp_path):
    if task == "regression":
        splits = task_data.make_regression(fake_reviews(), {"train": 40, "validation": 10, "test": 30})
    elif task == "pairs":
        splits = task_data.make_pairs(fake_sst2(), {"train": 40, "validation": 10, "test": 30})
    else:
        english = ["a man", "a dog", "a man and a dog", "a woman", "a woman and a man", "a dog and a woman"] * 4
        german = ["ein Mann", "ein Hund", "ein Mann und ein Hund", "eine Frau", "eine Frau und ein Mann",
                  "ein Hund und eine Frau"] * 4
        sentences = {split: (german, english) for split in ("train", "validation", "test")}
        splits, _ = task_data.make_multilabel(sentences, {"train": None, "validation": None, "test": None})
    tmp_path.mkdir(exist_ok=True)
    written(task, splits, str(tmp_path))
    return str(tmp_path), splits


@pytest.mark.parametrize("task", tasks.TASKS)
def test_the_peer_is_scikit_learns_model_on_the_train_split_scored_on_test(task, tmp_path):
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import accuracy_score, f1_score, mean_absolute_error, mean_squared_error
    from sklearn.multiclass import OneVsRestClassifier

    folder, splits = tiny_folder(task, tmp_path)
    result = tasks.peer(task, folder)
    train, test = splits["train"], splits["test"]
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    if task == "regression":
        model = Ridge().fit(vectorizer.fit_transform([r["review"] for r in train]), [r["rating"] for r in train])
        predicted = model.predict(vectorizer.transform([r["review"] for r in test]))
        expected = [r["rating"] for r in test]
        assert result["figures"]["rmse"] == pytest.approx(math.sqrt(mean_squared_error(expected, predicted)))
        assert result["figures"]["mae"] == pytest.approx(mean_absolute_error(expected, predicted))
        assert result["figures"]["pearson"] == pytest.approx(np.corrcoef(expected, predicted)[0, 1])
    elif task == "pairs":
        vectorizer.fit(sorted({r[s] for r in train for s in ("sentence_a", "sentence_b")}))

        def features(rows):
            a = vectorizer.transform([r["sentence_a"] for r in rows]).toarray()
            b = vectorizer.transform([r["sentence_b"] for r in rows]).toarray()
            return sparse.csr_matrix(np.hstack([a, b, a * b, np.abs(a - b)]))

        model = LogisticRegression(max_iter=1000).fit(features(train), [r["label"] for r in train])
        predicted, expected = model.predict(features(test)), [r["label"] for r in test]
        assert result["figures"] == pytest.approx({"accuracy": accuracy_score(expected, predicted),
                                                   "f1": f1_score(expected, predicted, pos_label="same")})
    else:
        names = sorted({name for r in train for name in r["labels"]})
        y = np.array([[int(n in r["labels"]) for n in names] for r in train])
        model = OneVsRestClassifier(LogisticRegression(max_iter=1000)).fit(
            vectorizer.fit_transform([r["german"] for r in train]), y)
        predicted = (model.predict_proba(vectorizer.transform([r["german"] for r in test])) >= 0.5).astype(int)
        expected = np.array([[int(n in r["labels"]) for n in names] for r in test])
        assert result["figures"] == pytest.approx({
            "micro_f1": f1_score(expected, predicted, average="micro", zero_division=0),
            "macro_f1": f1_score(expected, predicted, average="macro", zero_division=0),
            "subset_accuracy": accuracy_score(expected, predicted)})
    assert 0 <= result["train_seconds"] <= result["seconds"]


# --- the zoo's flags, figures and the report ------------------------------------------------------------------------

def test_zoo_flags_read_the_tasks_files_and_quick_runs_take_a_few_steps(monkeypatch):
    from benchmarks.common import minilm

    monkeypatch.setattr(minilm, "minilm_folder", lambda: "/ckpt/minilm")
    full = tasks.zoo_flags("pairs", "minilm", "/data/pairs")
    assert full[:5] == ["--dataset=jsonl:/data/pairs/{split}.jsonl", "--text_column=sentence_a",
                        "--text_pair_column=sentence_b", "--label_column=label", "--eval_split=test"]
    assert "--init_from=/ckpt/minilm" in full and "--train_steps=140" in full
    quick = tasks.zoo_flags("regression", "scratch", "/data/r", quick=True, steps=3)
    assert "--dataset=csv:/data/r/{split}.csv" in quick and "--problem_type=regression" in quick
    assert not [f for f in quick if f.startswith("--epochs=")]
    assert [f for f in quick if f.startswith(("--train_steps=", "--vocab_size="))] == ["--train_steps=3",
                                                                                      "--vocab_size=600"]


def test_zoo_figures_and_the_table():
    evaluation = {"accuracy": 0.75, "macro_f1": 0.7, "per_class": {"same": {"f1": 0.8}, "different": {"f1": 0.6}}}
    assert tasks.zoo_figures("pairs", evaluation) == {"accuracy": 0.75, "f1": 0.8}
    results = {"peer": {"figures": {"accuracy": 0.5, "f1": 0.4}, "train_seconds": 2.0, "seconds": 3.0},
               "minilm": {"figures": {"accuracy": 0.75, "f1": 0.8}, "train_seconds": 300.0, "seconds": 345.0,
                          "command": "python -m recipes.sentiment --x"}}
    body = tasks.table("pairs", results, "Rows: train 1, validation 1, test 1.")
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    assert rows[1:] == [f"| {tasks.PEER_NAMES['pairs']} | 50.00% | 0.4000 | 2 s | 3 s |",
                        "| zoo fine-tuned from all-MiniLM-L6-v2 | 75.00% | 0.8000 | 5.0 min | 5.8 min |"]
    assert all(line.count("|") == 6 for line in rows)  # no cell breaks the table
    assert "- zoo fine-tuned from all-MiniLM-L6-v2 (undated): `python -m recipes.sentiment --x`" in body
    assert "MiniLM: 140 steps of 32, 4,480 training examples, 128 tokens" in body
    assert "30,000 training and 1,000 validation pairs" in body and "Rows: train 1" in body


@pytest.mark.slow
def test_a_quick_zoo_run_reports_its_test_figures(tmp_path):
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyzäöü")
    english = [["a man", "a dog", "a man and a dog", "a woman"][i % 4] for i in range(300)]
    german = [" ".join("".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(8)) for _ in english]
    splits, _ = task_data.make_multilabel({split: (german, english) for split in ("train", "validation", "test")},
                                      {"train": None, "validation": 20, "test": 20})
    folder = str(tmp_path / "data")
    os.makedirs(folder)
    written("multilabel", splits, folder)  # words enough for the quick run's 600 pieces
    result = tasks.zoo("multilabel", "scratch", folder, str(tmp_path / "run"), quick=True, steps=2)
    assert set(result["figures"]) == {"micro_f1", "macro_f1", "subset_accuracy"}
    assert result["command"].startswith("python -m recipes.sentiment --mode=train_and_eval --dataset=jsonl:")
