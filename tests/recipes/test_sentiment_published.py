"""End to end: the sentiment recipe fine-tuning a published checkpoint (a tiny random BERT in
Hugging Face's layout), on real SST-2 slices, a few steps: training, resumption, eval, export.

The runs train through zoo.train in this process (tests/recipes/test_sentiment.py trains this recipe from the
command line); the commands that must be refused go through the recipe's entry point in one warm process
(`probe_recipe`)."""

import contextlib
import io
import json
import os

import numpy as np
import pytest

import zoo
from tests.conftest import HANG, as_flags, fresh_process_json
from tests.zoo import _published_fixtures as fixtures

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SETTINGS = {"dataset": "sst2", "max_examples": 200, "batch_size": 8, "max_length": 24, "checkpoint_every": 4}
QUICK = as_flags(SETTINGS)


@pytest.fixture(scope="module", name="checkpoint")
def checkpoint_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("published") / "tiny-bert"
    config = fixtures.bert_config(vocab_size=120, max_positions=32)
    fixtures.write_checkpoint(folder, config, fixtures.random_weights(config, prefix="bert."), fixtures.vocabulary(120),
                              vocab_files=("tokenizer.json",), lowercase=True)
    return str(folder)


@pytest.fixture(scope="module", name="trained")
def trained_fixture(tmp_path_factory, checkpoint):
    """A run fine-tuned 4 steps, then resumed to 8, evaluated and exported: its folders and what each part printed."""
    base = tmp_path_factory.mktemp("sentiment_published")
    model_dir, export_dir = str(base / "run"), str(base / "export")
    with contextlib.redirect_stdout(io.StringIO()) as first:
        zoo.train("sentiment", model_dir, **SETTINGS, init_from=checkpoint, train_steps=4, mode="train")
    with contextlib.redirect_stdout(io.StringIO()) as resumed:
        zoo.train("sentiment", model_dir, **SETTINGS, init_from=checkpoint, train_steps=8, export_dir=export_dir)
    return model_dir, export_dir, first.getvalue(), resumed.getvalue()


def test_the_encoder_starts_from_every_published_weight_and_the_unused_parts_are_named(trained):
    _, _, first, resumed = trained
    assert "Initialized the encoder from" in first
    assert "not used for fine-tuning: cls.predictions, cls.seq_relationship, pooler.dense." in first
    assert "Initialized the encoder" not in resumed  # resumed from its own checkpoint
    assert "step 8/8" in resumed and "validation: accuracy" in resumed


def test_the_run_keeps_the_checkpoints_vocabulary_and_bert_defaults(trained, checkpoint):
    model_dir, _, _, _ = trained
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == fixtures.vocabulary(120)
    assert not os.path.exists(os.path.join(model_dir, "tokenizer.model"))
    with open(os.path.join(model_dir, "config.json")) as f:
        run = json.load(f)
    assert run["setup"]["init_from"] == os.path.abspath(checkpoint)
    assert run["model"]["embedding"] == "normalized" and run["model"]["epsilon"] == 1e-12
    assert run["model"]["max_length"] == 24 and run["model"]["activation"] == "gelu"
    assert run["train"]["learning_rate"] == 5e-5 and run["train"]["schedule"] == "cosine"


def test_training_and_serving_frame_texts_the_same_way(trained):
    """[CLS] + head and tail + [SEP]: the NumPy rows of training and the graph of the export agree."""
    import tensorflow as tf

    from zoo.data import tokenizer
    from zoo.classifier.preprocessor import ClassifierPreprocessor

    model_dir, _, _, _ = trained
    tok = tokenizer.load_tokenizer(model_dir)
    start, end = tokenizer.framing(tok)
    assert (start, end) == (fixtures.vocabulary(120).index("[CLS]"), fixtures.vocabulary(120).index("[SEP]"))
    texts = ["The movie was great!", "", "not bad at all " * 20, "Café déjà vu"]
    preprocessor = ClassifierPreprocessor(tok, 24, start, end)
    rows = preprocessor.rows(texts)
    graph = preprocessor(tf.constant(texts)).numpy()
    for text, row, ids in zip(texts, rows, graph):
        pieces = tokenizer.tokenize(tok, [text])[0].tolist()  # room 22: a head of 5, a tail of 17
        np.testing.assert_array_equal(row, [start, *(pieces if len(pieces) <= 22 else pieces[:5] + pieces[-17:]), end])
        np.testing.assert_array_equal(ids[: len(row)], row)
        assert not ids[len(row):].any()


