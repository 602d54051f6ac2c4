"""zoo.pretraining.pretrained (fine-tuning from a pretraining run), and the layer-wise learning rates
it uses: zoo.training.optimization.make_optimizer(rate_scales=...) and zoo.classifier.model.layer_depths."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

import zoo  # noqa: F401  (TensorFlow backend first)
import keras
from zoo.classifier import model as classifier
from zoo.pretraining import pretrained
from zoo.classifier.model import ClassifierConfig
from zoo.training.optimization import make_optimizer
from zoo.pretraining.pretrained import PretrainedRunError
from zoo.pretraining.model import PretrainConfig, build_pretrainer
from zoo.runs.run_dir import RunDirError

ENCODER = ClassifierConfig(vocab_size=50, hidden_dim=16, num_heads=2, intermediate_dim=32, num_layers=2,
                           dropout=0.0, max_length=32, position="learned")


# ---------------------------------------------------------------- copy_encoder_weights


def encoder_weights(encoder):
    return {layer.name: layer.get_weights() for layer in encoder.layers if layer.weights}


@pytest.mark.parametrize("source", ["encoder", "pretrainer"])
def test_copy_encoder_weights_copies_everything_but_the_head(source):
    keras.utils.set_random_seed(1)
    if source == "encoder":
        encoder = classifier.build_encoder(ENCODER)
    else:
        encoder = build_pretrainer(PretrainConfig(encoder=ENCODER, sequence_length=16)).encoder
    # Make the source unmistakable: no freshly initialised weight equals these.
    rng = np.random.default_rng(0)
    for variable in encoder.weights:
        variable.assign(rng.normal(size=variable.shape).astype(np.float32))
    weights = encoder_weights(encoder)
    target = classifier.build_classifier(ENCODER)
    head_before = [w.copy() for w in target.get_layer("logits").get_weights()]

    copied = pretrained.copy_encoder_weights(weights, target)

    assert copied == sum(len(arrays) for arrays in weights.values())
    checked = 0
    for layer in target.layers:
        if not layer.weights:
            continue
        if layer.name == "logits":
            for before, after in zip(head_before, layer.get_weights()):
                np.testing.assert_array_equal(before, after)
            continue
        assert layer.name in weights, layer.name
        for expected, got in zip(weights[layer.name], layer.get_weights(), strict=True):
            np.testing.assert_array_equal(got, expected)
            checked += 1
    assert checked == copied
    # The copy is what the classifier computes with: its encoder's states equal the source's.
    ids = tf.constant([[2, 7, 8, 9, 3, 0], [2, 11, 3, 0, 0, 0]], tf.int32)
    body = keras.Model(target.input, target.get_layer(f"encoder_{ENCODER.num_layers - 1}").output)
    np.testing.assert_allclose(body(ids).numpy(), encoder(ids).numpy(), atol=1e-5)


def test_a_classifier_with_fewer_positions_takes_the_first_rows_of_the_learned_table():
    keras.utils.set_random_seed(2)
    encoder = classifier.build_encoder(ENCODER)
    rng = np.random.default_rng(3)
    for variable in encoder.weights:
        variable.assign(rng.normal(size=variable.shape).astype(np.float32))
    target = classifier.build_classifier(dataclasses.replace(ENCODER, max_length=8))
    pretrained.copy_encoder_weights(encoder_weights(encoder), target)
    table = target.get_layer("embedding").position_embedding.position_embeddings.numpy()
    np.testing.assert_array_equal(table, encoder.get_layer("embedding").position_embedding.position_embeddings[:8])
    ids = tf.constant([[2, 7, 8, 9, 3, 0, 0, 0], [2, 11, 12, 13, 14, 15, 16, 3]], tf.int32)
    body = keras.Model(target.input, target.get_layer(f"encoder_{ENCODER.num_layers - 1}").output)
    np.testing.assert_allclose(body(ids).numpy(), encoder(ids).numpy(), atol=1e-5)


def test_copy_encoder_weights_requires_every_encoder_weight():
    weights = encoder_weights(classifier.build_encoder(ENCODER))
    del weights["encoder_1"]
    with pytest.raises((RuntimeError, KeyError, ValueError)):
        pretrained.copy_encoder_weights(weights, classifier.build_classifier(ENCODER))


# ---------------------------------------------------------------- classifier_config


def run_of(encoder):
    """The encoder config as a pretraining run's config.json gives it back."""
    record = json.loads(json.dumps({"model": dataclasses.asdict(PretrainConfig(encoder=encoder, sequence_length=16))}))
    return PretrainConfig(**record["model"]).encoder


def test_classifier_config_is_the_pretrained_encoders_with_the_asked_dropout():
    encoder = dataclasses.replace(ENCODER, dropout=0.0)
    config = pretrained.classifier_config(run_of(encoder))
    assert isinstance(config, ClassifierConfig)
    assert config == dataclasses.replace(encoder, dropout=0.1)
    assert pretrained.classifier_config(run_of(encoder), dropout=0.3) == dataclasses.replace(encoder, dropout=0.3)
    assert pretrained.classifier_config(run_of(encoder), dropout=0.0) == encoder


def test_classifier_config_accepts_agreeing_flags():
    encoder = dataclasses.replace(classifier.PRESETS["medium"], vocab_size=1234, dropout=0.05)
    config = pretrained.classifier_config(run_of(encoder), dropout=0.2, preset="medium", vocab_size=1234,
                                          max_length=encoder.max_length)
    assert config == dataclasses.replace(encoder, dropout=0.2)


