"""Continued masked-LM pretraining of a published checkpoint (a tiny random BERT whose vocabulary
puts its special pieces where BERT's do: [unused...] before [UNK], [CLS], [SEP], [MASK]), then
fine-tuning the result: the recipe end to end, and the head against NumPy.

The runs train through zoo.train in this process (tests/recipes/test_pretrain.py pretrains from the command
line); the commands that must be refused go through the recipe's entry point in one warm process
(`probe_recipe`)."""

import contextlib
import io
import json
import math
import os

import numpy as np
import pytest

import zoo
from tests.conftest import HANG, as_flags, fresh_process_json
from tests.zoo import _published_fixtures as fixtures

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused2]"]
SETTINGS = {"corpus": ["sst2"], "sequence_length": 16, "batch_size": 4, "train_steps": 4, "checkpoint_every": 2,
            "eval_fraction": 0.001}
QUICK = as_flags(SETTINGS)


def vocabulary(size=140):
    pieces = SPECIALS + [p for p in dict.fromkeys(fixtures.PIECES)]
    return pieces + [f"w{i}" for i in range(size - len(pieces))]


@pytest.fixture(scope="module", name="checkpoint")
def checkpoint_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("published") / "tiny-bert"
    config = fixtures.bert_config(vocab_size=140, max_positions=32)
    fixtures.write_checkpoint(folder, config, fixtures.random_weights(config, prefix="bert."), vocabulary(),
                              vocab_files=("vocab.txt",), lowercase=True)
    return str(folder)


def test_the_run_masks_with_the_checkpoints_special_ids(checkpoint):
    from zoo.pretraining import checkpoint_weights, published

    ids = checkpoint_weights.special_ids(published.read_checkpoint(checkpoint))
    assert ids == {"mask_id": 6, "first_regular_id": 8, "start_id": 4, "separator_id": 5}


def test_the_pretrainer_starts_from_the_checkpoints_encoder_and_masked_lm_head(checkpoint):
    """The masked-LM logits of the initialized Pretrainer equal BERT's head computed in NumPy from the
    checkpoint's own weights: LayerNorm(gelu(h W + b)) E^T + bias, h the encoder's hidden states."""
    import tensorflow as tf
    from safetensors.numpy import load_file

    from zoo.pretraining import checkpoint_weights, pretrained, model as pretraining, published
    import keras

    keras.config.set_dtype_policy("float32")
    read = published.read_checkpoint(checkpoint)
    config = pretraining.PretrainConfig(encoder=published.encoder_config(read, 32), sequence_length=16,
                                        **checkpoint_weights.special_ids(read))
    model = pretraining.build_pretrainer(config)
    pretrained.pretrainer_initializer(checkpoint)(model)
    token_ids = tf.constant([[4, 20, 21, 6, 30, 5, 0, 0]], tf.int32)
    positions = tf.constant([[3, 1]], tf.int32)
    logits = model.mlm_head(model.encoder(token_ids), mask_positions=positions).numpy()[0]

    w = load_file(os.path.join(checkpoint, "model.safetensors"))
    hidden = model.encoder(token_ids).numpy()[0][[3, 1]]
    x = hidden @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"]
    x = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    x = (x - mean) / np.sqrt(var + 1e-12) * w["cls.predictions.transform.LayerNorm.weight"] \
        + w["cls.predictions.transform.LayerNorm.bias"]
    expected = x @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
    np.testing.assert_allclose(logits, expected, atol=1e-4)


@pytest.fixture(scope="module", name="continued")
def continued_fixture(tmp_path_factory, checkpoint):
    """The checkpoint's masked-LM training continued 4 steps, evaluated and exported: its folders and what it
    printed."""
    base = tmp_path_factory.mktemp("dapt")
    model_dir, export_dir = str(base / "run"), str(base / "export")
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        zoo.train("pretrain", model_dir, **SETTINGS, init_from=checkpoint, export_dir=export_dir)
    return model_dir, export_dir, printed.getvalue()


def test_continued_pretraining_trains_evaluates_and_keeps_the_vocabulary(continued):
    model_dir, _, printed = continued
    assert "and its masked-LM head; not used: cls.seq_relationship, pooler.dense." in printed
    assert "step 4/4" in printed
    assert "held-out: masked_accuracy" in printed
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == vocabulary()
    with open(os.path.join(model_dir, "config.json")) as f:
        model = json.load(f)["model"]
    assert (model["mask_id"], model["first_regular_id"], model["start_id"], model["separator_id"]) == (6, 8, 4, 5)
    assert model["encoder"]["embedding"] == "normalized"


