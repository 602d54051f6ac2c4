"""zoo/classifier's model files, each against a reference written apart from it: the head on the <s> token's
state, padding that changes nothing, layer depths counted by hand, the losses in NumPy, the servers' answers
worked out by hand, and the presets' sizes as docs/training.md's table gives them."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo.classifier import losses, server
from zoo.classifier.config import MULTI_LABEL, REGRESSION, SINGLE_LABEL, ClassifierConfig
from zoo.classifier.model import build_classifier, build_encoder, encoder_blocks, layer_depths
from zoo.classifier.presets import PRESETS

SMALL = ClassifierConfig(vocab_size=50, num_classes=3, hidden_dim=16, num_heads=2, intermediate_dim=32, num_layers=2,
                         max_length=16, dropout=0.0)


def test_the_head_classifies_the_start_tokens_final_state():
    keras.utils.set_random_seed(0)
    model = build_classifier(SMALL)
    tokens = np.array([[1, 7, 9, 4, 0, 0], [1, 3, 0, 0, 0, 0]], np.int32)
    encoder = keras.Model(model.input, model.get_layer("encoder_1").output)
    kernel, bias = model.get_layer("logits").get_weights()
    expected = encoder(tokens).numpy()[:, 0] @ kernel + bias
    np.testing.assert_allclose(model(tokens).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_padding_changes_nothing_and_the_logits_are_float32_under_mixed_precision():
    keras.utils.set_random_seed(0)
    tokens = np.array([[1, 7, 9, 4]], np.int32)
    padded = np.array([[1, 7, 9, 4, 0, 0, 0]], np.int32)
    model = build_classifier(SMALL)
    np.testing.assert_allclose(model(tokens).numpy(), model(padded).numpy(), rtol=1e-5, atol=1e-6)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        assert build_classifier(SMALL)(tokens).dtype == tf.float32
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_a_pair_model_starts_as_its_single_text_model_and_then_reads_segments():
    keras.utils.set_random_seed(0)
    single = build_classifier(SMALL)
    keras.utils.set_random_seed(0)
    model = build_classifier(ClassifierConfig(**{**SMALL.__dict__, "num_segments": 2}))
    tokens = np.array([[1, 7, 9, 2, 4, 5]], np.int32)
    first = {"token_ids": tokens, "segment_ids": np.array([[0, 0, 0, 0, 1, 1]], np.int32)}
    other = {"token_ids": tokens, "segment_ids": np.array([[0, 0, 1, 1, 1, 1]], np.int32)}
    # The segment embedding starts at zero: the same answer as without segments, whatever they are.
    np.testing.assert_allclose(model(first).numpy(), single(tokens).numpy(), rtol=1e-5, atol=1e-6)
    segments = model.get_layer("embedding").segment_embedding
    segments.set_weights([np.random.default_rng(0).normal(size=(2, 16)).astype("float32")])
    assert model(first).shape == (1, 3) and np.abs(model(first).numpy() - model(other).numpy()).max() > 1e-4


def test_layer_depths_count_down_from_the_head_to_the_embedding():
    model = build_classifier(ClassifierConfig(**{**SMALL.__dict__, "norm_first": True}))
    by_layer = {}
    for variable, depth in zip(model.trainable_variables, layer_depths(model)):
        by_layer.setdefault(variable.path.split("/")[0], set()).add(depth)
    assert by_layer == {"embedding": {3}, "encoder_0": {2}, "encoder_1": {1}, "encoder_final_norm": {1}, "logits": {0}}
    assert [block.name for block in encoder_blocks(model)] == ["encoder_0", "encoder_1"]


def test_a_narrower_embedding_goes_through_a_projection():
    encoder = build_encoder(ClassifierConfig(**{**SMALL.__dict__, "embedding_dim": 8}))
    assert encoder.get_layer("encoder_projection").kernel.shape == (8, 16)
    assert encoder(np.array([[1, 2, 3]], np.int32)).shape == (1, 3, 16)


def numpy_losses(problem_type, labels, logits, smoothing):
    if problem_type == REGRESSION:
        return (logits[:, 0] - labels) ** 2
    if problem_type == MULTI_LABEL:
        targets = labels * (1 - smoothing) + 0.5 * smoothing
        probabilities = 1 / (1 + np.exp(-logits))
        return -(targets * np.log(probabilities) + (1 - targets) * np.log(1 - probabilities)).mean(axis=-1)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    targets = np.eye(logits.shape[-1])[labels] * (1 - smoothing) + smoothing / logits.shape[-1]
    return -(targets * log_probabilities).sum(axis=-1)


@pytest.mark.parametrize("problem_type, labels", [
    (SINGLE_LABEL, np.array([0, 2])),
    (REGRESSION, np.array([0.5, -1.5], np.float32)),
    (MULTI_LABEL, np.array([[1, 0, 1], [0, 0, 1]], np.float32)),
])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_each_problem_types_loss_matches_numpy(problem_type, labels, smoothing):
    if problem_type == REGRESSION and smoothing:
        pytest.skip("a regression has no label smoothing (refused by its config)")
    logits = np.array([[2.0, -1.0, 0.5], [0.1, 0.2, -3.0]], np.float32)
    got = losses.example_losses(problem_type, tf.constant(labels), tf.constant(logits), smoothing).numpy()
    np.testing.assert_allclose(got, numpy_losses(problem_type, labels, logits, smoothing), rtol=1e-5, atol=1e-6)


class Identity:
    """A preprocessor whose 'tokens' are the logits themselves, with a model that passes them through."""

    pairs = False
    signature = [tf.TensorSpec([None, 3], tf.float32)]

    def __call__(self, texts):
        return texts


def served(module, logits):
    return {name: value.numpy() for name, value in module.answer(tf.constant(logits, tf.float32)).items()}


def test_the_servers_answer_labels_scores_and_label_sets_as_worked_out_by_hand():
    model = keras.Sequential([keras.layers.Identity()])
    logits = [[0.0, 2.0, -1.0], [3.0, -2.0, 1.0]]
    single = served(server.ClassifierServer(model, Identity(), ["a", "b", "c"]), logits)
    assert single["label"].tolist() == [b"b", b"a"] and single["label_id"].tolist() == [1, 0]
    np.testing.assert_allclose(single["probabilities"].sum(axis=-1), [1.0, 1.0], rtol=1e-6)
    regression = served(server.RegressionServer(model, Identity(), mean=10.0, std=2.0), logits)
    np.testing.assert_allclose(regression["score"], [10.0, 16.0])
    multi = served(server.MultiLabelServer(model, Identity(), ["a", "b", "c"], threshold=0.6), logits)
    # sigmoid: [0.5, 0.88, 0.27] and [0.95, 0.12, 0.73]: b alone, then a and c, in label order
    assert multi["labels"].tolist() == [[b"b", b"", b""], [b"a", b"c", b""]]
    assert multi["label_count"].tolist() == [1, 2]


@pytest.mark.parametrize("name, parameters", [("tiny", 264_610), ("small", 1_420_802), ("medium", 5_207_554),
                                              ("base", 23_011_330)])
def test_each_preset_has_the_size_the_docs_give(name, parameters):
    model = build_classifier(PRESETS[name])
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == parameters
