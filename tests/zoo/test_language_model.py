"""Transformer-XL language model: memory equivalence, stop-gradient, cached generation,
stream batching and exact resumption with the memory."""

import dataclasses
import gc
import weakref

import keras
import numpy as np
import pytest
import tensorflow as tf

from layers import look_ahead_mask
from zoo import language_model as lm
from zoo.distribute import make_strategy
from zoo.training import Task, Trainer, TrainConfig, restore_model
from zoo.vocabulary import Vocabulary

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
    cached = lm.generate(model, tf.ragged.constant(prompts, dtype=tf.int32), 10, greedy=True).numpy()
    for row, prompt in zip(cached, prompts):
        recomputed = lm.generate_recomputing(model, [prompt], 10).numpy()[0]
        np.testing.assert_array_equal(row, recomputed)
    assert len(np.unique(cached)) > 3


def test_stream_batching_keeps_every_stream_contiguous():
    corpus = np.arange(1, 101, dtype=np.int32)  # 100 tokens, each its own position
    streams = lm.stream_layout(corpus, 4)  # 4 streams of 25
    np.testing.assert_array_equal(streams[1], np.arange(26, 51))
    replicas, segment = 2, 4
    per_pass = lm.segments_per_pass(streams, segment)  # (25 - 1) // 4 = 6
    elements = list(lm.stream_dataset(streams, segment, replicas, 0, replicas, 0, 2 * per_pass).as_numpy_iterator())
    assert len(elements) == 2 * per_pass * replicas
    for replica in range(replicas):
        mine = elements[replica::replicas]
        for step, batch in enumerate(mine):
            expected_rows = streams[replica * 2 : replica * 2 + 2]
            begin = (step % per_pass) * segment
            np.testing.assert_array_equal(batch["inputs"], expected_rows[:, begin : begin + segment])
            np.testing.assert_array_equal(batch["labels"], expected_rows[:, begin + 1 : begin + segment + 1])
            assert batch["reset"] == (step % per_pass == 0)
            if step % per_pass:
                np.testing.assert_array_equal(batch["inputs"][:, 0], mine[step - 1]["labels"][:, -1])


def test_stream_dataset_starts_at_the_resumed_step():
    streams = lm.stream_layout(np.arange(1, 101, dtype=np.int32), 2)
    whole = list(lm.stream_dataset(streams, 4, 1, 0, 1, 0, 10).as_numpy_iterator())
    resumed = list(lm.stream_dataset(streams, 4, 1, 0, 1, 7, 10).as_numpy_iterator())
    for a, b in zip(whole[7:], resumed):
        np.testing.assert_array_equal(a["inputs"], b["inputs"])


def test_random_offset_starts_every_pass_at_its_own_offset_and_keeps_streams_contiguous():
    streams = lm.stream_layout(np.arange(1, 401, dtype=np.int32), 2)  # rows of 200 consecutive ids
    segment, seed, passes = 16, 3, 8
    per_pass = lm.segments_per_pass(streams, segment, random_offset=True)
    assert per_pass == (200 - 1 - 15) // segment == lm.segments_per_pass(streams, segment) - 1
    elements = list(lm.stream_dataset(streams, segment, 1, 0, 1, 0, passes * per_pass, offset_seed=seed)
                    .as_numpy_iterator())
    offsets = []
    for p in range(passes):
        first = elements[p * per_pass]
        offset = int(first["inputs"][0, 0] - streams[0, 0])
        assert 0 <= offset < segment and offset == int(lm.pass_offset(seed, p, segment))
        offsets.append(offset)
        for s, batch in enumerate(elements[p * per_pass : (p + 1) * per_pass]):
            begin = offset + s * segment
            np.testing.assert_array_equal(batch["inputs"], streams[:, begin : begin + segment])
            np.testing.assert_array_equal(batch["labels"], streams[:, begin + 1 : begin + segment + 1])
            assert batch["reset"] == (s == 0)
    assert len(set(offsets)) > 3  # the boundaries move between passes
    other_seed = lm.stream_dataset(streams, segment, 1, 0, 1, 0, passes * per_pass, offset_seed=seed + 1)
    assert [int(e["inputs"][0, 0]) for e in other_seed.as_numpy_iterator()][::per_pass] != [
        int(e["inputs"][0, 0]) for e in elements][::per_pass]
    resumed = list(lm.stream_dataset(streams, segment, 1, 0, 1, 2 * per_pass + 5, passes * per_pass,
                                     offset_seed=seed).as_numpy_iterator())
    for a, b in zip(elements[2 * per_pass + 5 :], resumed, strict=True):
        np.testing.assert_array_equal(a["inputs"], b["inputs"])
        assert a["reset"] == b["reset"]


