"""zoo.pretraining.model: BERT masking, the MLM / ELECTRA pretrainer, its loss and metrics.

Expected values are computed here from the specification (NumPy, hand counts), not
from the implementation."""

import dataclasses
import json
import math

import numpy as np
import pytest
import tensorflow as tf

import zoo  # noqa: F401  (TensorFlow backend first)
import keras
from zoo.classifier import model as classifier
from zoo.pretraining import model as pretraining, masks as pretraining_masks
from zoo.classifier.model import ClassifierConfig
from zoo.pretraining.model import PretrainConfig

PAD, UNK, START, END, MASK = 0, 1, 2, 3, 4


# ---------------------------------------------------------------- config


def test_constants():
    assert pretraining.MASK_ID == MASK
    assert pretraining.FIRST_REGULAR_ID == 5
    assert tuple(pretraining.OBJECTIVES) == ("mlm", "electra")


def test_config_defaults_and_max_predictions():
    config = PretrainConfig(encoder=ClassifierConfig(max_length=128))
    assert config.objective == "mlm"
    assert config.sequence_length == 128  # by default the encoder's max_length
    assert config.mask_rate == pytest.approx(0.15)
    assert config.generator_scale == pytest.approx(0.5)
    assert config.detection_weight == pytest.approx(50.0)
    assert config.max_predictions == 20  # ceil(0.15 * 128) = ceil(19.2)
    assert PretrainConfig(encoder=ClassifierConfig(max_length=96)).sequence_length == 96
    encoder = ClassifierConfig(max_length=64)
    for length, rate, expected in [(2, 0.1, 1), (10, 0.15, 2), (64, 0.15, 10), (33, 0.5, 17), (7, 0.01, 1)]:
        config = PretrainConfig(encoder=encoder, sequence_length=length, mask_rate=rate)
        assert config.max_predictions == expected == max(1, math.ceil(rate * length))


@pytest.mark.parametrize(
    "overrides",
    [
        {"objective": "bert"},
        {"sequence_length": 1},
        {"sequence_length": 65},  # > encoder.max_length
        {"mask_rate": 0.0},
        {"mask_rate": 1.0},
        {"mask_rate": -0.1},
        {"generator_scale": 0.0},
        {"generator_scale": 1.5},
    ],
)
def test_config_rejects_invalid_values(overrides):
    with pytest.raises(ValueError):
        PretrainConfig(encoder=ClassifierConfig(max_length=64), **{"sequence_length": 32, **overrides})


def test_config_accepts_boundary_values():
    encoder = ClassifierConfig(max_length=64)
    PretrainConfig(encoder=encoder, sequence_length=2)
    PretrainConfig(encoder=encoder, sequence_length=64, generator_scale=1.0, objective="mlm")


def test_config_round_trips_through_json():
    config = PretrainConfig(encoder=ClassifierConfig(vocab_size=123, hidden_dim=48, max_length=64), objective="mlm",
                            sequence_length=40, mask_rate=0.2, generator_scale=0.25, detection_weight=10.0)
    back = PretrainConfig(**json.loads(json.dumps(dataclasses.asdict(config))))
    assert isinstance(back.encoder, ClassifierConfig)
    assert back == config
    assert back.max_predictions == 8


def test_presets_match_the_classifier_presets():
    assert set(pretraining.PRESETS) == set(classifier.PRESETS) == {"tiny", "small", "medium", "base"}
    for config in pretraining.PRESETS.values():
        assert isinstance(config, PretrainConfig)
        assert isinstance(config.encoder, ClassifierConfig)
        assert 2 <= config.sequence_length <= config.encoder.max_length


# ---------------------------------------------------------------- masking


def expected_count(selectable, rate, max_predictions):
    """The set of allowed per-row counts: round(rate * n), at least 1 if n > 0, at most max_predictions.
    At an exact .5 tie either rounding is accepted."""
    exact = rate * selectable
    tie = abs(exact - math.floor(exact) - 0.5) < 1e-6
    candidates = {math.floor(exact), math.ceil(exact)} if tie else {round(exact)}
    out = set()
    for k in candidates:
        if selectable > 0:
            k = max(1, k)
        out.add(min(max_predictions, k))
    return out


