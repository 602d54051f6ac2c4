"""zoo.distill.training_set: the copies follow their texts with the texts' labels (gold without a teacher), the batch
fields index the set by row, and a regression teacher's scores are standardised with the student's own statistics."""

import types

import numpy as np

from zoo.classifier import data as classifier_data
from zoo.classifier.config import REGRESSION, SINGLE_LABEL
from zoo.classifier.distill_config import AugmentConfig
from zoo.classifier.run_config import SentimentData, SentimentRunConfig
from zoo.distill import augment, training_set

TEXTS = ["a wonderful film", "dull and far too long", "it is what it is"]


def examples(labels):
    rows = list(zip(TEXTS, labels))
    return classifier_data.Examples(lambda: iter(rows), len(rows), ("negative", "positive"), {"test": 1})


def test_copies_follow_their_texts_with_their_labels_and_count_as_gold_without_a_teacher():
    config = SentimentRunConfig(data=SentimentData("sst2"), augment=AugmentConfig(methods=("mask:0.5",), copies=2))
    taught = training_set.plan(config, examples([0, 1, 0]), seed=3)
    expected_copies = [copy for row, text in enumerate(TEXTS)
                       for copy in augment.Augmenter(config.augment, 3).copies(text, row)]
    assert [text for text, _ in taught.examples] == TEXTS + expected_copies
    assert [row for _, row in taught.examples] == list(range(9))
    np.testing.assert_array_equal(taught.labels, [0, 1, 0, 0, 0, 1, 1, 0, 0])
    np.testing.assert_array_equal(taught.gold, np.ones(9))
    assert taught.teacher is None and taught.derived == {}


def test_a_run_without_teacher_transfer_or_copies_has_no_training_set():
    assert training_set.plan(SentimentRunConfig(data=SentimentData("sst2")), examples([0, 1, 0]), seed=0) is None


def test_fields_index_by_row_and_standardise_a_regressions_labels_and_teacher():
    taught = training_set.TrainingSet(None, np.array([1.0, 3.0, 5.0]), np.array([1.0, 1.0, 0.0], np.float32),
                                      np.array([[2.0], [4.0], [6.0]], np.float32), {})
    rows = types.SimpleNamespace(labels=np.array([2, 0, 1]))
    fields = taught.fields(rows, REGRESSION, {"mean": 3.0, "std": 2.0})
    np.testing.assert_allclose(fields["label"], [1.0, -1.0, 0.0])
    np.testing.assert_allclose(fields["teacher"], [[1.5], [-0.5], [0.5]])
    np.testing.assert_array_equal(fields["gold"], [0.0, 1.0, 1.0])
    assert fields["token_ids"] is rows and fields["teacher"].dtype == np.float32


def test_single_label_fields_keep_class_ids():
    taught = training_set.TrainingSet(None, np.array([1, 0], np.int32), np.ones(2, np.float32),
                                      np.zeros((2, 2), np.float32), {})
    fields = taught.fields(types.SimpleNamespace(labels=np.array([1, 0])), SINGLE_LABEL)
    np.testing.assert_array_equal(fields["label"], [0, 1])
    assert fields["label"].dtype == np.int32
