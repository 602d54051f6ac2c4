"""benchmarks/common/nbsvm.py, the one NBSVM-style peer (benchmarks.transfer, benchmarks.glove,
benchmarks.own_data): Wang & Manning's log-count ratio and logistic regression written out here with scikit-learn
and NumPy, for two classes (one model) and for four (one against the rest)."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from benchmarks.common import nbsvm  # noqa: E402
from zoo.data import datasets  # noqa: E402

TRAIN = ["a fine film", "i loved it", "not a good film", "dull and long", "a gorgeous story", "far too long",
         "witty and moving", "it was not good", "i loved the story", "a dull mess"]
POSITIVE = [1, 1, 0, 0, 1, 0, 1, 0, 1, 0]
TEST = ["a good story", "not fine", "long and dull", "i loved a film", "gorgeous"]


def reference(train, labels, texts, positive):
    """Decision values of one class (`positive`) against the rest, by the paper's formula."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    counts = CountVectorizer(ngram_range=(1, 2), binary=True, token_pattern=r"(?u)\b\w+\b")
    x = counts.fit_transform(train).toarray()
    y = (np.asarray(labels) == positive).astype(int)
    p, q = x[y == 1].sum(axis=0) + 1.0, x[y == 0].sum(axis=0) + 1.0
    r = np.log((p / p.sum()) / (q / q.sum()))
    model = LogisticRegression(C=0.1, solver="liblinear", dual=True, max_iter=1000).fit(x * r, y)
    return model.decision_function(counts.transform(texts).toarray() * r)


def test_two_classes_are_one_model_of_the_second_against_the_first():
    expected = [int(d > 0) for d in reference(TRAIN, POSITIVE, TEST, 1)]
    assert nbsvm.predict(TRAIN, POSITIVE, TEST) == expected
    named = ["good" if y else "bad" for y in POSITIVE]  # the labels' own kind comes back
    assert nbsvm.predict(TRAIN, named, TEST) == [["bad", "good"][y] for y in expected]


def test_more_classes_are_one_against_the_rest_by_the_highest_decision():
    stars = ["9-10", "7-8", "1-2", "3-4", "9-10", "1-2", "7-8", "3-4", "9-10", "1-2"]
    classes = sorted(set(stars))
    decisions = np.stack([reference(TRAIN, stars, TEST, name) for name in classes], axis=1)
    assert nbsvm.predict(TRAIN, stars, TEST) == [classes[i] for i in decisions.argmax(axis=1)]


def test_imdbs_peer_trains_on_its_held_out_part_too_and_a_limit_cuts_every_split(monkeypatch):
    read = []

    def load(dataset, split):
        read.append((dataset, split))
        texts = {"train": TRAIN[:6], "validation": TRAIN[6:], "test": TEST}[split]
        labels = {"train": POSITIVE[:6], "validation": POSITIVE[6:], "test": [1, 0, 0, 1, 1]}[split]
        return datasets.Classification(list(texts), np.asarray(labels), ("negative", "positive"))

    monkeypatch.setattr(datasets, "load_classification", load)
    result = nbsvm.accuracy("imdb", "test")
    assert read == [("imdb", "train"), ("imdb", "test"), ("imdb", "validation")]
    predicted = nbsvm.predict(TRAIN, POSITIVE, TEST)
    assert result["accuracy"] == pytest.approx(np.mean(np.asarray(predicted) == [1, 0, 0, 1, 1]))
    read.clear()
    limited = nbsvm.accuracy("sst2", "test", limit=4)
    assert read == [("sst2", "train"), ("sst2", "test")]
    predicted = nbsvm.predict(TRAIN[:4], POSITIVE[:4], TEST[:4])
    assert limited["accuracy"] == pytest.approx(np.mean(np.asarray(predicted) == [1, 0, 0, 1]))