def random_rows(rng, batch, length, vocab):
    """<s> + a mix of regular ids and specials (<unk>, </s>, <mask>), then padding; some rows empty."""
    ids = np.zeros((batch, length), np.int32)
    for row in range(batch):
        n = rng.integers(0, length + 1)
        if n == 0:
            continue
        tokens = rng.integers(5, vocab, n)
        special = rng.random(n) < 0.12
        tokens[special] = rng.choice([UNK, END, MASK], special.sum())
        tokens[0] = START
        ids[row, :n] = tokens
    ids[1, :3] = [START, END, UNK]  # a row with no selectable token
    ids[1, 3:] = 0
    return ids


def check_masking(ids, out, rate, max_predictions, vocab):
    """Every per-position invariant of the specification; returns (original, corrupted) at the chosen positions."""
    corrupted = out["token_ids"].numpy()
    positions = out["mask_positions"].numpy()
    labels = out["mask_ids"].numpy()
    weights = out["mask_weights"].numpy()
    batch, length = ids.shape
    assert corrupted.shape == ids.shape
    assert positions.shape == labels.shape == weights.shape == (batch, max_predictions)
    assert positions.dtype.kind == "i" and labels.dtype.kind == "i" and weights.dtype.kind == "f"
    assert set(np.unique(weights)) <= {0.0, 1.0}
    originals, replacements = [], []
    for row in range(batch):
        used = weights[row] == 1.0
        chosen = positions[row][used]
        selectable = ids[row] >= 5
        allowed = expected_count(int(selectable.sum()), rate, max_predictions)
        assert len(chosen) in allowed, (row, int(selectable.sum()), len(chosen))
        assert len(set(chosen.tolist())) == len(chosen), "a position chosen twice"
        assert np.all((chosen >= 0) & (chosen < length))
        assert np.all(selectable[chosen]), "padding or a special token was chosen"
        np.testing.assert_array_equal(labels[row][used], ids[row][chosen])
        outside = np.ones(length, bool)
        outside[chosen] = False
        np.testing.assert_array_equal(corrupted[row][outside], ids[row][outside])
        originals.append(ids[row][chosen])
        replacements.append(corrupted[row][chosen])
    return np.concatenate(originals), np.concatenate(replacements)


def test_mask_tokens_statistics_on_a_large_batch():
    vocab, length, rate = 20, 48, 0.15
    max_predictions = math.ceil(rate * length)
    ids = random_rows(np.random.default_rng(0), 6000, length, vocab)
    out = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([7, 11]), rate, max_predictions, vocab)
    original, corrupted = check_masking(ids, out, rate, max_predictions, vocab)
    n = len(original)
    assert n > 15000
    # Every corrupted id is <mask> or a regular id below vocab_size.
    assert np.all((corrupted == MASK) | ((corrupted >= 5) & (corrupted < vocab)))
    masked = np.mean(corrupted == MASK)
    kept = np.mean(corrupted == original)
    other = np.mean((corrupted != MASK) & (corrupted != original))
    regular = vocab - 5
    assert masked == pytest.approx(0.8, abs=0.015)
    assert kept == pytest.approx(0.1 + 0.1 / regular, abs=0.012)  # kept, or a random draw of the same id
    assert other == pytest.approx(0.1 * (regular - 1) / regular, abs=0.012)
    # The random ids cover [5, vocab) about evenly.
    random_ids = corrupted[(corrupted != MASK) & (corrupted != original)]
    counts = np.bincount(random_ids, minlength=vocab)
    assert counts[:5].sum() == 0
    mean = len(random_ids) / regular
    assert np.all(np.abs(counts[5:] - mean) < 0.35 * mean), counts


def test_mask_tokens_chooses_positions_uniformly():
    # 2000 identical rows of 20 regular tokens: 3 chosen per row, each position with probability 3/20.
    row = np.concatenate([[START], np.arange(5, 25), [END], [0, 0]]).astype(np.int32)
    ids = np.tile(row, (2000, 1))
    out = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([3, 4]), 0.15, 5, 30)
    check_masking(ids, out, 0.15, 5, 30)
    weights = out["mask_weights"].numpy()
    np.testing.assert_array_equal(weights.sum(1), 3.0)
    chosen = out["mask_positions"].numpy()[weights == 1]
    frequency = np.bincount(chosen, minlength=ids.shape[1])
    assert frequency[0] == frequency[21] == frequency[22] == frequency[23] == 0
    expected = 2000 * 3 / 20  # 300, std about 16
    assert np.all(np.abs(frequency[1:21] - expected) < 80), frequency