def test_random_offset_windows_stay_inside_their_rows_for_every_row_length(monkeypatch):
    """The largest offset, segment_length - 1, on rows of every length: every window fits, and
    no further segment would have fitted."""
    segment = 5
    monkeypatch.setattr(lm, "pass_offset", lambda seed, index, length: tf.constant(length - 1))
    for row in range(segment + 1, 4 * segment + 2):
        streams = lm.stream_layout(np.arange(1, 2 * row + 1, dtype=np.int32), 2)
        per_pass = lm.segments_per_pass(streams, segment, random_offset=True)
        if row < 2 * segment:  # no room for a segment after the offset
            assert per_pass == 0
            with pytest.raises(ValueError, match="random offset"):
                lm.stream_dataset(streams, segment, 1, 0, 1, 0, 1, offset_seed=0)
            continue
        elements = list(lm.stream_dataset(streams, segment, 1, 0, 1, 0, per_pass, offset_seed=0).as_numpy_iterator())
        assert elements[-1]["labels"][0, -1] == streams[0, (segment - 1) + per_pass * segment]  # inside the row
        assert (segment - 1) + (per_pass + 1) * segment >= row  # one more segment's last label would not be


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
    streams = lm.stream_layout(corpus, 4)
    replicas = strategy.num_replicas_in_sync
    config = TrainConfig(train_steps=steps, batch_size=4, learning_rate=1e-3, warmup_steps=2, checkpoint_every=3,
                         log_every=3, label_smoothing=0.0)

    def dataset(context, start):
        local = replicas // context.num_input_pipelines
        return lm.stream_dataset(streams, CONFIG.segment_length, replicas, 0, local, start, steps)

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
    log_likelihood, count = lm.score_texts(model, vocabulary, tf.constant(["3 4 5 6 7 8 9 10", ""]))
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
    streams = lm.stream_layout(np.random.default_rng(4).integers(2, 40, size=26).astype(np.int32), 2)  # 13 each
    nll, count = lm.evaluate_streams(model, streams, 6)
    window_model = lm.build_language_model(lm.with_memory_length(CONFIG, 0))  # the same weights, no memory
    window_model.set_weights(model.get_weights())
    window_nll, window_count = lm.evaluate_sliding_window(window_model, streams, 6, context=12)
    assert count == window_count == 24
    np.testing.assert_allclose(nll, window_nll, rtol=1e-5)


def test_evaluation_traces_once_per_model_and_the_compiled_steps_go_with_the_model():
    model = lively()
    streams = lm.stream_layout(np.random.default_rng(5).integers(2, 40, size=26).astype(np.int32), 2)
    first = lm.evaluate_streams(model, streams, 6)
    assert lm.evaluate_streams(model, streams, 6) == first
    assert lm._COMPILED[model]["nll"].experimental_get_tracing_count() == 1
    owner, cached = weakref.ref(model), len(lm._COMPILED)
    del model
    gc.collect()
    assert owner() is None and len(lm._COMPILED) <= cached - 1  # gc may collect other tests' models too
