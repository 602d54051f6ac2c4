"""Word vectors in the language-model recipe (issue 49): PTB's own word vocabulary looked up in GloVe 6B 50d, the
embedding started from the vectors rescaled to the layer's spread (50 wide, projected to the tiny model's 64),
frozen when asked, the coverage recorded, resumed, exported and reproduced from config.json bit for bit; bad files
refused before any write, and word vectors at another level refused at config time."""

import collections
import contextlib
import gzip
import io
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo.core.config import ConfigError

DATA = os.environ["ZOO_DATA_DIR"]
GLOVE = os.path.join(DATA, "glove", "glove.6B.50d.txt.gz")
QUICK = {"dataset": "ptb", "preset": "tiny", "batch_size": 4, "train_steps": 4, "checkpoint_every": 2,
         "mode": "train"}
SPECIALS = ("<pad>", "<unk>", "<eos>")


def train(model_dir, **keywords):
    """zoo.train("lm", ...) with its printed output returned beside the model."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model = zoo.train("lm", model_dir=model_dir, **keywords)
    return model, out.getvalue()


@pytest.fixture(scope="module", name="ptb_counts")
def ptb_counts_fixture():
    """PTB's training tokens, read here: words split at spaces, <eos> ending every line."""
    counts = collections.Counter()
    with gzip.open(os.path.join(DATA, "ptb", "ptb.train.txt.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            words = line.split()
            counts.update(words + ["<eos>"] if words else [])
    return counts


@pytest.fixture(scope="module", name="glove")
def glove_fixture(ptb_counts):
    """GloVe's vectors of PTB's words, read here with gzip and NumPy (not zoo.data.vectors_file)."""
    rows = {}
    with gzip.open(GLOVE, "rt", encoding="utf-8") as f:
        for line in f:
            word, values = line.rstrip("\n").split(" ", 1)
            if word in ptb_counts and word not in rows:
                rows[word] = np.array(values.split(" "), np.float32)
    return rows


@pytest.fixture(scope="module", name="trained")
def trained_fixture(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("glove") / "run"
    _, log = train(model_dir, word_vectors=GLOVE, **QUICK)
    return str(model_dir), log


@pytest.fixture(scope="module", name="frozen")
def frozen_fixture(tmp_path_factory):
    base = tmp_path_factory.mktemp("frozen")
    model, _ = train(base / "run", word_vectors=GLOVE, freeze_word_vectors=True, export_dir=base / "export", **QUICK)
    return str(base / "run"), str(base / "export"), model


def saved_tensors(model_dir, step):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def embedding_at(model_dir, step):
    (name,) = [n for n in saved_tensors(model_dir, step) if n.startswith("model/embedding/_embeddings/")]
    return saved_tensors(model_dir, step)[name]


def vocabulary(model_dir):
    with open(os.path.join(model_dir, "vocabulary.json"), encoding="utf-8") as f:
        return json.load(f)["tokens"]


def record(model_dir):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def test_the_frozen_embedding_is_glove_rescaled_to_the_layers_spread(frozen, glove):
    model_dir, _, _ = frozen
    words = vocabulary(model_dir)
    matrix = embedding_at(model_dir, 4)
    assert matrix.shape == (10_001, 50) and words[:2] == ["<pad>", "<unk>"]
    found = [i for i, word in enumerate(words) if word in glove and word not in SPECIALS]
    expected = np.stack([glove[words[i]] for i in found])
    scale = matrix[found] / expected  # one number for every found word and dimension
    np.testing.assert_allclose(scale, scale.flat[0], rtol=1e-5)
    assert abs(matrix[found].std() - 50**-0.5) < 1e-4  # x sqrt(50) in the model: unit variance, as a random start
    for word in ("the", "company", "stock", "n't"):  # a few rows by name
        np.testing.assert_allclose(matrix[words.index(word)], glove[word] * scale.flat[0], rtol=1e-5)
    np.testing.assert_array_equal(matrix[0], 0)  # <pad>
    np.testing.assert_array_equal(embedding_at(model_dir, 2), matrix)  # frozen: the tied table is not trained
    tensors = saved_tensors(model_dir, 4)
    assert any(name.startswith("model/embedding_projection/_kernel/") for name in tensors)  # 50 -> 64
    assert any(name.startswith("model/output_projection/_kernel/") for name in tensors)  # 64 -> 50


def test_an_unfrozen_embedding_starts_from_the_same_vectors_and_trains(trained, frozen, glove):
    model_dir, _ = trained
    words, started = vocabulary(model_dir), embedding_at(frozen[0], 4)
    found = [i for i, word in enumerate(words) if word in glove and word not in SPECIALS]
    after_two, after_four = embedding_at(model_dir, 2), embedding_at(model_dir, 4)
    assert not np.array_equal(after_two, after_four)
    np.testing.assert_allclose(after_two[found], started[found], atol=1e-3)  # two warm-up steps from step 0's
    assert record(model_dir)["derived"]["word_vectors"]["matrix_sha256"] == \
        record(frozen[0])["derived"]["word_vectors"]["matrix_sha256"]


def test_the_log_and_the_record_say_the_coverage(trained, ptb_counts, glove):
    model_dir, log = trained
    saved = record(model_dir)
    assert saved["model"]["embedding_dim"] == 50 and saved["model"]["hidden_dim"] == 64
    assert saved["model"]["vocab_size"] == 10_001 and saved["model"]["word_vectors"] == GLOVE
    assert saved["model"]["freeze_word_vectors"] is False and saved["model"]["min_vector_coverage"] == 0.2
    covered = saved["derived"]["word_vectors"]
    found = [word for word in ptb_counts if word in glove and word not in SPECIALS]
    share = sum(ptb_counts[word] for word in found) / sum(ptb_counts.values())
    assert covered["words_in_text"] == 10_000 and covered["words_found"] == len(found)
    assert covered["token_share"] == pytest.approx(share, abs=1e-6) and 0.8 < share < 0.95
    assert (covered["format"], covered["dim"], covered["rows_read"], covered["duplicates"]) == ("glove", 50, 400_000, 0)
    line = f"word vectors: {len(found):,} of 10,000 words, {share:.1%} of training tokens (glove, 50 dimensions"
    assert line in log


def test_a_run_is_reproduced_bit_for_bit_from_its_config_json(trained, tmp_path):
    model_dir, _ = trained
    train(tmp_path / "again", config=os.path.join(model_dir, "config.json"), mode="train")
    for step in (2, 4):
        expected, got = saved_tensors(model_dir, step), saved_tensors(tmp_path / "again", step)
        assert sorted(got) == sorted(expected)
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_resumed_run_plans_again_and_ends_as_the_uninterrupted_one(trained, tmp_path):
    model_dir, _ = trained
    resumed = tmp_path / "resumed"
    shutil.copytree(model_dir, resumed)
    for name in os.listdir(resumed):  # as a run killed right after its step-2 checkpoint leaves it
        if name.startswith("ckpt-4"):
            os.remove(resumed / name)
    (resumed / "checkpoint").write_text('model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')
    _, log = train(resumed, word_vectors=GLOVE, **QUICK)
    assert "Resuming from step 2" in log and "word vectors: " in log
    expected, got = saved_tensors(model_dir, 4), saved_tensors(resumed, 4)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    # A record that started from another matrix (the vectors file changed since): refused before any write.
    saved = record(resumed)
    saved["derived"]["word_vectors"]["matrix_sha256"] = "0" * 64
    (resumed / "config.json").write_text(json.dumps(saved))
    files = sorted(os.listdir(resumed))
    with pytest.raises(ValueError, match=r"glove.6B.50d.txt.gz is not the vectors file .* started from"):
        train(resumed, word_vectors=GLOVE, **{**QUICK, "train_steps": 6})
    assert sorted(os.listdir(resumed)) == files


def test_the_export_scores_as_the_run_does(frozen):
    _, export_dir, model = frozen
    texts = ["the company said it expects higher earnings", "n't the stock <unk>"]
    served = zoo.load(export_dir).score(texts)
    for a, b in zip(served, model.score(texts)):
        assert a["tokens"] == b["tokens"] and a["log_likelihood"] == pytest.approx(b["log_likelihood"], abs=1e-3)


@pytest.mark.parametrize("content, overrides, message", [
    ("the 0.1 0.2 0.3\ncompany 0.1 0.2\n", {}, r"vectors.txt:2: .*"),  # ragged
    ("the 0.1 nan 0.3\n", {}, r"vectors.txt:1: .*"),
    ("der 0.1 0.2\nund 0.3 0.4\nthe 0.1 0.1\n", {}, r"word vectors cover \d+\.\d% of training tokens .*right file or "
                                                   r"language\? \(lower the threshold with --config.model.min_vector"),
    ("the 0.1 0.2 0.3\n", {"overrides": ["model.embedding_dim=64", "model.min_vector_coverage=0"]},
     r"model.embedding_dim=64 but the word vectors of .*vectors.txt have 3 dimensions"),
])
def test_a_bad_vectors_file_is_refused_before_anything_is_written(content, overrides, message, tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        train(tmp_path / "run", word_vectors=str(path), **overrides, **QUICK)
    assert not os.path.exists(tmp_path / "run")


@pytest.mark.parametrize("keywords, message", [
    ({"dataset": "tinyshakespeare"}, r"data.level is char \(tinyshakespeare's own\)"),
    ({"dataset": "text:{tmp}/*.txt", "level": "char"}, r"data.level is char: train on word-level text \(ptb, "
                                                        r"wikitext103, or your files with --level=word\)"),
    ({"dataset": "text:{tmp}/*.txt"}, r"data.level is subword \(your files' default\)"),
])
def test_word_vectors_at_another_level_are_refused_at_config_time(keywords, message, tmp_path):
    (tmp_path / "a.txt").write_text("some words\n" * 100)
    keywords = {name: value.format(tmp=tmp_path) for name, value in keywords.items()}
    with pytest.raises(ConfigError, match=r"model.word_vectors='vectors.txt' holds vectors of words, but " + message):
        zoo.train("lm", model_dir=tmp_path / "run", word_vectors="vectors.txt", mode="train", **keywords)
    with pytest.raises(ConfigError, match="model.freeze_word_vectors=True needs word_vectors"):
        zoo.train("lm", model_dir=tmp_path / "run", dataset="ptb", freeze_word_vectors=True, mode="train")
    assert not os.path.exists(tmp_path / "run")
