"""The Python API across runs and bad arguments (issue 52): the models zoo.train and zoo.load return keep
answering after later runs in the same process (every run seeds TensorFlow, keras.utils.set_random_seed, which
clears its eager caches, and with them the kernel that owned TF Text's SentencePiece resource: `predict` then
failed with `NotFoundError: ... SentencepieceResource ... does not exist`); and an argument of the wrong kind
is refused naming it, with nothing written, instead of Python's own TypeError or FileExistsError."""

import keras
import pytest
import tensorflow as tf

import zoo
from zoo.data import tokenizer

QUICK = {"preset": "tiny", "dataset": "sst2", "max_examples": 200, "vocab_size": 300, "batch_size": 16,
         "train_steps": 2, "checkpoint_every": 2, "mode": "train"}
TEXTS = ["a wonderful, moving film", "dull and far too long"]


def test_models_keep_answering_after_a_later_run_in_the_process(tmp_path):
    trained = zoo.train("sentiment", model_dir=tmp_path / "first", **QUICK)
    loaded = zoo.load(tmp_path / "first")
    answers = trained.predict(TEXTS)
    assert loaded.predict(TEXTS) == answers
    zoo.train("sentiment", model_dir=tmp_path / "second", **{**QUICK, "seed": 1})
    assert trained.predict(TEXTS) == answers
    assert loaded.predict(TEXTS) == answers


def test_a_sentencepiece_tokenizer_outlives_tensorflow_clearing_its_caches():
    """What every family's SentencePiece tokenizer (sentiment, translation, the subword LM, pretraining) rests on,
    in graph code (a server's tf.function) and eagerly."""
    words = ["film", "plot", "actor", "scene", "story", "moving", "dull", "long", "witty", "lovely", "bleak"]
    texts = [" ".join(words[(i * 7 + j) % len(words)] for j in range(i % 9 + 3)) for i in range(400)]
    tok = tokenizer.load_tokenizer(tokenizer.train_tokenizer(texts, 30))
    graph = tf.function(lambda batch: tok.tokenize(batch))
    batch = tf.constant(TEXTS)
    before = graph(batch).to_list()
    keras.utils.set_random_seed(3)  # as every training run does
    assert graph(batch).to_list() == before
    assert tok.tokenize(batch) == before  # keras-hub answers an eager call with lists


BAD_ARGUMENTS = [
    (lambda base: zoo.train("sentiment", model_dir=None, **QUICK), TypeError,
     r"model_dir=None must be the path of a folder \(a str or os.PathLike\), not NoneType"),
    (lambda base: zoo.train("sentiment", model_dir=7, **QUICK), TypeError, "model_dir=7 must be the path of a folder"),
    (lambda base: zoo.train("sentiment", model_dir=base / "data.csv", **QUICK), ValueError,
     r"data\.csv is a file, not a folder: give a folder path"),
    (lambda base: zoo.train("sentiment", model_dir=base / "run", export_dir=base / "data.csv", **QUICK), ValueError,
     r"--export_dir=.*data\.csv is a file, not a folder"),
    (lambda base: zoo.train("sentiment", model_dir=base / "run", overrides="model.num_layers=2", **QUICK), TypeError,
     r"overrides='model.num_layers=2' must be a list of dotted fields, e.g. \['model.num_layers=2'\], not one "
     "string"),
    (lambda base: zoo.train("sentiment", model_dir=base / "run", overrides=[2], **QUICK), TypeError,
     r"overrides\[0\]=2 must be 'field=value' or a \(field, value\) pair"),
    (lambda base: zoo.train("sentiment", model_dir=base / "run", overrides={"model.num_heads": 3}, **QUICK),
     ValueError, "model.num_heads=3 does not divide model.hidden_dim"),  # a mapping is taken as its items
    (lambda base: zoo.train("sentiment", model_dir=base / "run", average_checkpoints="2", **QUICK), TypeError,
     "average_checkpoints='2' must be a whole number"),
    (lambda base: zoo.train("sentiment", model_dir=base / "run", epochs="1", **{**QUICK, "train_steps": None}),
     TypeError, "epochs='1' must be a number, not str"),
    (lambda base: zoo.load(None), TypeError, "path=None must be the path of a run folder or an export"),
    (lambda base: zoo.load(base / "run", average="3"), TypeError, "average='3' must be a whole number"),
    (lambda base: zoo.load(base / "run", average=0), ValueError, "average=0 must be between 1 and"),
]


@pytest.mark.parametrize("call, error, message", BAD_ARGUMENTS, ids=[
    "model_dir None", "model_dir a number", "model_dir a file", "export_dir a file", "overrides a string",
    "an override a number", "overrides a mapping", "average_checkpoints a string", "epochs a string",
    "load None", "load average a string", "load average 0"])
def test_an_argument_of_the_wrong_kind_is_refused_by_name_before_anything_is_written(tmp_path, call, error, message):
    (tmp_path / "data.csv").write_text("text,label\ngood,1\n")
    with pytest.raises(error, match=message):
        call(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv"]
