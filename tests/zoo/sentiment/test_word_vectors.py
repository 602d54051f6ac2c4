"""Word vectors in the sentiment recipe (issue 49): a word vocabulary from the training text, the embedding
started from a vectors file (rescaled to the layer's own spread), frozen when asked, recorded, refused before any
write when the file is bad or covers too little, served from raw text, and reproduced from config.json."""

import collections
import gzip
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.conftest import fresh_process_json
from zoo.data import datasets, word_tokenizer

QUICK = {"preset": "tiny", "dataset": "sst2", "max_examples": 300, "batch_size": 16, "train_steps": 4,
         "checkpoint_every": 2, "mode": "train", "vocab_size": 400}
DIM = 12


def sst2_words(count):
    """The `count` commonest words of the first 300 SST-2 training sentences, as the zoo's tokenizer splits them
    (the Python reference below is not the zoo's code: lower-cased, split at spaces, words of letters)."""
    texts = datasets.load_classification("sst2", "train").texts[:2000]
    counts = collections.Counter(w for t in texts for w in re.findall(r"[a-z]+", t.lower()))
    return [w for w, _ in counts.most_common(count)]


@pytest.fixture(scope="module", name="vectors")
def vectors_fixture(tmp_path_factory):
    """A GloVe-format file (gzip, named .txt to show the content decides) of DIM numbers for common SST-2 words,
    and the vectors by word."""
    rng = np.random.default_rng(7)
    table = {word: rng.normal(0.1, 0.4, DIM).astype(np.float32) for word in sst2_words(300)}
    path = tmp_path_factory.mktemp("vectors") / "vectors.txt"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for word, vector in table.items():
            f.write(word + " " + " ".join(repr(float(x)) for x in vector) + "\n")
    return str(path), table


@pytest.fixture(scope="module", name="frozen")
def frozen_fixture(vectors, tmp_path_factory):
    path, _ = vectors
    model_dir = tmp_path_factory.mktemp("frozen") / "run"
    model = zoo.train("sentiment", model_dir=model_dir, word_vectors=path, freeze_word_vectors=True, **QUICK)
    return str(model_dir), model


def embedding_at(model_dir, step):
    reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
    # The (vocabulary, DIM) table itself, not Adam's two slots of its shape (optimizer/_variables/...).
    (name,) = [n for n, shape in reader.get_variable_to_shape_map().items() if len(shape) == 2 and shape[1] == DIM
               and not n.startswith("optimizer/_variables/")]
    return reader.get_tensor(name)


def test_the_frozen_embedding_is_the_files_vectors_rescaled_to_the_layers_spread(frozen, vectors):
    model_dir, _ = frozen
    _, table = vectors
    words = word_tokenizer.load_word_tokenizer(model_dir).get_vocabulary()
    matrix = embedding_at(model_dir, 4)
    assert matrix.shape == (len(words), DIM)
    found = [i for i, w in enumerate(words) if w in table]
    assert len(found) > 100
    expected = np.stack([table[words[i]] for i in found])
    scale = matrix[found] / expected  # one number for every found word and dimension
    np.testing.assert_allclose(scale, scale.flat[0], rtol=1e-5)
    assert abs(matrix[found].std() - DIM**-0.5) < 1e-3  # the scaled embedding's own initial spread
    np.testing.assert_array_equal(matrix[0], 0)  # padding
    np.testing.assert_array_equal(embedding_at(model_dir, 2), matrix)  # frozen: not trained


def test_the_record_and_config_say_the_coverage_and_the_vocabulary_is_words(frozen, vectors):
    model_dir, _ = frozen
    with open(os.path.join(model_dir, "config.json")) as f:
        record = json.load(f)
    assert record["model"]["embedding_dim"] == DIM and record["model"]["word_vectors"] == vectors[0]
    covered = record["derived"]["word_vectors"]
    assert covered["format"] == "glove" and covered["dim"] == DIM and covered["rows_read"] == 300
    assert 0.3 < covered["token_share"] < 1 and len(covered["matrix_sha256"]) == 64
    assert not os.path.exists(os.path.join(model_dir, "tokenizer.model"))


