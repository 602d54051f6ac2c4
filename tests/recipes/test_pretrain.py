"""End to end: pretraining on SST-2's training texts (tiny preset, a few steps), its export
served in a fresh process, and fine-tuning its encoder with recipes.sentiment --init_from.

The command line pretrains, evaluates and exports the run the tests share; the commands the recipes must
refuse go through their entry points in one warm process each (`probe_recipe`); the other runs train through
zoo.train in this process."""

import json
import os

import numpy as np
import pytest

import zoo
from tests.conftest import as_flags, fresh_process_json

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SETTINGS = {"corpus": ["sst2"], "preset": "tiny", "vocab_size": 500, "sequence_length": 64, "batch_size": 16}
QUICK = as_flags(SETTINGS)
ELECTRA = [*QUICK, "--objective=electra"]
FINE_TUNING = {"dataset": "sst2", "max_examples": 2000, "batch_size": 16, "log_every": 5}
FINE_TUNE = as_flags(FINE_TUNING)


@pytest.fixture(scope="module", name="pretrained_run")
def pretrained_run_fixture(tmp_path_factory):
    """An ELECTRA run trained for 20 steps, evaluated on its held-out slice and exported."""
    from tests.conftest import run_recipe

    base = tmp_path_factory.mktemp("pretrain")
    model_dir, export_dir = str(base / "run"), str(base / "export")
    result = run_recipe("pretrain", *ELECTRA, "--train_steps=20", "--checkpoint_every=10", "--log_every=10",
                        f"--model_dir={model_dir}", f"--export_dir={export_dir}")
    return model_dir, export_dir, result


def test_pretraining_trains_evaluates_and_records_its_run(pretrained_run):
    model_dir, _, result = pretrained_run
    assert "step 20/20" in result.stdout and "held-out: masked_accuracy" in result.stdout
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["recipe"] == "pretrain" and config["data"]["corpus"] == ["sst2"]
    assert config["model"]["objective"] == "electra" and config["model"]["sequence_length"] == 64
    with open(os.path.join(model_dir, "metrics.json")) as f:
        held_out = json.load(f)["eval_held_out"]
    assert held_out["step"] == 20 and held_out["documents"] == round(67349 * 0.01)
    assert 0.0 <= held_out["detection_accuracy"] <= 1.0 and held_out["masked_perplexity"] > 1.0
    from zoo.data.tokenizer import load_tokenizer

    assert load_tokenizer(model_dir).token_to_id("<mask>") == 4


def serve_in_fresh_process(version_dir, manifest, queries):
    """fill_mask and encode of the export for each (texts, top_k) of `queries`, in one process importing
    TensorFlow (and TF Text only if the manifest lists its ops); JSON of their outputs, one per query."""
    program = (
        "import json\n"
        "import tensorflow as tf\n"
        + ("import tensorflow_text\n" if manifest["non_core_ops"] else "")
        + f"model = tf.saved_model.load({version_dir!r})\n"
        "answers = []\n"
        f"for texts, top_k in {queries!r}:\n"
        "    texts = tf.constant(texts, tf.string)\n"
        "    filled = model.signatures['fill_mask'](text=texts, top_k=tf.constant(top_k))\n"
        "    pooled = model.signatures['encode'](text=texts)['pooled']\n"
        "    answers.append({'tokens': filled['tokens'].numpy().astype(str).tolist(),\n"
        "                    'probabilities': filled['probabilities'].numpy().tolist(),\n"
        "                    'mask_count': filled['mask_count'].numpy().tolist(), 'pooled': pooled.numpy().tolist()})\n"
        "print(json.dumps(answers))\n"
    )
    return fresh_process_json(program)


def test_export_fills_masks_and_encodes_in_a_fresh_process(pretrained_run):
    _, export_dir, _ = pretrained_run
    version_dir = os.path.join(export_dir, "1")
    assert os.path.exists(os.path.join(version_dir, "assets.extra", "tf_serving_warmup_requests"))
    with open(os.path.join(version_dir, "ops_manifest.json")) as f:
        manifest = json.load(f)
    texts = ["a <mask> film and a <mask> cast", "no mask at all", "", "long " * 20_000 + "<mask>"]
    served, empty = serve_in_fresh_process(version_dir, manifest, [(texts, 3), ([], 2)])
    assert served["mask_count"] == [2, 0, 0, 0]  # the long text's mask lies past max_length
    tokens, probabilities = np.array(served["tokens"]), np.array(served["probabilities"])
    assert tokens.shape == (4, 2, 3) and probabilities.shape == (4, 2, 3)
    assert all(t != "" for t in tokens[0].ravel()) and np.all(np.diff(probabilities[0], axis=-1) <= 0)
    assert np.all(probabilities[0] > 0) and np.all(probabilities[0].sum(-1) <= 1.0 + 1e-6)
    assert np.all(tokens[1:] == "") and np.all(probabilities[1:] == 0)
    pooled = np.array(served["pooled"])
    assert pooled.shape == (4, 32) and np.all(np.isfinite(pooled))
    assert empty["mask_count"] == [] and empty["pooled"] == [] and empty["tokens"] == []