def test_classifier_config_takes_a_shorter_max_length_not_a_longer_one():
    encoder = dataclasses.replace(classifier.PRESETS["medium"], vocab_size=1234)
    assert pretrained.classifier_config(run_of(encoder), max_length=64).max_length == 64
    with pytest.raises(PretrainedRunError, match=f"at most {encoder.max_length}"):
        pretrained.classifier_config(run_of(encoder), max_length=encoder.max_length + 1)


@pytest.mark.parametrize("asked,flag", [({"vocab_size": 999}, "--vocab_size"), ({"max_length": 4096}, "--max_length"),
                                        ({"preset": "base"}, "--preset"), ({"preset": "small"}, "--preset")])
def test_classifier_config_rejects_disagreeing_flags(asked, flag):
    encoder = dataclasses.replace(classifier.PRESETS["medium"], vocab_size=1234)
    assert issubclass(PretrainedRunError, ValueError)
    with pytest.raises(PretrainedRunError, match=flag):
        pretrained.classifier_config(run_of(encoder), **asked)


# ---------------------------------------------------------------- layer-wise learning rates


def adam_first_step(gradient, rate, beta_1=0.9, beta_2=0.98, epsilon=1e-9):
    """Keras Adam's first update: rate * sqrt(1 - b2) / (1 - b1) * m / (sqrt(v) + eps)."""
    m = (1 - beta_1) * gradient
    v = (1 - beta_2) * gradient**2
    return -rate * np.sqrt(1 - beta_2) / (1 - beta_1) * m / (np.sqrt(v) + epsilon)


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_rate_scales_scale_each_variables_first_adam_step(order):
    rate = 1e-2
    start = {"a": np.zeros(4, np.float32), "b": np.ones(3, np.float32)}
    gradients = {"a": np.array([0.5, -2.0, 3.0, -1e-3], np.float32), "b": np.array([-0.1, 4.0, 1.0], np.float32)}
    names = list(order)
    variables = [keras.Variable(start[name], name=name) for name in names]
    scales = [1.0, 0.25]  # in build order: the first variable 1.0, the second 0.25
    # warmup_steps=1: the schedule's rate at the first step is the peak, min(1/1, sqrt(1/1)) = 1.
    optimizer = make_optimizer(rate, warmup_steps=1, rate_scales=scales)
    optimizer.build(variables)
    optimizer.apply_gradients([(tf.constant(gradients[name]), v) for name, v in zip(names, variables)])
    moved = {name: v.numpy() - start[name] for name, v in zip(names, variables)}
    for name, scale in zip(names, scales):
        expected = adam_first_step(gradients[name].astype(np.float64), rate * scale)
        np.testing.assert_allclose(moved[name], expected, rtol=1e-4)
        np.testing.assert_allclose(np.abs(moved[name]), rate * scale, rtol=1e-3)  # Adam's first step: +-rate
    ratio = np.abs(moved["b"]).mean() / np.abs(moved["a"]).mean()
    assert ratio == pytest.approx(0.25 if order == "ab" else 4.0, rel=1e-3)


def test_no_rate_scales_is_plain_adam():
    a = keras.Variable(np.zeros(3, np.float32))
    b = keras.Variable(np.zeros(3, np.float32))
    gradient = np.array([1.0, -2.0, 0.5], np.float32)
    optimizer = make_optimizer(1e-2, warmup_steps=1)
    optimizer.build([a, b])
    optimizer.apply_gradients([(tf.constant(gradient), a), (tf.constant(gradient), b)])
    np.testing.assert_allclose(a.numpy(), adam_first_step(gradient.astype(np.float64), 1e-2), rtol=1e-4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_layer_depths_count_down_from_the_embedding_to_the_head():
    config = dataclasses.replace(ENCODER, num_layers=3)
    model = classifier.build_classifier(config)
    expected_by_variable = {}
    for variable in model.get_layer("embedding").trainable_variables:
        expected_by_variable[id(variable)] = 4
    for i in range(3):
        for variable in model.get_layer(f"encoder_{i}").trainable_variables:
            expected_by_variable[id(variable)] = 3 - i
    for variable in model.get_layer("logits").trainable_variables:
        expected_by_variable[id(variable)] = 0
    assert len(expected_by_variable) == len(model.trainable_variables)
    depths = classifier.layer_depths(model)
    assert len(depths) == len(model.trainable_variables)
    assert [int(d) for d in depths] == [expected_by_variable[id(v)] for v in model.trainable_variables]
    assert sorted(set(depths)) == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------- load_pretrained


def test_a_damaged_last_checkpoint_makes_the_run_unfinished_and_the_callers_policy_is_kept(tmp_path):
    from zoo.data import tokenizer

    config = PretrainConfig(encoder=ENCODER, sequence_length=16)
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    run = {"recipe": "pretrain", "model": dataclasses.asdict(config), "train": {"train_steps": 10}}
    (model_dir / "config.json").write_text(json.dumps(run))
    words = [f"w{i}" for i in range(200)]
    proto = tokenizer.train_tokenizer([" ".join(words[i:] + words[:i]) for i in range(200)], ENCODER.vocab_size,
                                      user_symbols=("<mask>",))
    tokenizer.save_tokenizer(proto, str(model_dir))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=build_pretrainer(config)), str(model_dir), 5)
    manager.save(checkpoint_number=5)
    manager.save(checkpoint_number=10)
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        assert pretrained.load_pretrained(str(model_dir)).step == 10
        assert keras.mixed_precision.dtype_policy().name == "mixed_bfloat16"
        data = model_dir / "ckpt-10.data-00000-of-00001"
        data.write_bytes(data.read_bytes()[:100])
        with pytest.raises(RunDirError, match="newest readable one is step 5 of 10"):
            pretrained.load_pretrained(str(model_dir))
        assert pretrained.load_pretrained(str(model_dir), finished=False).step == 5
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
