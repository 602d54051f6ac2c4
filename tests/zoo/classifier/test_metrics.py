"""zoo.classifier.metrics: the evaluation report's figures against hand-computed ones (and scikit-learn's
classification_report and confusion_matrix where it is installed), the table it prints, and the
predictions' lines."""

import json

import numpy as np
import pytest

from zoo.classifier import metrics

CLASSES = ("a", "b", "c")
# true a a a a b b c c c, predicted a a b c b a c c a; nothing is labelled "d", nothing predicted as it
LABELS = [0, 0, 0, 0, 1, 1, 2, 2, 2]
PREDICTIONS = [0, 0, 1, 2, 1, 0, 2, 2, 0]


def test_figures_equal_hand_computed_ones():
    report = metrics.classification_report(LABELS, PREDICTIONS, CLASSES)
    assert report["confusion_matrix"] == [[2, 1, 1], [1, 1, 0], [1, 0, 2]]
    assert report["accuracy"] == pytest.approx(5 / 9)
    # a: 2 of 4 predicted a are a, 2 of 4 a found; b: 1 of 2, 1 of 2; c: 2 of 3, 2 of 3
    expected = {"a": (2 / 4, 2 / 4, 0.5, 4), "b": (1 / 2, 1 / 2, 0.5, 2), "c": (2 / 3, 2 / 3, 2 / 3, 3)}
    for name, (precision, recall, f1, support) in expected.items():
        row = report["per_class"][name]
        assert (row["precision"], row["recall"], row["f1"]) == pytest.approx((precision, recall, f1))
        assert row["support"] == support
    assert report["macro_f1"] == pytest.approx((0.5 + 0.5 + 2 / 3) / 3)
    assert report["weighted_avg"]["f1"] == pytest.approx((4 * 0.5 + 2 * 0.5 + 3 * 2 / 3) / 9)


def test_a_class_never_predicted_or_never_present_counts_zero():
    report = metrics.classification_report([0, 0, 1, 1], [0, 0, 0, 0], ("x", "y", "z"))
    assert report["per_class"]["y"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    assert report["per_class"]["z"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert report["per_class"]["x"]["precision"] == pytest.approx(0.5)
    assert report["macro_f1"] == pytest.approx((2 / 3) / 3)


def test_equal_to_scikit_learn():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    labels, predictions = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    names = ["w", "x", "y", "z"]
    report = metrics.classification_report(labels, predictions, names)
    theirs = sklearn_metrics.classification_report(labels, predictions, labels=range(4), target_names=names,
                                                   output_dict=True, zero_division=0)
    for name in names:
        ours = report["per_class"][name]
        assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx(
            (theirs[name]["precision"], theirs[name]["recall"], theirs[name]["f1-score"]))
    assert report["macro_f1"] == pytest.approx(theirs["macro avg"]["f1-score"])
    assert report["weighted_avg"]["f1"] == pytest.approx(theirs["weighted avg"]["f1-score"])
    assert report["confusion_matrix"] == sklearn_metrics.confusion_matrix(labels, predictions).tolist()


def test_the_printed_table_names_every_class_and_figure():
    text = metrics.format_report(metrics.classification_report(LABELS, PREDICTIONS, CLASSES))
    lines = text.splitlines()
    assert lines[0].split() == ["precision", "recall", "f1-score", "support"]
    assert lines[2].split() == ["a", "0.5000", "0.5000", "0.5000", "4"]
    assert lines[4].split() == ["c", "0.6667", "0.6667", "0.6667", "3"]
    assert ["accuracy", "0.5556", "9"] in [line.split() for line in lines]
    assert lines[-4].split() == ["a", "b", "c"] and lines[-2].split() == ["b", "1", "1", "0"]


def test_predictions_lines_keep_the_order_and_every_probability():
    probabilities = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    lines = list(metrics.predictions_lines(['a "quoted", text\nwith a newline', "ü"], [1, 2], probabilities,
                                           CLASSES))
    first, second = (json.loads(line) for line in lines)
    assert first == {"text": 'a "quoted", text\nwith a newline', "label": "b", "prediction": "a",
                     "probabilities": {"a": 0.7, "b": 0.2, "c": 0.1}}
    assert second["text"] == "ü" and second["prediction"] == "c"
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)
