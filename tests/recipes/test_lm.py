"""End to end: the Transformer-XL language-model recipe on real PTB and Tiny Shakespeare, tiny preset.

The command line trains, evaluates and exports the PTB run the tests share; generate mode and the commands the
recipe must refuse go through its entry point in one warm process (`probe_recipe`); the other runs train
through zoo.train, here or, on two CPU replicas, in one fresh process."""

import json
import os
import re

import pytest

import zoo
from tests.conftest import HANG, as_flags, fresh_process_json, train_in_fresh_process

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

SETTINGS = {"preset": "tiny", "batch_size": 8, "log_every": 5}
QUICK = as_flags(SETTINGS)


@pytest.fixture(scope="module", name="ptb")
def ptb_fixture(tmp_path_factory):
    from tests.conftest import run_recipe

    base = tmp_path_factory.mktemp("lm")
    model_dir, export_dir = str(base / "run"), str(base / "export")
    result = run_recipe(
        "lm", "--dataset=ptb", *QUICK, "--train_steps=20", "--checkpoint_every=10", "--eval_split=validation",
        "--activation=gelu", "--eval_memory_length=48", f"--model_dir={model_dir}", f"--export_dir={export_dir}",
        timeout=HANG,
    )
    return model_dir, export_dir, result


def test_train_and_eval_reports_perplexity_with_and_without_memory(ptb):
    model_dir, _, result = ptb
    assert "step 20/20" in result.stdout
    with open(os.path.join(model_dir, "metrics.json")) as f:
        metrics = json.load(f)["eval_validation"]
    assert set(metrics) >= {"train_memory", "eval_memory", "no_memory"}
    assert metrics["eval_memory"]["memory_length"] == 48 and metrics["no_memory"]["memory_length"] == 0
    assert all(1 < metrics[k]["perplexity"] < 1e6 for k in ("train_memory", "eval_memory", "no_memory"))
    with open(os.path.join(model_dir, "config.json")) as f:
        model = json.load(f)["model"]
    assert model["vocab_size"] == 10001  # PTB: 10,000 tokens with <unk> and <eos>, plus <pad>
    assert model["activation"] == "gelu"


def serve_in_fresh_process(export_dir, prompts, generate_prompt, texts):
    """Loads the export in a new process that imports TensorFlow alone and calls its three
    signatures; returns their outputs. Checks the files that sit beside the graph."""
    version_dir = os.path.join(export_dir, "1")
    with open(os.path.join(version_dir, "ops_manifest.json")) as f:
        assert json.load(f)["non_core_ops"] == {}
    assert os.path.getsize(os.path.join(version_dir, "assets.extra", "tf_serving_warmup_requests")) > 0
    program = (
        "import json, sys\n"
        "import tensorflow as tf\n"
        f"model = tf.saved_model.load({version_dir!r})\n"
        f"out = model.signatures['serving_default'](prompt=tf.constant({prompts!r}))\n"
        f"gen = model.signatures['generate'](prompt=tf.constant([{generate_prompt!r}]), max_new_tokens=tf.constant(7),"
        " temperature=tf.constant(1.0), top_k=tf.constant(1), seed=tf.constant(0))\n"
        f"score = model.signatures['score'](text=tf.constant({texts!r}))\n"
        "assert 'tensorflow_text' not in sys.modules and 'keras_hub' not in sys.modules\n"
        "print(json.dumps({'out': [t.decode() for t in out['continuation'].numpy()],"
        " 'gen': [t.decode() for t in gen['continuation'].numpy()],"
        " 'tokens': score['tokens'].numpy().tolist(), 'ppl': score['perplexity'].numpy().tolist()}))\n"
    )
    return fresh_process_json(program)


def test_export_generates_and_scores_in_a_fresh_tensorflow_only_process(ptb):
    _, export_dir, _ = ptb
    served = serve_in_fresh_process(export_dir, ["the company said", ""], "the market",
                                    ["the company said it expects", ""])
    assert len(served["out"]) == 2 and all(served["out"])
    assert len(served["gen"][0].replace("\n", " <eos> ").split()) == 7
    assert served["tokens"] == [5, 0] and served["ppl"][0] > 1


def test_generate_mode_continues_a_prompt(ptb, probe_recipe):
    model_dir, _, _ = ptb
    result = probe_recipe("lm", "--mode=generate", f"--model_dir={model_dir}", "--prompt=the company",
                          "--max_new_tokens=12", "--top_k=5")
    assert result.returncode == 0 and result.stdout.strip().startswith("the company"), result.stderr[-2000:]
    long_prompt = " ".join(["the company said"] * 40)
    result = probe_recipe("lm", "--mode=generate", f"--model_dir={model_dir}", f"--prompt={long_prompt}",
                          "--max_new_tokens=3", "--greedy")
    assert result.returncode == 0 and "read segment by segment" in result.stdout, result.stderr[-2000:]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--mode=generate", "--prompt="], "--prompt is empty"),
        (["--mode=generate", "--prompt=the", "--max_new_tokens=0"], "must be positive"),
    ],
)
def test_bad_generation_input_gets_a_clear_error(ptb, flags, message, probe_recipe):
    model_dir, _, _ = ptb
    result = probe_recipe("lm", *flags, f"--model_dir={model_dir}")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_unknown_dataset_gets_a_clear_error(tmp_path, probe_recipe):
    result = probe_recipe("lm", "--dataset=wikitext2", f"--model_dir={tmp_path}")
    assert result.returncode == 2 and "Unknown language-modelling dataset" in result.stderr