def test_mask_tokens_caps_at_max_predictions():
    ids = np.tile(np.concatenate([[START], np.arange(5, 25)]).astype(np.int32), (50, 1))
    out = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([1, 1]), 0.5, 3, 30)  # round(0.5 * 20) = 10 > 3
    check_masking(ids, out, 0.5, 3, 30)
    np.testing.assert_array_equal(out["mask_weights"].numpy().sum(1), 3.0)


def test_mask_tokens_at_least_one_and_none_without_selectable_tokens():
    ids = np.array([[START, 7, END, 0, 0, 0, 0, 0],  # 1 selectable: round(0.15) = 0 -> 1
                    [START, END, UNK, MASK, 0, 0, 0, 0],  # none selectable
                    [0, 0, 0, 0, 0, 0, 0, 0],  # all padding
                    [START, 5, 6, 7, 8, 9, 10, END]], np.int32)  # 6 selectable: round(0.9) = 1
    out = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([5, 6]), 0.15, 2, 12)
    check_masking(ids, out, 0.15, 2, 12)
    np.testing.assert_array_equal(out["mask_weights"].numpy().sum(1), [1, 0, 0, 1])
    assert out["mask_positions"].numpy()[0][out["mask_weights"].numpy()[0] == 1][0] == 1
    np.testing.assert_array_equal(out["token_ids"].numpy()[1:3], ids[1:3])


def test_mask_tokens_is_deterministic_by_seed():
    ids = random_rows(np.random.default_rng(1), 64, 32, 50)
    a = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([1, 2]), 0.15, 5, 50)
    b = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([1, 2]), 0.15, 5, 50)
    c = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([1, 3]), 0.15, 5, 50)
    assert set(a) >= {"token_ids", "mask_positions", "mask_ids", "mask_weights"}
    for key in ("token_ids", "mask_positions", "mask_ids", "mask_weights"):
        np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())
    assert not np.array_equal(a["token_ids"].numpy(), c["token_ids"].numpy())
    assert not np.array_equal(a["mask_positions"].numpy(), c["mask_positions"].numpy())


def test_mask_tokens_in_a_graph_with_unknown_shapes_matches_eager():
    ids = random_rows(np.random.default_rng(2), 16, 24, 50)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def masked(token_ids):
        return pretraining_masks.mask_tokens(token_ids, tf.constant([9, 9]), 0.15, 4, 50)

    graph = masked(tf.constant(ids))
    eager = pretraining_masks.mask_tokens(tf.constant(ids), tf.constant([9, 9]), 0.15, 4, 50)
    for key in ("token_ids", "mask_positions", "mask_ids", "mask_weights"):
        np.testing.assert_array_equal(graph[key].numpy(), eager[key].numpy())


# ---------------------------------------------------------------- the pretrainer

ENCODER = ClassifierConfig(vocab_size=40, hidden_dim=16, num_heads=2, intermediate_dim=32, num_layers=2,
                           dropout=0.0, max_length=32)
LENGTH = 16


def config_for(objective, **overrides):
    return PretrainConfig(encoder=ENCODER, objective=objective, sequence_length=LENGTH, **overrides)


def batch_ids(rng, batch=6, low=5, high=40):
    ids = np.zeros((batch, LENGTH), np.int32)
    for row in range(batch):
        n = LENGTH - 2 * row if row < 5 else LENGTH
        ids[row, :n] = rng.integers(low, high, n)
        ids[row, 0] = START
        ids[row, n // 2] = END
    return ids


@pytest.fixture(scope="module", name="electra")
def electra_fixture():
    keras.utils.set_random_seed(0)
    config = config_for("electra")
    return config, pretraining.build_pretrainer(config)


@pytest.fixture(scope="module", name="mlm")
def mlm_fixture():
    config = config_for("mlm")
    return config, pretraining.build_pretrainer(config)


def test_with_masks_adds_originals_and_a_seed():
    config = config_for("electra", mask_rate=0.3)
    ids = batch_ids(np.random.default_rng(3), batch=40)
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([4, 2]), config)
    assert {"token_ids", "mask_positions", "mask_ids", "mask_weights", "original_ids", "seed"} <= set(batch)
    np.testing.assert_array_equal(batch["original_ids"].numpy(), ids)
    assert batch["seed"].shape == (2,)
    check_masking(ids, batch, 0.3, config.max_predictions, ENCODER.vocab_size)
    again = pretraining_masks.with_masks(tf.constant(ids), tf.constant([4, 2]), config)
    for key in batch:
        np.testing.assert_array_equal(batch[key].numpy(), again[key].numpy())
    other = pretraining_masks.with_masks(tf.constant(ids), tf.constant([4, 3]), config)
    assert not np.array_equal(batch["token_ids"].numpy(), other["token_ids"].numpy())
    assert not np.array_equal(batch["seed"].numpy(), other["seed"].numpy())


