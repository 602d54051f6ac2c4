"""benchmarks/common/costs.py: compute counts by hand, of the typed model configs the run records hold."""

import dataclasses

import pytest

from benchmarks.common.costs import multiply_adds, seq2seq_multiply_adds
from zoo.classifier.model import ClassifierConfig
from zoo.classifier.run_config import SentimentRunConfig
from zoo.language_model.model import LMConfig
from zoo.language_model.run_config import LMRunConfig
from zoo.pretraining.model import PretrainConfig
from zoo.pretraining.run_config import PretrainRunConfig
from zoo.translation.model import TranslatorConfig

CONFIG = LMConfig(hidden_dim=4, num_heads=2, intermediate_dim=8, num_layers=2)
ENCODER = ClassifierConfig(hidden_dim=4, num_heads=2, intermediate_dim=8, num_layers=2)


def test_multiply_adds_counts_projections_attention_feed_forward_and_output_layer():
    # Per layer and position: Q, K, V, O 4 * 4 * 4 = 64; feed-forward 2 * 4 * 8 = 64; content and
    # position scores and weighted values over 10 keys 3 * 10 * 4 = 120. Two layers, 3 positions,
    # one of them projected onto 7 words: 3 * 2 * 248 + 1 * 7 * 4.
    assert multiply_adds(CONFIG, positions=3, keys=10, scored=1, vocab_size=7) == 3 * 2 * 248 + 28


def test_a_window_costs_context_over_t_times_the_memory_when_the_output_layer_is_free():
    memory = multiply_adds(CONFIG, positions=16, keys=512, scored=16, vocab_size=0)
    window = multiply_adds(CONFIG, positions=512, keys=512, scored=16, vocab_size=0)
    assert window / memory == 512 / 16


def test_encoder_multiply_adds_by_hand_for_one_small_configuration():
    from benchmarks.common.costs import encoder_multiply_adds, training_flops

    # Per layer and position: Q, K, V, O 4 * 4 * 4 = 64; feed-forward 2 * 4 * 8 = 64; scores and weighted
    # values over 5 keys 2 * 5 * 4 = 40: 168, two layers, 5 positions. Two positions through the head:
    # Dense 4 * 4 = 16 and the vocabulary projection 7 * 4 = 28 each.
    assert encoder_multiply_adds(ENCODER, length=5, predicted=2, vocab_size=7) == 5 * 2 * 168 + 2 * 44
    assert training_flops(10) == 60


def test_seq2seq_multiply_adds_by_hand_for_one_small_configuration():
    config = TranslatorConfig(hidden_dim=4, num_heads=2, intermediate_dim=8, num_encoder_layers=2, num_decoder_layers=1)
    # Encoder, per layer and source position: Q, K, V, O 4 * 4 * 4 = 64; feed-forward 2 * 4 * 8 = 64; scores and
    # weighted values over 5 keys 2 * 5 * 4 = 40: 168, two layers, 5 positions: 1680.
    # Decoder, per target position: self-attention Q, K, V, O 64 and scores and values over all 3 positions
    # 2 * 3 * 4 = 24; cross-attention Q and O 2 * 4 * 4 = 32 and scores and values over 5 keys 40; feed-forward
    # 64: 224, 3 positions: 672; cross-attention K and V of the 5 encoder outputs 5 * 2 * 4 * 4 = 160. One layer.
    # Output layer: 3 positions onto 7 words, 3 * 7 * 4 = 84.
    assert seq2seq_multiply_adds(config, source_length=5, target_length=3, vocab_size=7) == 1680 + 672 + 160 + 84


def test_flops_per_token_of_a_language_model_run_by_hand():
    from benchmarks.common.costs import flops_per_token

    # A segment of 3 new positions over 3 + 7 keys (the memory), every position scored: per position and layer
    # 248 (the first test), two layers, 3 positions, 3 * 7 * 4 = 84 for the output layer: 1572 multiply-adds,
    # 524 a token, 6 FLOPs a multiply-add in training.
    run = LMRunConfig(model=dataclasses.replace(CONFIG, segment_length=3, memory_length=7, vocab_size=7))
    assert flops_per_token("lm", run, model_dir=None) == 6 * 524


