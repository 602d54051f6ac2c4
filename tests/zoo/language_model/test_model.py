"""Transformer-XL language model: memory equivalence, stop-gradient, cached generation, scoring,
evaluation and exact resumption with the memory."""

import dataclasses
import gc
import weakref

import keras
import numpy as np
import pytest
import tensorflow as tf

from benchmarks.common.baselines import evaluate_sliding_window, generate_recomputing
from layers import look_ahead_mask
from zoo.language_model import model as lm
from zoo.language_model import inference as lm_inference
from zoo.training.distribute import make_strategy
from zoo.language_model.preprocessor import stream_dataset, stream_layout, text_ids
from zoo.training.config import Task, TrainConfig
from zoo.training.loop import Trainer
from zoo.runs.checkpoints import restore_model
from zoo.language_model.vocabulary import Vocabulary

CONFIG = dataclasses.replace(lm.PRESETS["tiny"], vocab_size=40, dropout=0.0, segment_length=6, memory_length=6)


def lively(config=CONFIG, seed=0):
    """An untrained model with large embeddings, so its argmax changes from token to token."""
    keras.utils.set_random_seed(seed)
    model = lm.build_language_model(config)
    embedding = model.embedding.embeddings
    embedding.assign(tf.random.stateless_normal(embedding.shape, (seed, 1)))
    return model