def test_pretrainer_structure_and_outputs(electra, mlm):
    config, model = electra
    ids = batch_ids(np.random.default_rng(4))
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([1, 2]), config)
    out = model(batch, training=False)
    assert out["mlm_logits"].shape == (6, config.max_predictions, ENCODER.vocab_size)
    assert out["mlm_logits"].dtype == tf.float32
    assert out["replaced"].shape == (6, LENGTH) and out["replaced"].dtype == tf.bool
    assert out["detection_logits"].shape == (6, LENGTH) and out["detection_logits"].dtype == tf.float32
    hidden = model.encoder(tf.constant(ids))
    assert hidden.shape == (6, LENGTH, ENCODER.hidden_dim)
    assert model.generator is not None
    assert model.generator.get_layer("embedding") is model.encoder.get_layer("embedding")
    generator_size = sum(int(np.prod(v.shape)) for v in model.generator.trainable_variables)
    encoder_size = sum(int(np.prod(v.shape)) for v in model.encoder.trainable_variables)
    assert generator_size < encoder_size  # smaller, though it holds the shared embedding
    assert model.mlm_head is not None
    # The encoder's layers carry the classifier's names, so a classifier can take its weights.
    encoder_names = {layer.name for layer in model.encoder.layers if layer.weights}
    classifier_names = {layer.name for layer in classifier.build_encoder(ENCODER).layers if layer.weights}
    assert encoder_names == classifier_names

    config, model = mlm
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([1, 2]), config)
    out = model(batch, training=False)
    assert model.generator is None
    assert out["mlm_logits"].shape == (6, config.max_predictions, ENCODER.vocab_size)
    assert out["mlm_logits"].dtype == tf.float32
    assert "replaced" not in out and "detection_logits" not in out


def test_replaced_only_at_chosen_positions_and_never_on_padding(electra):
    config, model = electra
    ids = batch_ids(np.random.default_rng(5), batch=8)
    for seed in ([1, 1], [2, 7], [3, 9]):
        batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant(seed), config)
        replaced = model(batch, training=False)["replaced"].numpy()
        chosen = np.zeros_like(replaced)
        positions, weights = batch["mask_positions"].numpy(), batch["mask_weights"].numpy()
        for row in range(len(ids)):
            chosen[row, positions[row][weights[row] == 1]] = True
        assert not np.any(replaced & ~chosen)
        assert not np.any(replaced[ids == 0])
        assert replaced.any()  # an untrained generator over 40 ids mostly samples something else


def mlm_bias(model):
    biases = [v for v in model.mlm_head.weights if tuple(v.shape) == (ENCODER.vocab_size,)]
    assert len(biases) == 1, [v.path for v in model.mlm_head.weights]
    return biases[0]