def test_the_export_answers_in_a_fresh_process_as_the_model_does(trained):
    model_dir, export_dir, _, _ = trained
    with open(os.path.join(export_dir, "1", "ops_manifest.json")) as f:
        manifest = json.load(f)
    texts = ["The movie was great!", "", "x" * 10_000]
    program = (
        "import json\nimport tensorflow as tf\n"
        + ("import tensorflow_text\n" if manifest["non_core_ops"] else "")
        + f"serve = tf.saved_model.load({export_dir!r} + '/1').signatures['serving_default']\n"
        f"out = serve(text=tf.constant({texts!r}))\n"
        "print(json.dumps(out['probabilities'].numpy().tolist()))\n"
    )
    served = np.array(fresh_process_json(program, timeout=HANG))

    import tensorflow as tf

    from zoo.sentiment import recipe as sentiment
    from zoo.classifier.preprocessor import ClassifierPreprocessor

    trained_run = sentiment.load_trained(model_dir)
    ids = ClassifierPreprocessor.for_tokenizer(trained_run.tokenizer, trained_run.config.max_length)(tf.constant(texts))
    expected = tf.nn.softmax(trained_run.model(ids)).numpy()
    np.testing.assert_allclose(served, expected, atol=1e-5)


@pytest.mark.parametrize("flag, message", [
    ("--preset=small", "--preset cannot be set with a published --init_from"),
    ("--vocab_size=500", "model.vocab_size=500 (the encoder of setup.init_from has"),
    ("--config.model.vocab_size=500", "model.vocab_size=500 (the encoder of setup.init_from has"),
    ("--max_length=33", "--max_length=33 must be in [3, 32]"),
    ("--max_length=2", "--max_length=2 must be in [3, 32]"),
])
def test_flags_that_contradict_the_checkpoint_are_refused_before_any_work(checkpoint, tmp_path, flag, message,
                                                                          probe_recipe):
    result = probe_recipe("sentiment", "--dataset=sst2", f"--init_from={checkpoint}", flag,
                          f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "run" / "config.json")


def test_another_architecture_is_refused_with_the_supported_types(tmp_path, probe_recipe):
    folder = tmp_path / "gpt2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": 50257}))
    result = probe_recipe("sentiment", "--dataset=sst2", f"--init_from={folder}", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "'gpt2'" in result.stderr and "bert, electra" in result.stderr


@pytest.mark.parametrize("fault", list(fixtures.FAULTS))
def test_a_faulty_checkpoint_is_refused_before_anything_is_written(fault, tmp_path, probe_recipe):
    """The checkpoint is checked whole when the flags are read: one `error:` line naming the file or tensor,
    and no file in --model_dir that would bind it to this checkpoint."""
    folder = fixtures.write_small_bert(tmp_path / "bert", fixtures.vocabulary(120), fault)
    result = probe_recipe("sentiment", *QUICK, f"--init_from={folder}", f"--model_dir={tmp_path / 'run'}")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1 and fixtures.FAULTS[fault] in errors[0], result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "run") or not os.listdir(tmp_path / "run")


def test_the_corrected_checkpoint_trains_in_the_folder_the_faulty_one_was_refused_in(tmp_path, probe_recipe,
                                                                                       capsys):
    folder, model_dir = tmp_path / "bert", tmp_path / "run"
    fixtures.write_small_bert(folder, fixtures.vocabulary(120), "hidden_size_of_another_model")
    refused = probe_recipe("sentiment", *QUICK, f"--init_from={folder}", "--train_steps=2", "--mode=train",
                           f"--model_dir={model_dir}")
    assert refused.returncode == 2 and "config.json (hidden_size=8)" in refused.stderr, refused.stderr[-2000:]
    fixtures.write_small_bert(folder, fixtures.vocabulary(120))
    capsys.readouterr()
    zoo.train("sentiment", model_dir, **SETTINGS, init_from=str(folder), train_steps=2, mode="train")
    assert "step 2/2" in capsys.readouterr().out


@pytest.mark.parametrize("kind, message", [
    ("missing", "does not exist"),
    ("file", "is a file, not a folder"),
    ("hf_folder_without_config", "is a folder that is neither a zoo pretraining run"),
])
def test_an_init_from_that_is_no_checkpoint_says_what_it_is(kind, message, tmp_path, probe_recipe):
    path = tmp_path / kind
    if kind == "file":
        path.write_text("x")
    elif kind == "hf_folder_without_config":
        fixtures.write_small_bert(path, fixtures.vocabulary(120))
        (path / "config.json").unlink()
    result = probe_recipe("sentiment", "--dataset=sst2", f"--init_from={path}", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert "holds no pretraining run" not in result.stderr


def test_a_run_whose_vocabulary_was_deleted_says_so(trained, tmp_path, probe_recipe):
    import shutil

    model_dir, _, _, _ = trained
    copy = tmp_path / "run"
    shutil.copytree(model_dir, copy)
    (copy / "vocab.txt").unlink()
    result = probe_recipe("sentiment", "--mode=eval", f"--model_dir={copy}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{copy / 'vocab.txt'} is missing" in result.stderr and "tokenizer.model" not in result.stderr
