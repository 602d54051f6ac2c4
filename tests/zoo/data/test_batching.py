import numpy as np

from zoo.data import batching, tokenizer


def test_epoch_batches_cover_every_example_once_in_buckets():
    lengths = np.random.default_rng(0).integers(1, 100, size=1000)
    batches = batching.epoch_batches(lengths, 16, np.random.default_rng(1))
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    assert max(len(b) for b in batches) <= 16
    # Bucketing: a batch's lengths are much closer than random (spread over 1..99).
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    assert spread < 10


def test_token_budget_batches_fit_max_tokens():
    lengths = np.random.default_rng(0).integers(1, 50, size=500)
    for batch in batching.epoch_batches(lengths, 10**6, np.random.default_rng(2), max_tokens=200):
        assert len(batch) * lengths[batch].max() <= 200 or len(batch) == 1


def test_training_plan_is_a_pure_function_of_the_seed_and_splits_per_replica():
    lengths = np.arange(1, 97)
    plan = batching.training_plan(lengths, steps=30, batch_size=8, seed=5, num_replicas=2)
    again = batching.training_plan(lengths, steps=30, batch_size=8, seed=5, num_replicas=2)
    assert len(plan) == 60
    assert all(np.array_equal(a, b) for a, b in zip(plan, again))
    assert all(len(part) == 4 for part in plan)
    # Consecutive parts of one step come from one global batch of 8.
    other = batching.training_plan(lengths, steps=30, batch_size=8, seed=6, num_replicas=2)
    assert not all(np.array_equal(a, b) for a, b in zip(plan, other))


def test_pipeline_part_gives_each_worker_its_own_replicas():
    plan = [np.array([i]) for i in range(12)]  # 3 steps x 4 replicas
    first = batching.pipeline_part(plan, num_pipelines=2, pipeline_id=0, replicas_per_pipeline=2)
    second = batching.pipeline_part(plan, num_pipelines=2, pipeline_id=1, replicas_per_pipeline=2)
    assert [int(p[0]) for p in first] == [0, 1, 4, 5, 8, 9]
    assert [int(p[0]) for p in second] == [2, 3, 6, 7, 10, 11]


def test_plan_dataset_pads_gathers_and_skips():
    rows = [np.array([5, 6, 7]), np.array([8]), np.array([9, 10])]
    labels = np.array([1, 0, 1], np.int32)
    plan = [np.array([1, 0]), np.array([2])]
    batches = list(batching.plan_dataset(plan, {"token_ids": rows, "label": labels}).as_numpy_iterator())
    assert batches[0]["token_ids"].tolist() == [[8, 0, 0, 0, 0, 0, 0, 0], [5, 6, 7, 0, 0, 0, 0, 0]]
    assert batches[0]["label"].tolist() == [0, 1]
    assert batches[1]["token_ids"].tolist() == [[9, 10, 0, 0, 0, 0, 0, 0]]
    skipped = list(batching.plan_dataset(plan, {"token_ids": rows, "label": labels}, skip=1).as_numpy_iterator())
    assert len(skipped) == 1 and skipped[0]["label"].tolist() == [1]


def test_the_tokenizer_learns_from_texts_longer_than_sentencepieces_limit():
    # SentencePiece silently skips sentences over 4192 bytes: every one of these would be lost.
    texts = [" ".join(f"word{(i * 7 + j) % 300}" for j in range(1000)) for i in range(40)]
    assert min(map(len, texts)) > tokenizer.MAX_SENTENCE_BYTES
    pieces = list(tokenizer.training_pieces(texts))
    assert all(len(p) <= tokenizer.MAX_SENTENCE_BYTES // 4 for p in pieces)
    assert " ".join(pieces).split() == " ".join(texts).split()
    vocab = tokenizer.load_tokenizer(tokenizer.train_tokenizer(texts, 200))
    assert vocab.vocabulary_size() == 200


def test_padding_rounds_up_to_eight_but_not_past_the_models_positions():
    rows = batching.ragged([np.arange(1, 10), np.arange(1, 4)])  # 9 and 3 tokens
    assert batching.padded(rows).shape == (2, 16)
    capped = batching.padded(rows, max_length=12).numpy()
    assert capped.shape == (2, 12) and capped[0, :9].tolist() == list(range(1, 10)) and not capped[:, 9:].any()
    assert batching.padded(rows, max_length=32).shape == (2, 16)
    [batch] = batching.plan_dataset([np.array([0, 1])], {"token_ids": [np.arange(1, 10), np.arange(1, 4)]},
                                    max_length=10)
    assert batch["token_ids"].shape == (2, 10)


def test_each_field_may_have_its_own_cap():
    """A translation batch: sources take max_length positions, targets (<s> ... </s>) one more."""
    fields = {"source": [np.arange(1, 13), np.arange(1, 4)], "target": [np.arange(1, 14), np.arange(1, 5)],
              "other": [np.arange(1, 10)] * 2}
    [batch] = batching.plan_dataset([np.array([0, 1])], fields, max_length={"source": 12, "target": 13})
    assert batch["source"].shape == (2, 12) and batch["target"].shape == (2, 13)
    assert batch["other"].shape == (2, 16)  # a field the dict does not name is rounded up as usual