def test_discriminator_sees_the_generators_samples_at_every_chosen_position():
    # Force the generator to sample id 7 everywhere (a huge output bias on 7). Then every chosen
    # position is 7 in the discriminator's input, whatever masking wrote there: "replaced" must be
    # exactly the chosen positions whose original id is not 7.
    config = config_for("electra", mask_rate=0.4)
    model = pretraining.build_pretrainer(config)
    ids = batch_ids(np.random.default_rng(6), batch=24, low=5, high=9)  # about a quarter are 7
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([8, 8]), config)
    model(batch, training=False)
    bias = mlm_bias(model)
    forced = np.zeros(ENCODER.vocab_size, np.float32)
    forced[7] = 1e4
    bias.assign(forced)
    out = model(batch, training=False)
    assert np.all(np.argmax(out["mlm_logits"].numpy(), -1) == 7)
    positions, weights = batch["mask_positions"].numpy(), batch["mask_weights"].numpy()
    corrupted = batch["token_ids"].numpy()
    expected = np.zeros(ids.shape, bool)
    kept_or_random = chosen_sevens = 0
    for row in range(len(ids)):
        chosen = positions[row][weights[row] == 1]
        expected[row, chosen] = ids[row, chosen] != 7
        kept_or_random += np.sum(corrupted[row, chosen] != MASK)
        chosen_sevens += np.sum(ids[row, chosen] == 7)
    # The case mix this test needs: masking kept or randomized some chosen ids, some chosen ids were 7.
    assert kept_or_random > 0 and chosen_sevens > 0 and expected.any()
    np.testing.assert_array_equal(out["replaced"].numpy(), expected)

    # The discriminator's input is then known: the original ids with 7 at the chosen positions.
    # Replace the chosen ids by 7 in the *original* input and the detection logits must not change.
    disc_input = ids.copy()
    for row in range(len(ids)):
        disc_input[row, positions[row][weights[row] == 1]] = 7
    same = dict(batch, original_ids=tf.constant(disc_input))
    again = model(same, training=False)
    np.testing.assert_allclose(again["detection_logits"].numpy(), out["detection_logits"].numpy(), atol=1e-5)
    assert not again["replaced"].numpy().any()


def variable_ids(variables):
    return {id(v) for v in variables}


def test_detection_loss_trains_no_generator_only_weight(electra):
    config, model = electra
    ids = batch_ids(np.random.default_rng(7))
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([5, 5]), config)
    shared = variable_ids(model.encoder.trainable_variables)
    generator_only = [v for v in model.generator.trainable_variables + model.mlm_head.trainable_variables
                      if id(v) not in shared]
    assert any("generator_" in v.path for v in generator_only)
    assert len(generator_only) > 10
    embedding = model.encoder.get_layer("embedding").trainable_variables
    real = tf.cast(tf.constant(ids) != 0, tf.float32)

    with tf.GradientTape(persistent=True) as tape:
        out = model(batch, training=False)
        detection = tf.reduce_sum(real * tf.nn.sigmoid_cross_entropy_with_logits(
            tf.cast(out["replaced"], tf.float32), out["detection_logits"]))
        weights = batch["mask_weights"]
        masked_lm = tf.reduce_sum(weights * tf.nn.sparse_softmax_cross_entropy_with_logits(
            batch["mask_ids"], out["mlm_logits"]))
    for variable, gradient in zip(generator_only, tape.gradient(detection, generator_only)):
        assert gradient is None or not np.any(tf.convert_to_tensor(gradient).numpy()), variable.path
    for gradient in tape.gradient(detection, embedding):
        assert gradient is not None and np.any(tf.convert_to_tensor(gradient).numpy())
    # Control: the masked-LM loss does reach the generator's blocks.
    blocks = [v for v in generator_only if v.path.startswith("generator_")]
    assert any(g is not None and np.any(tf.convert_to_tensor(g).numpy()) for g in tape.gradient(masked_lm, blocks))


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def sigmoid_cross_entropy(logits, labels):
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def expected_loss(config, batch, out):
    ids = batch["original_ids"].numpy()
    weights = batch["mask_weights"].numpy().astype(np.float64)
    logits = out["mlm_logits"].numpy().astype(np.float64)
    labels = batch["mask_ids"].numpy()
    cross_entropy = -np.take_along_axis(log_softmax(logits), labels[..., None], -1)[..., 0]
    per_sequence = (weights * cross_entropy).sum(1) / weights.sum(1)
    if config.objective == "electra":
        real = (ids != 0).astype(np.float64)
        detection = sigmoid_cross_entropy(out["detection_logits"].numpy().astype(np.float64),
                                          out["replaced"].numpy().astype(np.float64))
        per_sequence = per_sequence + config.detection_weight * (real * detection).sum(1) / real.sum(1)
    return per_sequence.sum(), len(ids), int((ids != 0).sum())


