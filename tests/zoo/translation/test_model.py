"""The translator learns a synthetic task, and its searches agree with each other."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from benchmarks.common import baselines
from zoo.data import batching
from zoo.translation import model as translation
from zoo.training.distribute import make_strategy
from zoo.data.tokenizer import END_ID, START_ID
from zoo.training.config import Task, TrainConfig
from zoo.training.loop import Trainer
from zoo.runs.checkpoints import restore_model
from zoo.translation.search import DecodeConfig, translate_ids

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

DIGITS = np.arange(4, 14)  # ten "digit" tokens after the special ids
# The tiny preset's architecture; no dropout, so that a few hundred steps learn the task exactly.
CONFIG = dataclasses.replace(translation.PRESETS["tiny"], source_vocab_size=16, target_vocab_size=16, dropout=0.0)


def copy_task(count, seed):
    """Random digit strings of 1 to 8 digits, to be copied: a broken mask or cache shows at once."""
    rng = np.random.default_rng(seed)
    sources = [rng.choice(DIGITS, size=rng.integers(1, 9)).astype(np.int32) for _ in range(count)]
    return sources, [s.copy() for s in sources]


def framed(sources, targets=()):
    """Token rows framed as `zoo.translation.preprocessor` frames a text's tokens (none is cut
    here): each source + </s>, each target <s> + target + </s>."""
    return {
        "source": [np.append(s, END_ID).astype(np.int32) for s in sources],
        "target": [np.concatenate([[START_ID], t, [END_ID]]).astype(np.int32) for t in targets],
    }


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """The tiny preset trained to copy digit strings (a few hundred CPU steps)."""
    sources, targets = copy_task(20000, seed=1)
    rows = framed(sources, targets)
    config = TrainConfig(train_steps=600, batch_size=128, learning_rate=5e-3, warmup_steps=60, schedule="cosine",
                         log_every=200, checkpoint_every=600, label_smoothing=0.0)
    plan = batching.training_plan([len(r) for r in rows["source"]], config.train_steps, config.batch_size, 0)
    task = Task(
        build_model=lambda: translation.build_translator(CONFIG),
        dataset=lambda context, start: batching.plan_dataset(plan, rows, skip=start),
        loss=translation.translation_loss(config.label_smoothing, skip_padding=True),
    )
    model_dir = str(tmp_path_factory.mktemp("copy"))
    trainer = Trainer(task, config, model_dir, make_strategy("one_device"))
    trainer.train()
    return trainer.model, model_dir


@pytest.fixture(scope="module")
def trained(trained_run):
    return trained_run[0]


def test_restore_model_loads_every_trained_weight(trained_run):
    model, model_dir = trained_run
    fresh = translation.build_translator(CONFIG)
    assert restore_model(fresh, model_dir) == 600
    assert len(fresh.weights) == len(model.weights)
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def held_out(count=200):
    sources, targets = copy_task(count, seed=2)
    ids = batching.padded(batching.ragged(framed(sources)["source"]))
    return ids, targets


def strip(tokens):
    """Generated ids up to (not including) </s>."""
    out = []
    for row in np.asarray(tokens):
        row = list(row)
        out.append(row[: row.index(END_ID)] if END_ID in row else row)
    return out


def exact_match(tokens, targets):
    return np.mean([list(h) == list(t) for h, t in zip(strip(tokens), targets)])


def test_tiny_preset_learns_to_copy(trained):
    ids, targets = held_out()
    # Measured after 600 cosine steps: 99.5% greedy, 98.5% beam 4 (with 1/sqrt decay, 1,500 steps gave 90-96%).
    tokens, _ = translate_ids(trained, ids, DecodeConfig(beam_size=1))
    assert exact_match(tokens[:, 0], targets) >= 0.99
    tokens, _ = translate_ids(trained, ids, DecodeConfig(beam_size=4))
    assert exact_match(tokens[:, 0], targets) >= 0.975


@pytest.mark.parametrize("beam_size", [1, 3])
def test_cached_search_equals_recomputed_search(trained, beam_size):
    ids, _ = held_out(64)
    config = DecodeConfig(beam_size=beam_size, num_return=beam_size)
    cached, cached_scores = translate_ids(trained, ids, config)
    recomputed, recomputed_scores = baselines.translate_ids(trained, ids, config, cached=False)
    np.testing.assert_array_equal(cached.numpy(), recomputed.numpy())
    np.testing.assert_allclose(cached_scores.numpy(), recomputed_scores.numpy(), atol=1e-4)


def test_cached_greedy_equals_recomputed_on_an_untrained_model():
    """An untrained model hesitates between many tokens: any cache error changes the argmax."""
    config = dataclasses.replace(CONFIG, source_vocab_size=50, target_vocab_size=50, tie_embeddings=False)
    model = translation.build_translator(config)
    ids = tf.constant(np.random.default_rng(0).integers(4, 50, size=(8, 11)), tf.int32)
    config = DecodeConfig(beam_size=1, max_extra_length=20)
    cached, _ = translate_ids(model, ids, config)
    recomputed, _ = baselines.translate_ids(model, ids, config, cached=False)
    np.testing.assert_array_equal(cached.numpy(), recomputed.numpy())
    assert len(np.unique(cached.numpy())) > 5


@pytest.mark.parametrize("cached", [True, False])
def test_beam_search_of_size_one_is_greedy_search(trained, cached):
    untrained = translation.build_translator(dataclasses.replace(CONFIG, source_vocab_size=50, target_vocab_size=50))
    config = DecodeConfig(beam_size=1, length_penalty=1.0)
    for model in (trained, untrained):
        ids, _ = held_out(32)
        greedy, _ = baselines.translate_ids(model, ids, config, cached=cached)
        beam, _ = baselines.translate_ids(model, ids, config, cached=cached, always_beam=True)
        np.testing.assert_array_equal(greedy.numpy(), beam.numpy())


def test_temperature_alone_samples():
    assert DecodeConfig(beam_size=1, temperature=0.7).sampling


def test_n_best_is_sorted_and_distinct(trained):
    ids, _ = held_out(16)
    tokens, scores = translate_ids(trained, ids, DecodeConfig(beam_size=4, num_return=3))
    assert tokens.shape[:2] == (16, 3)
    assert np.all(np.diff(scores.numpy(), axis=1) <= 1e-6)
    for row in tokens.numpy():
        assert len({tuple(r) for r in row}) == 3


def test_sampling_with_top_k_one_is_greedy(trained):
    ids, _ = held_out(32)
    greedy, _ = translate_ids(trained, ids, DecodeConfig(beam_size=1))
    sampled, _ = translate_ids(trained, ids, DecodeConfig(beam_size=1, top_k=1, seed=3))
    np.testing.assert_array_equal(greedy.numpy(), sampled.numpy())


def test_search_compiles_with_xla(trained):
    ids, targets = held_out(32)
    search = tf.function(lambda x: translate_ids(trained, x, DecodeConfig(beam_size=3)),
                         jit_compile=True)
    tokens, _ = search(ids)
    eager, _ = translate_ids(trained, ids, DecodeConfig(beam_size=3))
    np.testing.assert_array_equal(tokens.numpy(), eager.numpy())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"beam_size": 0}, "at least 1"),
        ({"beam_size": 2, "num_return": 3}, "num_return"),
        ({"beam_size": 4, "top_k": 5}, "beam_size=1"),
        ({"beam_size": 1, "temperature": 0}, "temperature"),
        ({"beam_size": 1, "temperature": float("inf")}, "temperature=inf must be a finite number above 0"),
        ({"beam_size": 1, "temperature": float("nan")}, "temperature=nan must be a finite number above 0"),
    ],
)
def test_bad_decode_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DecodeConfig(**kwargs)


def test_beam_search_does_not_stop_below_the_greedy_hypothesis(trained):
    """With the length penalty off, beam 4 scores each sentence at least as well as greedy search:
    stopping as soon as 4 hypotheses have ended (fairseq's rule) returned early ends at about
    -8 where greedy's copy scored -0.01."""
    ids, _ = held_out()
    _, greedy = translate_ids(trained, ids, DecodeConfig(beam_size=1, length_penalty=0.0))
    _, beam = translate_ids(trained, ids, DecodeConfig(beam_size=4, length_penalty=0.0))
    assert np.all(beam.numpy()[:, 0] >= greedy.numpy()[:, 0] - 1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_loss_skipping_padding_equals_the_padded_loss(norm_first):
    config = dataclasses.replace(CONFIG, norm_first=norm_first, dropout=0.1)
    model = translation.build_translator(config)
    sources, targets = copy_task(6, seed=5)
    rows = framed(sources, targets)
    batch = next(iter(batching.plan_dataset([np.arange(6)], rows)))
    assert not np.all(batch["target"].numpy() != 0)  # the batch holds padding
    results = []
    for skip in (False, True):
        with tf.GradientTape() as tape:
            loss_sum, weight, tokens = translation.translation_loss(0.1, skip_padding=skip)(model, batch, False)
        results.append((loss_sum, weight, tokens, tape.gradient(loss_sum, model.trainable_variables)))
    (loss_a, weight, tokens, grads_a), (loss_b, _, _, grads_b) = results
    np.testing.assert_allclose(loss_b.numpy(), loss_a.numpy(), rtol=1e-5)
    assert float(weight) == sum(len(t) + 1 for t in targets)  # every target token and </s>
    assert int(tokens) == sum(len(s) + 1 + len(t) + 1 for s, t in zip(sources, targets))  # + </s>, + <s>
    for a, b in zip(grads_a, grads_b):
        np.testing.assert_allclose(tf.convert_to_tensor(b).numpy(), tf.convert_to_tensor(a).numpy(), atol=1e-5)


def test_a_translator_with_room_for_one_token_is_built_trained_and_searched():
    """max_length=2, the least TranslatorConfig takes (a source's token and </s>, a target's <s> and token): the
    model is built within its positions, not on a longer dummy row (issue 52)."""
    model = translation.build_translator(dataclasses.replace(CONFIG, max_length=2))
    batch = {"source": tf.constant([[5, END_ID]]), "target": tf.constant([[START_ID, 5, END_ID]])}
    loss_sum, weight, _ = translation.translation_loss(0.0)(model, batch, training=True)
    assert weight == 2 and np.isfinite(loss_sum.numpy())
    tokens, _ = translate_ids(model, batch["source"], DecodeConfig(beam_size=1))
    assert tokens.shape[0] == 1