def test_an_unfrozen_embedding_trains_and_the_export_serves_raw_text_as_the_run_does(vectors, tmp_path):
    path, _ = vectors
    model = zoo.train("sentiment", model_dir=tmp_path / "run", word_vectors=path, export_dir=tmp_path / "export",
                      **{**QUICK, "mode": "train_and_eval"})
    assert not np.array_equal(embedding_at(tmp_path / "run", 2), embedding_at(tmp_path / "run", 4))
    texts = ["A gorgeous, witty film!", "Don't bother: it's dull.", "", "unheardofword " * 50]
    program = (
        "import json, tensorflow as tf, tensorflow_text\n"
        f"serve = tf.saved_model.load({str(tmp_path / 'export' / '1')!r}).signatures['serving_default']\n"
        f"print(json.dumps(serve(text=tf.constant({texts!r}))['probabilities'].numpy().tolist()))\n"
    )
    served = fresh_process_json(program)
    in_process = [[a["probabilities"][c] for c in ("negative", "positive")] for a in model.predict(texts)]
    np.testing.assert_allclose(served, in_process, atol=1e-5)


def test_a_run_is_reproduced_bit_for_bit_from_its_config_json(frozen, tmp_path):
    model_dir, _ = frozen
    zoo.train("sentiment", model_dir=tmp_path / "again", config=os.path.join(model_dir, "config.json"), mode="train")
    for step in (2, 4):
        a = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
        b = tf.train.load_checkpoint(str(tmp_path / "again" / f"ckpt-{step}"))
        names = [n for n in a.get_variable_to_shape_map() if n != "_CHECKPOINTABLE_OBJECT_GRAPH"]
        assert len(names) > 20 and sorted(names) == sorted(b.get_variable_to_shape_map().keys() - {
            "_CHECKPOINTABLE_OBJECT_GRAPH"})
        for name in names:  # every value, bit for bit (the object graph names layers by this process's counters)
            assert a.get_tensor(name).tobytes() == b.get_tensor(name).tobytes(), name


def test_resuming_with_changed_vectors_is_refused(vectors, tmp_path):
    path, _ = vectors
    own = tmp_path / "vectors.txt"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.readlines()
    own.write_text("".join(lines))  # plain text this time: the content, not the name, says the format
    zoo.train("sentiment", model_dir=tmp_path / "run", word_vectors=str(own), **{**QUICK, "train_steps": 2})
    own.write_text("".join(lines[1:] + lines[:1]))  # the same vectors in another order: the same matrix
    zoo.train("sentiment", model_dir=tmp_path / "run", word_vectors=str(own), **QUICK)  # resumes to step 4
    changed = lines[0].split(" ")
    changed[1] = "9.5"
    own.write_text(" ".join(changed) + "".join(lines[1:]))
    with pytest.raises(ValueError, match="is not the vectors file .* started from"):
        zoo.train("sentiment", model_dir=tmp_path / "run", word_vectors=str(own), **{**QUICK, "train_steps": 6})
    assert not os.path.exists(tmp_path / "run" / "ckpt-6.index")


@pytest.mark.parametrize("content, message", [
    ("the 0.1 0.2 0.3\nfilm 0.1 0.2\n", r"vectors.txt:2: .*"),
    ("", r"vectors.txt.*empty"),
    ("der 0.1 0.2\nund 0.3 0.4\nfilm 0.1 0.1\n", r"word vectors cover 0\.\d% of training tokens .*right file or "
                                                 r"language\? \(lower the threshold with --config.model.min_vector_cov"),
])
def test_a_bad_vectors_file_is_refused_before_anything_is_written(content, message, tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        zoo.train("sentiment", model_dir=tmp_path / "run", word_vectors=str(path), **QUICK)
    assert not os.path.exists(tmp_path / "run")


def test_word_vectors_with_a_subword_tokenizer_are_refused_at_config_time(tmp_path):
    from zoo.core.config import ConfigError

    with pytest.raises(ConfigError, match="model.word_vectors=.* needs model.tokenizer='words'"):
        zoo.train("sentiment", model_dir=tmp_path / "run", word_vectors="x.txt",
                  overrides=["model.tokenizer=subword"], **QUICK)
    with pytest.raises(ConfigError, match="model.freeze_word_vectors=True needs word_vectors"):
        zoo.train("sentiment", model_dir=tmp_path / "run", freeze_word_vectors=True, **QUICK)
    assert not os.path.exists(tmp_path / "run")