@pytest.mark.parametrize("objective", ["electra", "mlm"])
def test_pretraining_loss_matches_numpy(objective, electra, mlm):
    config, model = electra if objective == "electra" else mlm
    ids = batch_ids(np.random.default_rng(8))
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([2, 3]), config)
    assert np.all(batch["mask_weights"].numpy().sum(1) > 0)
    loss_sum, weight, tokens = pretraining.pretraining_loss(config)(model, batch, False)
    out = model(batch, training=False)
    expected_sum, expected_weight, expected_tokens = expected_loss(config, batch, out)
    assert float(loss_sum) == pytest.approx(expected_sum, rel=1e-4)
    assert int(weight) == expected_weight == 6
    assert int(tokens) == expected_tokens
    if objective == "electra":  # the detection term, weighted 50, is the larger part
        mlm_only, _, _ = expected_loss(dataclasses.replace(config, objective="mlm"), batch, out)
        assert expected_sum > mlm_only * 1.5


@pytest.mark.parametrize("objective", ["electra", "mlm"])
def test_pretraining_metrics_match_numpy(objective, electra, mlm):
    config, model = electra if objective == "electra" else mlm
    ids = batch_ids(np.random.default_rng(9))
    batch = pretraining_masks.with_masks(tf.constant(ids), tf.constant([6, 1]), config)
    metrics = pretraining.pretraining_metrics(model)
    sums = {k: float(v) for k, v in metrics(batch).items()}
    out = model(batch, training=False)
    weights = batch["mask_weights"].numpy()
    logits = out["mlm_logits"].numpy().astype(np.float64)
    labels = batch["mask_ids"].numpy()
    cross_entropy = -np.take_along_axis(log_softmax(logits), labels[..., None], -1)[..., 0]
    expected = {
        "masked": weights.sum(),
        "masked_correct": (weights * (logits.argmax(-1) == labels)).sum(),
        "masked_cross_entropy": (weights * cross_entropy).sum(),
    }
    if objective == "electra":
        real = ids != 0
        detection_logits = out["detection_logits"].numpy().astype(np.float64)
        predicted = detection_logits > 0
        replaced = out["replaced"].numpy()
        probability = 1.0 / (1.0 + np.exp(-detection_logits))
        bce = -np.where(replaced, np.log(probability), np.log(1.0 - probability))
        expected.update(
            tokens=real.sum(),
            detection_correct=(real & (predicted == replaced)).sum(),
            detection_cross_entropy=(real * bce).sum(),
            replaced=(real & replaced).sum(),
            replaced_found=(real & replaced & predicted).sum(),
            replaced_probability=(probability * (real & replaced)).sum(),
            original_probability=(probability * (real & ~replaced)).sum(),
        )
    assert set(sums) == set(expected)
    for key, value in expected.items():
        assert sums[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key

    totals = {k: 2 * v for k, v in sums.items()}  # a summary is of ratios: doubling every sum changes nothing
    summary = pretraining.summarize(totals)
    wanted = {
        "masked_accuracy": expected["masked_correct"] / expected["masked"],
        "masked_perplexity": math.exp(expected["masked_cross_entropy"] / expected["masked"]),
    }
    if objective == "electra":
        rate = expected["replaced"] / expected["tokens"]
        wanted.update(detection_accuracy=expected["detection_correct"] / expected["tokens"],
                      replaced_recall=expected["replaced_found"] / expected["replaced"],
                      detection_loss=expected["detection_cross_entropy"] / expected["tokens"],
                      detection_prior_loss=-rate * math.log(rate) - (1 - rate) * math.log(1 - rate),
                      replaced_probability=expected["replaced_probability"] / expected["replaced"],
                      original_probability=expected["original_probability"] / (expected["tokens"] - expected["replaced"]))
    for key, value in wanted.items():
        assert float(summary[key]) == pytest.approx(value, rel=1e-4), key


@pytest.mark.parametrize("field, value", [("problem_type", "regression"), ("threshold", 0.3)])
def test_a_classifier_head_field_is_refused_in_a_pretraining_config(field, value):
    """The encoder's config is the classifier's; its head's fields belong to the fine-tuning run, not here."""
    from zoo.core import config as cfg
    from zoo.pretraining.run_config import PretrainRunConfig

    with pytest.raises(cfg.ConfigError, match=rf"model\.encoder\.{field}=.* pretraining does not build"):
        cfg.from_dict(PretrainRunConfig, {"model": {"encoder": {field: value}}})
    assert cfg.from_dict(PretrainRunConfig, {}).model.encoder.problem_type == "single_label_classification"
