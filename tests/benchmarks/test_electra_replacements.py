"""benchmarks.electra_replacements' proposals: only the replacements change, drawn as each kind says."""

import numpy as np
import tensorflow as tf

from benchmarks import electra_replacements
from zoo.pretraining import model as pretraining, masks as pretraining_masks
from zoo.classifier.model import ClassifierConfig
from zoo.pretraining.model import PretrainConfig

VOCAB, LENGTH = 50, 24


def masked_batch(seed, low, high):
    config = PretrainConfig(encoder=ClassifierConfig(vocab_size=VOCAB, hidden_dim=16, num_heads=2, intermediate_dim=32,
                                                     num_layers=1, max_length=LENGTH),
                            objective="electra", sequence_length=LENGTH, mask_rate=0.3)
    ids = np.random.default_rng(seed).integers(low, high, (32, LENGTH)).astype(np.int32)
    ids[:4, LENGTH // 2:] = 0  # some padding
    return config, pretraining_masks.with_masks(tf.constant(ids), tf.constant([seed, 1]), config)


def test_uniform_draws_regular_tokens_over_the_whole_vocabulary():
    config, batch = masked_batch(1, 5, 9)
    sample, remember = electra_replacements.proposals("uniform")
    remember(batch)
    drawn = sample(tf.zeros((32, config.max_predictions, VOCAB)), batch["seed"], config.first_regular_id).numpy()
    assert drawn.shape == (32, config.max_predictions)
    assert drawn.min() >= config.first_regular_id and drawn.max() < VOCAB
    assert len(np.unique(drawn)) > 30  # not the batch's 4 distinct tokens


def test_unigram_draws_from_the_batchs_chosen_tokens_at_their_frequency():
    config, batch = masked_batch(2, 5, 9)
    ids = batch["original_ids"].numpy()
    ids_with_sevens = np.where(ids == 8, 7, ids)  # 7 now twice as common as 5 or 6 among the regular tokens
    batch = pretraining_masks.with_masks(tf.constant(ids_with_sevens), tf.constant([2, 1]), config)
    sample, remember = electra_replacements.proposals("unigram")
    remember(batch)
    drawn = sample(tf.zeros((32, config.max_predictions, VOCAB)), batch["seed"], config.first_regular_id).numpy()
    assert set(np.unique(drawn)) == {5, 6, 7}  # no padding, no special id of the unused slots
    shares = np.bincount(drawn.ravel(), minlength=8)[5:8] / drawn.size
    np.testing.assert_allclose(shares, [0.25, 0.25, 0.5], atol=0.06)


def test_a_pretrainer_with_replaced_proposals_labels_what_it_wrote(monkeypatch):
    monkeypatch.setattr(pretraining, "sample", pretraining.sample)
    monkeypatch.setattr(pretraining.Pretrainer, "call", pretraining.Pretrainer.call)
    electra_replacements.replace_proposals("unigram")
    config, batch = masked_batch(3, 5, 45)
    model = pretraining.build_pretrainer(config)
    out = model(batch, training=False)
    replaced, original = out["replaced"].numpy(), batch["original_ids"].numpy()
    positions, used = batch["mask_positions"].numpy(), batch["mask_weights"].numpy() > 0
    chosen = np.zeros_like(replaced)
    for row in range(len(original)):
        chosen[row, positions[row][used[row]]] = True
    assert replaced.any() and not np.any(replaced & ~chosen) and not np.any(replaced[original == 0])
    # A batch of one regular token: drawn from its own chosen tokens, every replacement equals the original
    # (the generator, untrained over 45 regular ids, would replace nearly all of them).
    config, batch = masked_batch(4, 7, 8)
    assert not model(batch, training=False)["replaced"].numpy().any()
