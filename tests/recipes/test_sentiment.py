"""End to end: the sentiment recipe on real SST-2 slices, tiny preset, a few steps.

The command line trains, evaluates and exports the run the tests share; the modes that read it (export, eval,
explain) and the commands it must refuse go through the recipe's entry point in one warm process
(`probe_recipe`); the other runs train through zoo.train, here or, on two CPU replicas, in one fresh process."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import zoo
from tests.conftest import HANG, ROOT, as_flags, fresh_process_json, train_in_fresh_process

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SETTINGS = {"dataset": "sst2", "preset": "tiny", "max_examples": 2000, "vocab_size": 500, "batch_size": 16}
QUICK = as_flags(SETTINGS)


@pytest.fixture(scope="module", name="trained")
def trained_fixture(tmp_path_factory):
    """A run trained for 30 steps, evaluated and exported once for the tests below."""
    from tests.conftest import run_recipe

    base = tmp_path_factory.mktemp("sentiment")
    model_dir, export_dir = str(base / "run"), str(base / "export")
    result = run_recipe(
        "sentiment", *QUICK, "--train_steps=30", "--checkpoint_every=10", "--log_every=10",
        f"--model_dir={model_dir}", f"--export_dir={export_dir}",
    )
    return model_dir, export_dir, result


def test_train_and_eval_writes_config_metrics_checkpoints_and_summaries(trained):
    model_dir, _, result = trained
    assert "step 30/30" in result.stdout and "validation: accuracy" in result.stdout
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["recipe"] == "sentiment" and config["train"]["train_steps"] == 30
    assert config["derived"]["preset"] == "tiny"  # issue 58: which preset the run started from
    assert config["train"]["precision_reason"].startswith("auto: ")  # this machine's choice, said as such
    with open(os.path.join(model_dir, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics["train"]["step"] == 30 and metrics["eval_validation"]["examples"] == 872
    assert os.path.exists(os.path.join(model_dir, "ckpt-30.index"))
    assert os.listdir(os.path.join(model_dir, "train"))  # TensorBoard events
    assert os.listdir(os.path.join(model_dir, "eval_validation"))


def test_export_answers_in_a_fresh_tensorflow_process_like_the_model_in_process(trained):
    model_dir, export_dir, _ = trained
    versions = sorted(int(v) for v in os.listdir(export_dir) if v.isdigit())
    assert versions == [1] and not [n for n in os.listdir(export_dir) if not n.isdigit()]
    version_dir = os.path.join(export_dir, "1")
    assert os.path.exists(os.path.join(version_dir, "assets.extra", "tf_serving_warmup_requests"))
    with open(os.path.join(version_dir, "ops_manifest.json")) as f:
        manifest = json.load(f)
    texts = ["a gorgeous, witty film", "", "x" * 100_000, "dull"]
    program = (
        "import json, sys\n"
        "import tensorflow as tf\n"
        + ("import tensorflow_text\n" if manifest["non_core_ops"] else "")
        + f"serve = tf.saved_model.load({export_dir!r} + '/1').signatures['serving_default']\n"
        f"out = serve(text=tf.constant({texts!r}))\n"
        "print(json.dumps({'p': out['probabilities'].numpy().tolist(), 'l': [s.decode() for s in out['label'].numpy()]}))\n"
    )
    served = fresh_process_json(program, timeout=HANG)

    import tensorflow as tf

    from zoo.sentiment import recipe as sentiment

    from zoo.classifier.preprocessor import ClassifierPreprocessor

    trained = sentiment.load_trained(model_dir)
    token_ids = ClassifierPreprocessor(trained.tokenizer, trained.config.max_length)(tf.constant(texts))
    probabilities = tf.nn.softmax(trained.model(token_ids)).numpy()
    np.testing.assert_allclose(served["p"], probabilities, atol=1e-5)
    assert served["l"] == [trained.record.derived["class_names"][i] for i in probabilities.argmax(-1)]


def test_an_export_of_averaged_checkpoints_serves_the_mean_model(trained, tmp_path, probe_recipe):
    import tensorflow as tf

    from zoo.sentiment import recipe as sentiment
    from zoo.classifier.preprocessor import ClassifierPreprocessor
    from zoo.runs.checkpoints import restore_model

    model_dir, _, _ = trained  # checkpoints at steps 10, 20 and 30
    export_dir = str(tmp_path / "averaged")
    result = probe_recipe("sentiment", "--mode=export", "--average_checkpoints=3", f"--model_dir={model_dir}",
                          f"--export_dir={export_dir}")
    assert result.returncode == 0 and "Averaged the weights of the checkpoints at steps 30, 20, 10" in result.stdout
    texts = ["a gorgeous, witty film", "dull"]
    serve = tf.saved_model.load(os.path.join(export_dir, "1")).signatures["serving_default"]
    served = serve(text=tf.constant(texts))["probabilities"].numpy()
    trained_run = sentiment.load_trained(model_dir)
    assert restore_model(trained_run.model, model_dir, average=3) == 30
    token_ids = ClassifierPreprocessor(trained_run.tokenizer, trained_run.config.max_length)(tf.constant(texts))
    np.testing.assert_allclose(served, tf.nn.softmax(trained_run.model(token_ids)).numpy(), atol=1e-5)
    newest = tf.nn.softmax(sentiment.load_trained(model_dir).model(token_ids)).numpy()
    assert np.abs(served - newest).max() > 1e-4  # the mean, not the newest
    refused = probe_recipe("sentiment", "--mode=eval", "--average_checkpoints=4", f"--model_dir={model_dir}")
    assert refused.returncode == 2 and "fewer than the 4 asked to average" in refused.stderr
    copy = shutil.copytree(model_dir, tmp_path / "copy")  # the fixture's metrics.json stays as it is
    evaluated = probe_recipe("sentiment", "--mode=eval", "--average_checkpoints=2", f"--model_dir={copy}")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert json.loads((copy / "metrics.json").read_text())["eval_validation"]["average_checkpoints"] == 2


def test_an_unchanged_checkpoint_is_not_exported_twice(trained, probe_recipe):
    model_dir, export_dir, _ = trained
    result = probe_recipe("sentiment", "--mode=export", f"--model_dir={model_dir}", f"--export_dir={export_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(v for v in os.listdir(export_dir)) == ["1"]
    assert f"{os.path.join(export_dir, '1')} already holds step 30" in result.stdout
    other = probe_recipe("sentiment", "--mode=export", "--average_checkpoints=2", f"--model_dir={model_dir}",
                         f"--export_dir={export_dir}")  # other weights: a new version
    assert other.returncode == 0, other.stderr[-3000:]
    assert sorted(v for v in os.listdir(export_dir)) == ["1", "2"]


def test_explain_saves_attention_maps_and_the_encoding_heatmap(trained, probe_recipe):
    model_dir, _, _ = trained
    result = probe_recipe("sentiment", "--mode=explain", f"--model_dir={model_dir}", "--text=a gorgeous, witty film")
    assert result.returncode == 0, result.stderr[-3000:]
    pictures = sorted(os.listdir(os.path.join(model_dir, "explain")))
    assert pictures == ["attention_layer0.png", "attribution.json", "positional_encoding.png"]
    assert "pictures:" in result.stdout
    with open(os.path.join(model_dir, "explain", "attribution.json")) as f:
        attribution = json.load(f)
    assert attribution["tokens"][0] == "<s>" and attribution["shares"][0] == 0
    assert len(attribution["shares"]) == len(attribution["tokens"]) and attribution["explained"].startswith("the prob")


def test_train_killed_and_restarted_resumes_the_step_count(tmp_path, capsys):
    model_dir = str(tmp_path / "run")
    run = {**SETTINGS, "mode": "train", "checkpoint_every": 20, "log_every": 10}
    process = subprocess.Popen([sys.executable, "-m", "recipes.sentiment", *as_flags(run), "--train_steps=400",
                                f"--model_dir={model_dir}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + HANG
    while not os.path.exists(os.path.join(model_dir, "ckpt-40.index")):
        assert process.poll() is None and time.time() < deadline, "no second checkpoint before the deadline"
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    from zoo.runs import checkpoints

    # The kill may land while a checkpoint is written (the 'checkpoint' file then names the one before, and a cut
    # ckpt-N.index is set aside): the run resumes from the newest complete one, whichever that is.
    steps = checkpoints.checkpoint_steps(model_dir)
    assert steps and 40 <= steps[0] < 400, steps
    capsys.readouterr()
    zoo.train("sentiment", model_dir, **run, train_steps=steps[0] + 20)  # restarted here, by zoo.train
    resumed = re.search(r"Resuming from step (\d+) ", capsys.readouterr().out)
    assert resumed and int(resumed.group(1)) in steps and int(resumed.group(1)) >= 20
    with open(os.path.join(model_dir, "metrics.json")) as f:
        assert json.load(f)["train"]["step"] == steps[0] + 20


def train_loss(model_dir):
    with open(os.path.join(model_dir, "metrics.json")) as f:
        return json.load(f)["train"]["loss"]


# Runs on two CPU replicas: strategy and precision.
TWO_REPLICAS = {
    "one_device": {"strategy": "one_device", "train_steps": 2, "dropout": 0.0},
    "mirrored": {"strategy": "mirrored", "train_steps": 2, "dropout": 0.0},
    "float16_mirrored": {"strategy": "mirrored", "train_steps": 3, "mixed_precision": "float16", "clip_norm": 0.0},
}


@pytest.fixture(scope="module", name="two_replicas")
def two_replicas_fixture(tmp_path_factory):
    """name -> the run folder of each of TWO_REPLICAS, trained by zoo.train in one fresh process (TensorFlow
    splits the CPU only before it starts)."""
    base = tmp_path_factory.mktemp("two_replicas")
    train_in_fresh_process(*[
        {"recipe": "sentiment", "model_dir": str(base / name), **SETTINGS, "mode": "train", "log_every": 1,
         "cpu_replicas": 2, **run} for name, run in TWO_REPLICAS.items()])
    return {name: str(base / name) for name in TWO_REPLICAS}


def test_mirrored_on_two_cpu_replicas_gives_the_one_device_loss(two_replicas):
    losses = {strategy: train_loss(two_replicas[strategy]) for strategy in ("one_device", "mirrored")}
    assert losses["mirrored"] == pytest.approx(losses["one_device"], rel=1e-5)  # step 2: after one update


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--dataset=imdbb"], "Unknown classification dataset 'imdbb'"),
        (["--dataset=sst2", "--preset=huge"], "Unknown preset 'huge'"),
        (["--dataset=sst2", "--mode=eval"], "holds no trained 'sentiment' run"),
        (["--mode=explain"], "--mode=explain needs --text"),
        (["--mode=explain", "--text=fine"], "holds no trained 'sentiment' run"),
        (["--dataset=sst2", "--mixed_precision=float8"], "float8"),
        (["--dataset=sst2", "--problem_type=ranking"], "--problem_type=ranking: value should be one of"),
        (["--dataset=sst2", "--config.model.problem_type=ranking"], "model.problem_type='ranking' must be one of"),
        (["--dataset=sst2", "--threshold=1.5"], "model.threshold=1.5 must be a probability in (0, 1)"),
        (["--dataset=sst2", "--problem_type=regression"], "--problem_type=regression reads your own csv:"),
    ],
)
def test_bad_input_gets_a_clear_error_not_a_traceback(tmp_path, flags, message, probe_recipe):
    result = probe_recipe("sentiment", *flags, f"--model_dir={tmp_path}/run")
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "run")  # refused before anything is written


def test_a_model_dir_of_another_recipe_is_refused(tmp_path, probe_recipe):
    os.makedirs(tmp_path / "run")
    (tmp_path / "run" / "config.json").write_text(json.dumps({"recipe": "translate"}))
    result = probe_recipe("sentiment", *QUICK, f"--model_dir={tmp_path}/run")
    assert result.returncode == 2 and "holds a 'translate' run" in result.stderr
    assert "Traceback" not in result.stderr


def test_helpfull_documents_every_flag(probe_recipe):
    result = probe_recipe("sentiment", "--helpfull")
    for flag in ("dataset", "preset", "model_dir", "export_dir", "train_steps", "epochs", "batch_size",
                 "learning_rate", "strategy", "cpu_replicas", "[no]jit_compile", "mixed_precision",
                 "checkpoint_every", "mode", "text", "warmup_steps", "label_smoothing", "clip_norm"):
        assert f"--{flag}" in result.stdout


@pytest.mark.parametrize("extra", ["jit_compile", "bfloat16", "float16_mirrored"])
def test_jit_compile_and_mixed_precision_train(tmp_path, extra, two_replicas):
    if extra == "float16_mirrored":
        model_dir = two_replicas[extra]
    else:  # in this process
        model_dir = str(tmp_path / "run")
        asked = {"jit_compile": True} if extra == "jit_compile" else {"mixed_precision": extra}
        zoo.train("sentiment", model_dir, **SETTINGS, mode="train", train_steps=3, log_every=1, **asked)
    assert 0.0 < train_loss(model_dir) < 5.0


def test_a_missing_dataset_says_where_it_looked(tmp_path, probe_recipe):
    result = probe_recipe(
        "sentiment", *QUICK, f"--model_dir={tmp_path}/run",
        env={"ZOO_DATA_DIR": str(tmp_path / "empty")},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # The evaluation split is read first, before any training.
    assert f"{tmp_path}/empty/sst2/dev.tsv does not exist" in result.stderr


def test_resuming_with_another_batch_size_is_refused_naming_it(trained, probe_recipe):
    model_dir, _, _ = trained
    result = probe_recipe(
        "sentiment", *[f for f in QUICK if not f.startswith("--batch_size")], "--batch_size=8", "--mode=train",
        "--train_steps=40", f"--model_dir={model_dir}",
    )
    assert result.returncode == 2 and "train.batch_size: 16 -> 8" in result.stderr and "Traceback" not in result.stderr


def test_a_model_dir_with_checkpoints_but_no_config_is_refused(trained, tmp_path, probe_recipe):
    import shutil

    model_dir, _, _ = trained
    foreign = tmp_path / "foreign"
    shutil.copytree(model_dir, foreign)
    os.remove(foreign / "config.json")
    result = probe_recipe("sentiment", *QUICK, f"--model_dir={foreign}")
    assert result.returncode == 2 and "holds checkpoints but no config.json" in result.stderr