def test_export_refuses_a_non_positive_top_k(pretrained_run):
    import tensorflow as tf

    _, export_dir, _ = pretrained_run
    fill_mask = tf.saved_model.load(os.path.join(export_dir, "1")).signatures["fill_mask"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="top_k must be at least 1"):
        fill_mask(text=tf.constant(["a <mask>"]), top_k=tf.constant(0))


def test_mlm_is_the_default_objective_and_reports_masked_accuracy(tmp_path, capsys):
    zoo.train("pretrain", tmp_path, **SETTINGS, train_steps=6, log_every=3)
    with open(tmp_path / "metrics.json") as f:
        held_out = json.load(f)["eval_held_out"]
    assert "detection_accuracy" not in held_out and 0.0 <= held_out["masked_accuracy"] <= 1.0
    assert "step 6/6" in capsys.readouterr().out


def test_fine_tuning_starts_from_the_pretrained_encoder_and_resumes(pretrained_run, tmp_path, capsys):
    model_dir, _, _ = pretrained_run
    run_dir = str(tmp_path / "ft")
    capsys.readouterr()
    zoo.train("sentiment", run_dir, **FINE_TUNING, init_from=model_dir, train_steps=10, checkpoint_every=10,
              layer_decay=0.8, mode="train")
    assert f"Initialized the encoder from {model_dir}" in capsys.readouterr().out
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    assert config["setup"]["init_from"] == model_dir and config["train"]["layer_decay"] == 0.8
    assert config["model"]["hidden_dim"] == 32 and config["model"]["vocab_size"] == 500
    with open(os.path.join(model_dir, "tokenizer.model"), "rb") as a, open(os.path.join(run_dir, "tokenizer.model"), "rb") as b:
        assert a.read() == b.read()
    zoo.train("sentiment", run_dir, **FINE_TUNING, init_from=model_dir, train_steps=15)
    resumed = capsys.readouterr().out
    assert "Resuming from step 10" in resumed and "Initialized" not in resumed
    assert "validation: accuracy" in resumed


@pytest.mark.parametrize("flag, message", [
    ("--vocab_size=800", "model.vocab_size=800"),
    ("--max_length=4096", "model.max_length=4096"),
    ("--preset=small", "--preset=small"),
])
def test_fine_tuning_refuses_settings_that_contradict_the_pretrained_run(pretrained_run, tmp_path,
                                                                         flag, message, probe_recipe):
    model_dir, _, _ = pretrained_run
    result = probe_recipe("sentiment", *FINE_TUNE, f"--init_from={model_dir}", flag, "--train_steps=5",
                          f"--model_dir={tmp_path}")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "ckpt-5.index")


def test_fine_tuning_refuses_a_directory_without_a_finished_pretraining_run(pretrained_run, tmp_path, probe_recipe):
    unfinished = tmp_path / "unfinished"
    model_dir, _, _ = pretrained_run
    os.makedirs(unfinished)
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    config["train"]["train_steps"] = 1000
    with open(unfinished / "config.json", "w") as f:
        json.dump(config, f)
    for directory, message in ((tmp_path / "nothing", "does not exist"), (unfinished, "unfinished")):
        result = probe_recipe("sentiment", *FINE_TUNE, f"--init_from={directory}", "--train_steps=5",
                              f"--model_dir={tmp_path / 'ft'}")
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_unknown_corpus_gets_a_clear_error(tmp_path, probe_recipe):
    result = probe_recipe("pretrain", "--corpus=imdb_test", f"--model_dir={tmp_path}")
    assert result.returncode == 2 and "Unknown pretraining corpus 'imdb_test'" in result.stderr


def test_resuming_with_another_batch_size_or_corpus_is_refused(pretrained_run, probe_recipe):
    model_dir, _, _ = pretrained_run
    other_batch = [*ELECTRA[:-2], "--batch_size=8", ELECTRA[-1]]
    for flags in (other_batch, ["--corpus=imdb", *ELECTRA[1:]]):
        result = probe_recipe("pretrain", *flags, "--train_steps=30", "--mode=train", f"--model_dir={model_dir}")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert "train.batch_size: 16 -> 8" in result.stderr or "data.corpus: ['sst2'] -> ['imdb']" in result.stderr
    assert max(int(n[5:-6]) for n in os.listdir(model_dir) if n.endswith(".index")) == 20