def test_max_examples_is_refused_rather_than_ignored(tmp_path, probe_recipe):
    result = probe_recipe("lm", "--dataset=ptb", "--max_examples=100", f"--model_dir={tmp_path}")
    assert result.returncode == 2 and "train_steps instead" in result.stderr and "Traceback" not in result.stderr
    assert not os.listdir(tmp_path)  # refused before anything was written


def test_tiny_shakespeare_trains_at_character_level_and_reports_bits_per_character(tmp_path, capsys, probe_recipe):
    model_dir, export_dir = str(tmp_path / "run"), str(tmp_path / "export")
    zoo.train("lm", model_dir, dataset="tinyshakespeare", **SETTINGS, train_steps=10, eval_split="validation",
              random_offset=True, export_dir=export_dir)
    assert "bits_per_character" in capsys.readouterr().out
    served = serve_in_fresh_process(export_dir, ["ROMEO:", ""], "JULIET:", ["To be, or", "é", ""])
    assert len(served["out"]) == 2 and all(served["out"])
    assert len(re.findall(r"<pad>|<unk>|.", served["gen"][0], re.DOTALL)) == 7  # one character per token
    assert served["tokens"] == [9, 1, 0] and served["ppl"][0] > 1
    with open(os.path.join(model_dir, "config.json")) as f:
        assert json.load(f)["data"]["random_offset"] is True
    refused = probe_recipe("lm", "--dataset=tinyshakespeare", *QUICK, "--train_steps=20", f"--model_dir={model_dir}",
                           "--mode=train")
    assert refused.returncode == 2 and "data.random_offset: True -> False" in refused.stderr
    generated = probe_recipe("lm", "--mode=generate", f"--model_dir={model_dir}", "--prompt=ROMEO:",
                             "--max_new_tokens=20", "--greedy")
    assert generated.stdout.startswith("ROMEO:") and len(generated.stdout.rstrip("\n")) >= 20, generated.stderr[-2000:]


DTYPES = ["float32", "bfloat16"]  # collectives carry no bfloat16: the memory is cast


@pytest.fixture(scope="module", name="mirrored")
def mirrored_fixture(tmp_path_factory):
    """dtype -> (run folder, what its first 3 steps printed, what its resumption to step 6 printed): runs on two CPU
    replicas, trained by zoo.train in one fresh process (TensorFlow splits the CPU only before it starts)."""
    base = tmp_path_factory.mktemp("mirrored")
    runs = [{"recipe": "lm", "model_dir": str(base / dtype), "dataset": "ptb", **SETTINGS, "strategy": "mirrored",
             "cpu_replicas": 2, "checkpoint_every": 3, "mixed_precision": dtype, "mode": "train", "train_steps": steps}
            for dtype in DTYPES for steps in (3, 6)]
    printed = train_in_fresh_process(*runs)
    return {dtype: (str(base / dtype), *printed[2 * i: 2 * i + 2]) for i, dtype in enumerate(DTYPES)}


@pytest.mark.parametrize("dtype", DTYPES)
def test_mirrored_replicas_carry_and_restore_their_own_memory(dtype, mirrored):
    """Two CPU replicas, each with its own streams and memory, saved and restored."""
    model_dir, first, resumed = mirrored[dtype]
    assert "step 3/3" in first
    import numpy as np
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(model_dir, "ckpt-3"))
    shapes = reader.get_variable_to_shape_map()
    memories = [n for n in shapes if n.startswith("state/") and len(shapes[n]) == 3]
    assert memories and all(shapes[n][0] == 8 for n in memories)  # both replicas' 4 streams
    halves = [reader.get_tensor(n) for n in memories][0]
    assert not np.allclose(halves[:4], halves[4:])  # different streams, different memories
    assert "Resuming from step 3" in resumed and "restored the memory" in resumed


def test_word_vector_flags_set_the_model_and_are_refused_at_another_level(tmp_path, probe_recipe):
    result = probe_recipe("lm", "--mode=config", "--dataset=ptb", "--word_vectors=glove.6B.50d.txt.gz",
                          "--freeze_word_vectors")
    assert result.returncode == 0, result.stderr
    assert "word_vectors: glove.6B.50d.txt.gz" in result.stdout and "freeze_word_vectors: true" in result.stdout
    result = probe_recipe("lm", "--dataset=tinyshakespeare", "--word_vectors=glove.6B.50d.txt.gz",
                          f"--model_dir={tmp_path}")
    assert result.returncode == 2 and "data.level is char (tinyshakespeare's own)" in result.stderr
    assert "Traceback" not in result.stderr and not os.listdir(tmp_path)