def test_second_segment_with_memory_equals_one_long_sequence():
    model = lively()
    ids = tf.constant(np.random.default_rng(0).integers(2, 40, size=(3, 12)), tf.int32)
    first, state = model(ids[:, :6])
    second, _ = model(ids[:, 6:], state)
    whole, _ = model(ids)
    np.testing.assert_allclose(first, whole[:, :6], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(second, whole[:, 6:], rtol=1e-5, atol=1e-5)  # logits up to ~20: float32 sums



def test_logits_to_keep_gives_the_last_positions_logits_and_the_same_state():
    model = lively()
    ids = tf.constant(np.random.default_rng(2).integers(2, 40, size=(2, 8)), tf.int32)
    full, (memories, valid) = model(ids)
    last, (kept_memories, kept_valid) = model(ids, logits_to_keep=3)
    np.testing.assert_allclose(last, full[:, -3:], rtol=1e-5, atol=1e-5)
    for memory, kept in zip(memories, kept_memories):
        np.testing.assert_array_equal(memory, kept)
    np.testing.assert_array_equal(valid, kept_valid)

@pytest.mark.parametrize("same_length", [False, True])
def test_memory_shorter_than_the_segment_equals_the_windowed_block(same_length):
    """One layer: segment 2 with a memory of 3 = the concatenation where each query of
    segment 2 sees at most 3 keys before its segment (with same_length: exactly its last 4 keys)."""
    config = dataclasses.replace(CONFIG, num_layers=1, memory_length=3, same_length=same_length)
    model = lively(config)
    ids = tf.constant(np.random.default_rng(1).integers(2, 40, size=(2, 12)), tf.int32)
    _, state = model(ids[:, :6])
    second, _ = model(ids[:, 6:], state)
    block = model.blocks[0]
    x = model.embedding(ids) * tf.sqrt(tf.cast(config.hidden_dim, tf.float32))
    if same_length:
        allowed = np.array(look_ahead_mask(12, window=4))
    else:
        allowed = np.array(look_ahead_mask(12))
        allowed[6:, :3] = False  # segment 2 sees positions 3..5 of segment 1 and its own past
    hidden, _ = block(x, attention_mask=tf.constant(allowed)[None])
    logits = model.embedding(hidden, reverse=True)
    np.testing.assert_allclose(second, logits[:, 6:], rtol=1e-5, atol=1e-5)  # logits up to ~45: float32 sums


@pytest.mark.parametrize("embedding_dim", [24, 96])
def test_an_embedding_narrower_or_wider_than_the_model_goes_through_projections(embedding_dim):
    """Word vectors' width (model.embedding_dim): tokens x sqrt(embedding_dim) -> Dense -> the block -> Dense ->
    the tied table's transpose, written out with the model's weights; `step` gives `call`'s logits."""
    config = dataclasses.replace(CONFIG, num_layers=1, embedding_dim=embedding_dim)
    model = lively(config)
    table = model.embedding.embeddings.numpy()
    assert table.shape == (40, embedding_dim)
    ids = np.random.default_rng(3).integers(2, 40, size=(2, 6))
    logits, state = model(tf.constant(ids, tf.int32))
    into, out = model.embedding_projection, model.output_projection
    x = table[ids] * np.sqrt(embedding_dim) @ into.kernel.numpy() + into.bias.numpy()
    hidden, _ = model.blocks[0](tf.constant(x), attention_mask=tf.constant(look_ahead_mask(6))[None])
    expected = (hidden.numpy() @ out.kernel.numpy() + out.bias.numpy()) @ table.T
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    step_logits, _ = model.step(tf.constant(ids[:, :1], tf.int32), model.keys_values_state(model.initial_state(2)))
    first, _ = model(tf.constant(ids[:, :1], tf.int32))
    np.testing.assert_allclose(step_logits, first, rtol=1e-5, atol=1e-5)


def test_without_embedding_dim_the_model_has_its_layers_and_weights_of_before():
    """embedding_dim None or hidden_dim: no projection, the table (vocab, hidden_dim): old checkpoints load."""
    for config in (CONFIG, dataclasses.replace(CONFIG, embedding_dim=CONFIG.hidden_dim)):
        model = lm.build_language_model(config)
        assert model.embedding_projection is None and model.output_projection is None
        assert tuple(model.embedding.embeddings.shape) == (40, CONFIG.hidden_dim)
        assert not any("projection" in v.path for v in model.weights)


@pytest.mark.parametrize("tie_embeddings", [True, False])
def test_frozen_word_vectors_leave_the_token_table_out_of_training(tie_embeddings):
    config = dataclasses.replace(CONFIG, embedding_dim=16, word_vectors="vectors.txt", freeze_word_vectors=True,
                                 tie_embeddings=tie_embeddings)
    model = lm.build_language_model(config)
    trained = {v.path for v in model.trainable_variables}
    assert model.embedding.embeddings.path not in trained
    assert "transformer_xl/embedding_projection/kernel" in trained
    assert ("transformer_xl/embedding/reverse_embeddings" in trained) == (not tie_embeddings)  # untied: learns


def test_word_vector_fields_are_checked():
    for fields, message in [({"embedding_dim": 0}, "embedding_dim=0 must be positive"),
                            ({"freeze_word_vectors": True}, "freeze_word_vectors=True needs word_vectors"),
                            ({"min_vector_coverage": 1.5}, r"min_vector_coverage=1.5 must be a share in \[0, 1\]")]:
        with pytest.raises(ValueError, match=message):
            dataclasses.replace(CONFIG, **fields)


def test_no_gradient_reaches_the_previous_segment():
    model = lively()
    ids = tf.constant(np.random.default_rng(2).integers(2, 40, size=(2, 12)), tf.int32)
    with tf.GradientTape() as tape:
        embedded = model.embedding(ids[:, :6])
        tape.watch(embedded)
        _, state = model(ids[:, :6])
        memories, _ = state
        tape.watch(memories)
        logits, _ = model(ids[:, 6:], state)
        loss = tf.reduce_sum(logits)
    gradients = tape.gradient(loss, memories)
    assert all(g is None or not np.any(g.numpy()) for g in gradients)


def test_step_over_keys_values_equals_call_over_memories():
    """Token by token from a segment's memory, `step` (the generation path) gives `call`'s logits."""
    model = lively(dataclasses.replace(CONFIG, tie_embeddings=False))
    tokens = tf.constant(np.random.default_rng(5).integers(2, 40, size=(2, 10)), tf.int32)
    _, state = model(tokens[:, :6])
    cached = model.keys_values_state(state)
    keys = model.position_keys(1)
    for i in range(6, 10):
        expected, state = model(tokens[:, i : i + 1], state)
        logits, cached = model.step(tokens[:, i : i + 1], cached, position_keys=keys)
        np.testing.assert_allclose(logits.numpy(), expected.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(cached[1].numpy(), state[1].numpy())


@pytest.mark.parametrize("prompts", [[[5, 6, 7]], [[5, 6, 7], [9, 10, 11, 12, 13, 14, 15, 16]]])
def test_cached_generation_equals_recomputed_generation(prompts):
    # The whole context fits in memory; an untied output layer keeps an untrained model from echoing its input.
    config = dataclasses.replace(CONFIG, memory_length=32, tie_embeddings=False)
    model = lively(config)
    cached = lm_inference.generate(model, tf.ragged.constant(prompts, dtype=tf.int32), 10, greedy=True).numpy()
    for row, prompt in zip(cached, prompts):
        recomputed = generate_recomputing(model, [prompt], 10).numpy()[0]
        np.testing.assert_array_equal(row, recomputed)
    assert len(np.unique(cached)) > 3


def test_reset_empties_the_memory_at_the_start_of_a_pass():
    model = lively()
    tokens = np.random.default_rng(6).integers(2, 40, size=(2, 2 * CONFIG.segment_length + 1)).astype(np.int32)
    first, second = tokens[:, : CONFIG.segment_length], tokens[:, CONFIG.segment_length :]
    _, state = model(first, model.initial_state(2))
    loss = lm.lm_loss()

    def loss_sum(reset, state):
        batch = {"inputs": second[:, :-1], "labels": second[:, 1:], "reset": tf.constant(reset)}
        return float(loss(model, batch, False, state)[0])

    fresh = loss_sum(False, model.initial_state(2))
    assert loss_sum(True, state) == pytest.approx(fresh, rel=1e-6)
    assert abs(loss_sum(False, state) - fresh) > 1e-3  # the memory does change the loss


def _lm_trainer(model_dir, steps, strategy):
    corpus = np.random.default_rng(0).integers(2, 40, size=4000).astype(np.int32)
    streams = stream_layout(corpus, 4)
    replicas = strategy.num_replicas_in_sync
    config = TrainConfig(train_steps=steps, batch_size=4, learning_rate=1e-3, warmup_steps=2, checkpoint_every=3,
                         log_every=3, label_smoothing=0.0)

    def dataset(context, start):
        local = replicas // context.num_input_pipelines
        return stream_dataset(streams, CONFIG.segment_length, replicas, 0, local, start, steps)

    task = Task(
        build_model=lambda: lm.build_language_model(CONFIG),
        dataset=dataset,
        loss=lm.lm_loss(),
        initial_state=lambda model: model.initial_state(4 // replicas),
    )
    return Trainer(task, config, str(model_dir), strategy)


def test_resumed_training_restores_the_memory_and_matches_uninterrupted_training(tmp_path):
    strategy = make_strategy("one_device")
    straight = _lm_trainer(tmp_path / "straight", 6, strategy)
    straight.train()
    first = _lm_trainer(tmp_path / "resumed", 3, strategy)
    first.train()
    memory_at_3 = [m.numpy() for m in first.state[0]]
    second = _lm_trainer(tmp_path / "resumed", 6, strategy)
    for restored, saved in zip(second.state[0], memory_at_3):
        np.testing.assert_array_equal(restored.numpy(), saved)
    assert second.state[1].numpy().all()  # the memory is full, not reset
    second.train()
    for a, b in zip(straight.model.weights, second.model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    fresh = lm.build_language_model(CONFIG)
    assert restore_model(fresh, str(tmp_path / "straight")) == 6
    for a, b in zip(straight.model.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_score_matches_the_model_on_the_whole_text():
    model = lively()
    vocabulary = Vocabulary(["<pad>", "<unk>", "<eos>"] + [str(i) for i in range(37)], "word")
    token_ids = text_ids(vocabulary, tf.constant(["3 4 5 6 7 8 9 10", ""]))
    log_likelihood, count = lm_inference.score(model, token_ids)
    ids = [vocabulary.boundary_id] + [vocabulary.ids[w] for w in "3 4 5 6 7 8 9 10".split()]
    logits, _ = model(tf.constant([ids[:-1]]))
    log_probs = tf.nn.log_softmax(logits)[0].numpy()
    expected = sum(log_probs[i, ids[i + 1]] for i in range(len(ids) - 1))
    np.testing.assert_allclose(log_likelihood[0], expected, rtol=1e-5)
    assert count.numpy().tolist() == [8, 0] and log_likelihood[1] == 0


def test_sliding_window_and_memory_evaluations_agree_when_the_contexts_match():
    """Memory M = segment T, two segments: memory evaluation sees, for segment 2, exactly the
    context a sliding window of 2T recomputes."""
    model = lively()
    streams = stream_layout(np.random.default_rng(4).integers(2, 40, size=26).astype(np.int32), 2)  # 13 each
    nll, count = lm_inference.evaluate_streams(model, streams, 6)
    window_model = lm.build_language_model(dataclasses.replace(CONFIG, memory_length=0))  # the same weights, no memory
    window_model.set_weights(model.get_weights())
    window_nll, window_count = evaluate_sliding_window(window_model, streams, 6, context=12)
    assert count == window_count == 24
    np.testing.assert_allclose(nll, window_nll, rtol=1e-5)


def test_evaluation_traces_once_per_model_and_the_compiled_steps_go_with_the_model():
    model = lively()
    streams = stream_layout(np.random.default_rng(5).integers(2, 40, size=26).astype(np.int32), 2)
    first = lm_inference.evaluate_streams(model, streams, 6)
    assert lm_inference.evaluate_streams(model, streams, 6) == first
    assert lm_inference._COMPILED[model]["nll"].experimental_get_tracing_count() == 1
    owner, cached = weakref.ref(model), len(lm_inference._COMPILED)
    del model
    gc.collect()
    assert owner() is None and len(lm_inference._COMPILED) <= cached - 1  # gc may collect other tests' models too