def test_the_export_fills_a_written_mask_token(continued):
    _, export_dir, _ = continued
    program = (
        "import json\nimport tensorflow as tf\nimport tensorflow_text\n"
        f"fill = tf.saved_model.load({export_dir!r} + '/1').signatures['fill_mask']\n"
        "out = fill(text=tf.constant(['the movie was [MASK] !', 'no mask here']), top_k=tf.constant(3))\n"
        "print(json.dumps({'count': out['mask_count'].numpy().tolist(),"
        " 'tokens': [[[t.decode() for t in k] for k in m] for m in out['tokens'].numpy()]}))\n"
    )
    served = fresh_process_json(program, timeout=HANG)
    assert served["count"] == [1, 0]
    assert all(not t.startswith("[") for t in served["tokens"][0][0])  # special pieces are never proposed


def test_fine_tuning_the_continued_run_uses_its_wordpiece_vocabulary_and_may_shorten_its_positions(continued,
                                                                                                  tmp_path, capsys):
    model_dir, _, _ = continued
    run_dir = str(tmp_path / "sst2")
    capsys.readouterr()
    zoo.train("sentiment", run_dir, dataset="sst2", max_examples=64, batch_size=8, train_steps=2, max_length=12,
              mode="train", init_from=model_dir)
    assert "Initialized the encoder from" in capsys.readouterr().out
    with open(os.path.join(run_dir, "vocab.txt"), encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == vocabulary()
    with open(os.path.join(run_dir, "config.json")) as f:
        model = json.load(f)["model"]
    assert model["max_length"] == 12 and model["position"] == "learned"  # 12 of the continued run's 32 positions


def test_electra_cannot_continue_a_published_checkpoint(checkpoint, tmp_path, probe_recipe):
    result = probe_recipe("pretrain", *QUICK, "--objective=electra", f"--init_from={checkpoint}",
                          f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "init_from continues masked-LM training" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--preset=small"], "error: --preset cannot be set with --init_from"),
    (["--vocab_size=500"], "model.encoder.vocab_size=500 (the encoder of setup.init_from has 140)"),
    (["--config.model.encoder.vocab_size=500"], "model.encoder.vocab_size=500 (the encoder of setup.init_from has 140)"),
    (["--max_length=64"], "model.encoder.max_length=64 (the encoder has 32 positions: at most 32)"),
])
def test_the_checkpoints_shape_and_vocabulary_are_kept_however_a_field_is_given(checkpoint, args, message, tmp_path,
                                                                               probe_recipe):
    """The config refuses them, not the flags alone (issue 50: --vocab_size was refused, an override let through)."""
    result = probe_recipe("pretrain", *QUICK, f"--init_from={checkpoint}", *args, f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and message in result.stderr.strip().splitlines()[-1], result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "run")


@pytest.mark.parametrize("fault", list(fixtures.FAULTS))
def test_a_faulty_checkpoint_is_refused_before_anything_is_written(fault, tmp_path, probe_recipe):
    folder = fixtures.write_small_bert(tmp_path / "bert", vocabulary(), fault)
    result = probe_recipe("pretrain", *QUICK, f"--init_from={folder}", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and fixtures.FAULTS[fault] in result.stderr, result.stderr[-2000:]
    assert not os.path.exists(tmp_path / "run") or not os.listdir(tmp_path / "run")


def test_the_corrected_checkpoint_trains_in_the_folder_the_faulty_one_was_refused_in(tmp_path, probe_recipe,
                                                                                       capsys):
    folder, model_dir = tmp_path / "bert", tmp_path / "run"
    fixtures.write_small_bert(folder, vocabulary(), "nan_weight")
    refused = probe_recipe("pretrain", *QUICK, f"--init_from={folder}", "--mode=train", f"--model_dir={model_dir}")
    assert refused.returncode == 2 and fixtures.FAULTS["nan_weight"] in refused.stderr, refused.stderr[-2000:]
    fixtures.write_small_bert(folder, vocabulary())
    capsys.readouterr()
    zoo.train("pretrain", model_dir, **SETTINGS, init_from=str(folder), mode="train")
    trained = capsys.readouterr().out
    assert "step 4/4" in trained
    assert "and its masked-LM head; not used: cls.seq_relationship, pooler.dense." in trained


@pytest.mark.parametrize("kind, message", [
    ("missing", "does not exist"),
    ("file", "is a file, not a folder"),
    ("hf_folder_without_config", "is a folder without config.json"),
])
def test_an_init_from_that_is_no_checkpoint_says_what_it_is(kind, message, tmp_path, probe_recipe):
    path = tmp_path / kind
    if kind == "file":
        path.write_text("x")
    elif kind == "hf_folder_without_config":
        fixtures.write_small_bert(path, vocabulary())
        (path / "config.json").unlink()
    result = probe_recipe("pretrain", *QUICK, f"--init_from={path}", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