def test_flops_per_token_of_a_masked_lm_run_by_hand_and_none_for_electra():
    from benchmarks.common.costs import flops_per_token

    # 5 positions, ceil(0.3 * 5) = 2 through the head: 5 * 2 * 168 + 2 * 44 = 1768 (the encoder test's count).
    encoder = dataclasses.replace(ENCODER, vocab_size=7)
    model = PretrainConfig(encoder=encoder, objective="mlm", sequence_length=5, mask_rate=0.3)
    assert flops_per_token("pretrain", PretrainRunConfig(model=model), model_dir=None) == pytest.approx(6 * 1768 / 5)
    electra = PretrainRunConfig(model=dataclasses.replace(model, objective="electra"))
    assert flops_per_token("pretrain", electra, model_dir=None) is None


def test_fine_tuning_flops_per_token_by_hand():
    """One layer, width 4, FFN 8, rows of 2 tokens: per position 4*4*4 (Q, K, V, O) + 2*4*8 (FFN)
    + 2*2*4 (scores and values over 2 keys) = 144 multiply-adds forward, 6 FLOPs each in training."""
    from benchmarks.common.costs import flops_per_token

    model = ClassifierConfig(hidden_dim=4, num_heads=2, intermediate_dim=8, num_layers=1, max_length=2, vocab_size=99)
    assert flops_per_token("finetune", SentimentRunConfig(model=model), None) == 6 * 144


def test_translation_flops_per_token_reads_the_runs_data_and_averages_over_its_pairs(monkeypatch):
    """The run's own pairs (its dataset, languages, max_examples and seed, from the typed record), tokenized by its
    tokenizers: every pair's multiply-adds over all their counted tokens, sources with </s>, decoder inputs <s> +
    target."""
    import numpy as np

    from benchmarks.common.costs import flops_per_token, training_flops
    from zoo.runs.run_dir import RunDir
    from zoo.training.config import TrainConfig
    from zoo.translation import corpora, preprocessor
    from zoo.translation.run_config import TranslateRunConfig, TranslationData

    asked = []
    pairs = corpora.Translation(["a b", "c"], ["x", "y z"])
    monkeypatch.setattr(corpora, "load_translation", lambda *args: asked.append(args) or pairs)
    monkeypatch.setattr(corpora, "subsample_pairs", lambda data, count, seed: asked.append((count, seed)) or data)
    monkeypatch.setattr(RunDir, "tokenizers", lambda self, shared: asked.append((self.path, shared)) or ("s", "t"))
    # Rows as the tokenizers would make them: a source's words and </s>; <s>, a target's words and </s>.
    monkeypatch.setattr(preprocessor, "source_rows", lambda tok, texts, n: [np.ones(len(t.split()) + 1) for t in texts])
    monkeypatch.setattr(preprocessor, "target_rows", lambda tok, texts, n: [np.ones(len(t.split()) + 2) for t in texts])
    model = TranslatorConfig(source_vocab_size=7, target_vocab_size=7, hidden_dim=4, num_heads=2, intermediate_dim=8,
                             num_encoder_layers=2, num_decoder_layers=1)
    run = TranslateRunConfig(data=TranslationData(dataset="tfds:wmt", source="fr", target="en", max_examples=2),
                             model=model, train=TrainConfig(seed=3))
    # Pair 1: 3 source positions (a b </s>), 2 decoder inputs (<s> x); pair 2: 2 and 3. 10 counted tokens.
    work = seq2seq_multiply_adds(model, 3, 2, 7) + seq2seq_multiply_adds(model, 2, 3, 7)
    assert flops_per_token("translate", run, "runs/x") == pytest.approx(training_flops(work / 10))
    assert asked == [("tfds:wmt", "train", "fr", "en"), (2, 3), ("runs/x", True)]
