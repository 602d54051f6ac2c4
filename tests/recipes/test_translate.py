"""End to end: the translation recipe on a real Multi30k slice, tiny preset, a few steps.

The command line trains, evaluates and exports the run the tests share; translate mode and the commands the
recipe must refuse go through its entry point in one warm process (`probe_recipe`); the other run trains
through zoo.train in this process."""

import json
import os

import pytest

import zoo
from tests.conftest import HANG, as_flags, fresh_process_json

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SETTINGS = {"dataset": "multi30k", "source": "de", "target": "en", "preset": "tiny", "max_examples": 2000,
            "vocab_size": 600, "max_tokens": 1024}
QUICK = as_flags(SETTINGS)
SENTENCES = ["Ein Mann fährt Fahrrad.", "", "Zwei Hunde spielen im Schnee " * 200, "Eine Frau liest."]


@pytest.fixture(scope="module", name="trained")
def trained_fixture(tmp_path_factory):
    """A run trained for 30 steps, evaluated on validation and exported once."""
    from tests.conftest import run_recipe

    base = tmp_path_factory.mktemp("translate")
    model_dir, export_dir = str(base / "run"), str(base / "export")
    result = run_recipe(
        "translate", *QUICK, "--train_steps=30", "--checkpoint_every=15", "--log_every=10",
        "--eval_split=validation", "--beam_size=2", f"--model_dir={model_dir}", f"--export_dir={export_dir}",
        timeout=HANG,
    )
    return model_dir, export_dir, result


def test_train_and_eval_writes_bleu_chrf_and_hypotheses(trained):
    model_dir, _, result = trained
    assert "step 30/30" in result.stdout and "validation: sacreBLEU" in result.stdout
    with open(os.path.join(model_dir, "metrics.json")) as f:
        metrics = json.load(f)["eval_validation"]
    assert metrics["sentences"] == 1014 and 0 <= metrics["bleu"] <= 100 and metrics["chrf"] > 0
    assert metrics["decode"]["beam_size"] == 2
    with open(os.path.join(model_dir, metrics["hypotheses"]), encoding="utf-8") as f:
        assert len(f.read().splitlines()) == 1014
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert (config["data"]["source"], config["data"]["target"]) == ("de", "en") and config["model"]["shared_vocabulary"]


@pytest.fixture(scope="module", name="translated")
def translated_fixture(trained, probe_recipe):
    """`--mode=translate`'s lines for SENTENCES, beam size 2, of the shared run."""
    model_dir, _, _ = trained
    result = probe_recipe("translate", "--mode=translate", f"--model_dir={model_dir}", "--beam_size=2",
                          input="\n".join(SENTENCES) + "\n")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split("\n")[:-1]


def test_translate_mode_writes_one_line_per_input_line(trained, translated, probe_recipe):
    model_dir, _, _ = trained
    assert len(translated) == len(SENTENCES) and translated[1] == ""
    n_best = probe_recipe("translate", "--mode=translate", f"--model_dir={model_dir}", "--beam_size=3",
                          "--num_return=2", input="Ein Mann.\n")
    assert n_best.returncode == 0, n_best.stderr[-3000:]
    record = json.loads(n_best.stdout.strip())
    assert len(record["translations"]) == 2 and record["scores"][0] >= record["scores"][1]


def test_export_translates_in_a_fresh_process_like_the_model_in_process(trained, translated):
    _, export_dir, _ = trained
    version_dir = os.path.join(export_dir, "1")
    assert os.path.exists(os.path.join(version_dir, "assets.extra", "tf_serving_warmup_requests"))
    with open(os.path.join(version_dir, "ops_manifest.json")) as f:
        manifest = json.load(f)
    assert manifest["metadata"]["decode"]["beam_size"] == 2
    served = serve_in_fresh_process(version_dir, manifest)
    assert served == translated and served[1] == ""


def serve_in_fresh_process(version_dir, manifest):
    """The export's translations of SENTENCES, in a process that imports TensorFlow (and TF Text
    only if the manifest lists its ops)."""
    program = (
        "import json\n"
        "import tensorflow as tf\n"
        + ("import tensorflow_text\n" if manifest["non_core_ops"] else "")
        + f"serve = tf.saved_model.load({version_dir!r}).signatures['serving_default']\n"
        f"out = serve(text=tf.constant({SENTENCES!r}))\n"
        "print(json.dumps([t.decode() for t in out['translation'].numpy()]))\n"
    )
    return fresh_process_json(program)


def test_one_vocabulary_per_language_and_an_untied_output_layer(tmp_path):
    # max_length=12, no multiple of 8, shorter than many Multi30k sentences: a batch rounded up to a multiple of
    # 8 must not pass the learned positions (a target of 13 ids once became 16, and the decoder failed).
    from zoo.translation.search import DecodeConfig

    model_dir, export_dir = str(tmp_path / "run"), str(tmp_path / "export")
    run = zoo.train("translate", model_dir, **SETTINGS, max_length=12, shared_vocabulary=False, tie_embeddings=False,
                    train_steps=10, log_every=5, mode="train", decode=DecodeConfig(beam_size=2), export_dir=export_dir)
    with open(os.path.join(model_dir, "config.json")) as f:
        model = json.load(f)["model"]
    assert not model["shared_vocabulary"] and not model["tie_embeddings"]
    assert all(os.path.exists(os.path.join(model_dir, name)) for name in ("source.model", "target.model"))
    from zoo.translation import model as translation
    from zoo.runs.checkpoints import restore_model

    trained = translation.build_translator(translation.TranslatorConfig(**model))
    restore_model(trained, model_dir)  # every layer of the untied, per-language model is in the checkpoint
    assert trained.target_embedding is not trained.source_embedding and trained.output_projection is not None
    version_dir = os.path.join(export_dir, "1")
    with open(os.path.join(version_dir, "ops_manifest.json")) as f:
        manifest = json.load(f)
    assert serve_in_fresh_process(version_dir, manifest) == run.translate(SENTENCES, beam_size=2)  # the run's search


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--source=fr"], "languages"),
        (["--source=de", "--target=de"], "both"),
        (["--beam_size=0"], "beam_size=0"),
        (["--preset=huge"], "Unknown preset"),
        (["--dataset=europarl"], "Unknown translation dataset"),
    ],
)
def test_bad_flags_get_a_clear_error(tmp_path, flags, message, probe_recipe):
    args = [a for a in QUICK if not any(a.startswith(f.split("=")[0] + "=") for f in flags)]
    result = probe_recipe("translate", *args, *flags, f"--model_dir={tmp_path}")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
