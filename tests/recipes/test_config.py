"""One typed config per recipe, set three ways (issue 44): --config=FILE, --config.FIELD.PATH=VALUE and the
shortcut flags over the preset; --mode=config; a run started again from its own config.json is the same run.

The command lines that print or refuse a config go through each recipe's own entry point in one warm process
(`probe_recipe`); of the runs that train, the command line trains the classifier from dotted flags and
`zoo.train` the others in this process, so a run reproduced from its record is also the same run across the
two entry points: every tensor saved the same, bit for bit (the checkpoint's object graph aside, which holds
the names Keras gave the layers in the process that trained them)."""

import json
import os

import pytest
import yaml

import zoo
from tests.conftest import run_recipe
from tests.recipes.test_exact_resumption import saved_tensors

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

# The classifier of issue 44's example, narrowed to run in seconds.
FIELDS = {"num_layers": 2, "hidden_dim": 48, "num_heads": 6, "intermediate_dim": 96, "norm_first": True,
          "activation": "gelu", "position": "learned"}
SST2 = ("--dataset=sst2", "--preset=tiny", "--max_examples=200", "--vocab_size=300", "--batch_size=16",
        "--train_steps=4", "--checkpoint_every=2", "--mode=train")
# SST2 as zoo.train's keywords.
SST2_KEYWORDS = {"dataset": "sst2", "preset": "tiny", "max_examples": 200, "vocab_size": 300, "batch_size": 16,
                 "train_steps": 4, "checkpoint_every": 2, "mode": "train"}


def read(folder, name="config.json"):
    with open(os.path.join(folder, name)) as f:
        return json.load(f)


def reproduced(record):
    """A record less the reason of its dtype: a run trained again from a config.json says its dtype was set in
    that config (issue 58), where the first run said why auto chose it."""
    train = {key: value for key, value in record["train"].items() if key != "precision_reason"}
    return {**record, "train": train}


def assert_same_checkpoint(folder, other, step):
    """The checkpoints of `step` in `folder` and `other` hold the same tensors, bit for bit."""
    import numpy as np

    expected, got = saved_tensors(folder, step), saved_tensors(other, step)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=f"{name} differs at step {step}")


@pytest.mark.parametrize("recipe", ["sentiment", "translate", "lm", "pretrain"])
def test_mode_config_prints_yaml_that_gives_the_same_config_back(recipe, tmp_path, probe_recipe):
    printed = probe_recipe(recipe, "--mode=config", "--preset=tiny", "--config.train.warmup_steps=7",
                           "--learning_rate=2e-4")
    assert printed.returncode == 0, printed.stderr[-2000:]
    config = yaml.safe_load(printed.stdout)
    assert config["train"]["warmup_steps"] == 7 and config["train"]["learning_rate"] == 2e-4
    (tmp_path / "exp.yaml").write_text(printed.stdout)
    again = probe_recipe(recipe, "--mode=config", f"--config={tmp_path / 'exp.yaml'}")
    assert again.returncode == 0 and reproduced(yaml.safe_load(again.stdout)) == reproduced(config), again.stderr
    assert yaml.safe_load(again.stdout)["train"]["precision_reason"] == "set in the config (train.mixed_precision)"
    assert os.listdir(tmp_path) == ["exp.yaml"]  # nothing written


@pytest.mark.parametrize("args, message", [
    (["--config.model.num_layres=6"], "error: model.num_layres is not a config field: did you mean model.num_layers"),
    (["--config.model.num_heads=5", "--config.model.hidden_dim=384"],
     "error: model.num_heads=5 does not divide model.hidden_dim=384"),
    (["--config.model.norm_first=maybe"], "error: model.norm_first='maybe' (str) must be true or false"),
    (["--config.train.learning_rate=fast"], "error: train.learning_rate='fast' must be a number"),
    (["--config.data.bad_rows=ignore"], "error: data.bad_rows='ignore' must be one of error, skip"),
    (["--config.model"], "error: --config.model must be --config.FIELD.PATH=VALUE"),
])
def test_a_bad_field_is_one_error_line_naming_it_and_nothing_is_written(args, message, tmp_path, probe_recipe):
    result = probe_recipe("sentiment", *SST2, *args, f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith(message), result.stderr
    assert "Traceback" not in result.stderr and not os.path.exists(tmp_path / "run")


def test_a_record_of_another_recipe_or_zoo_is_refused_and_one_of_format_1_is_read(tmp_path, probe_recipe):
    (tmp_path / "lm.json").write_text(json.dumps({"format": 2, "recipe": "lm", "model": {}}))
    (tmp_path / "new.json").write_text(json.dumps({"format": 3, "recipe": "sentiment"}))
    for name, message in (("lm.json", "is the record of a 'lm' run, not of a 'sentiment' one"),
                          ("new.json", "was written by another zoo (config.json format 3")):
        result = probe_recipe("sentiment", "--mode=config", f"--config={tmp_path / name}")
        assert result.returncode == 2 and message in result.stderr, result.stderr
    (tmp_path / "old.json").write_text(json.dumps({"recipe": "sentiment", "dataset": "sst2", "model": {"num_layers": 3},
                                                   "data": {"max_examples": 50, "replicas": 1}}))
    printed = probe_recipe("sentiment", "--mode=config", f"--config={tmp_path / 'old.json'}")
    assert printed.returncode == 0, printed.stderr[-2000:]
    config = yaml.safe_load(printed.stdout)
    assert (config["data"]["dataset"], config["data"]["max_examples"], config["model"]["num_layers"]) == ("sst2", 50, 3)


def test_overrides_and_a_file_train_the_same_classifier_and_its_record_reproduces_it(tmp_path, probe_recipe):
    dotted = [f"--config.model.{name}={str(value).lower()}" for name, value in FIELDS.items()]
    run_recipe("sentiment", *SST2, *dotted, f"--model_dir={tmp_path / 'a'}")
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump({"model": FIELDS}))
    # On the command line, the file gives the config the dotted flags give.
    flags, file = (yaml.safe_load(probe_recipe("sentiment", *SST2[:-1], "--mode=config", *source).stdout)
                   for source in (dotted, [f"--config={tmp_path / 'exp.yaml'}"]))
    assert flags == file and flags["model"]["position"] == "learned"
    zoo.train("sentiment", tmp_path / "b", config=tmp_path / "exp.yaml", **SST2_KEYWORDS)
    a, b = read(tmp_path / "a"), read(tmp_path / "b")
    assert a == b and all(a["model"][name] == value for name, value in FIELDS.items())
    zoo.train("sentiment", tmp_path / "c", config=tmp_path / "a" / "config.json", mode="train")
    assert reproduced(read(tmp_path / "c")) == reproduced(a) and a["derived"]["preset"] == "tiny"
    for step in (2, 4):  # trained by the command line and by zoo.train
        assert_same_checkpoint(tmp_path / "a", tmp_path / "c", step)
    refused = probe_recipe("sentiment", *SST2, "--train_steps=6", f"--model_dir={tmp_path / 'a'}")
    assert refused.returncode == 2 and "model.num_layers: 2 -> 1" in refused.stderr  # the tiny preset's 1 layer


def test_a_language_model_from_a_file_is_reproduced_from_its_record(tmp_path):
    (tmp_path / "lm.yaml").write_text(yaml.safe_dump({
        "data": {"dataset": "tinyshakespeare"},
        "model": {"memory_length": 96, "segment_length": 16, "num_layers": 1, "hidden_dim": 32, "num_heads": 2,
                  "intermediate_dim": 64},
        "train": {"train_steps": 4, "checkpoint_every": 2, "batch_size": 4}}))
    zoo.train("lm", tmp_path / "a", config=tmp_path / "lm.yaml", mode="train")
    assert read(tmp_path / "a")["model"]["memory_length"] == 96
    zoo.train("lm", tmp_path / "b", config=tmp_path / "a" / "config.json", mode="train")
    assert reproduced(read(tmp_path / "b")) == reproduced(read(tmp_path / "a"))
    assert_same_checkpoint(tmp_path / "a", tmp_path / "b", 4)


def test_a_translator_of_4_encoder_and_2_decoder_layers_trains_from_a_file(tmp_path):
    (tmp_path / "mt.yaml").write_text(yaml.safe_dump({
        "data": {"dataset": "multi30k", "source": "de", "target": "en", "max_examples": 100},
        "model": {"num_encoder_layers": 4, "num_decoder_layers": 2, "hidden_dim": 32, "num_heads": 2,
                  "intermediate_dim": 64, "source_vocab_size": 300, "target_vocab_size": 300, "max_length": 24},
        "train": {"train_steps": 2, "checkpoint_every": 2, "batch_size": 16, "max_tokens": 512}}))
    zoo.train("translate", tmp_path / "a", config=tmp_path / "mt.yaml", mode="train")
    model = read(tmp_path / "a")["model"]
    assert (model["num_encoder_layers"], model["num_decoder_layers"]) == (4, 2)
    from zoo.translation.load import load_run

    loaded = load_run(str(tmp_path / "a"))
    assert len(loaded.model.encoder_blocks) == 4 and len(loaded.model.decoder_blocks) == 2


def test_config_given_twice_merges_the_files_in_order_and_a_field_overridden_twice_is_refused(tmp_path,
                                                                                             probe_recipe):
    """--config=a.yaml --config=b.yaml dropped a.yaml: now each file is laid over the one before."""
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"train": {"seed": 3, "learning_rate": 0.01},
                                                     "model": {"num_layers": 3}}))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"train": {"learning_rate": 0.02}}))
    printed = probe_recipe("sentiment", "--mode=config", f"--config={tmp_path / 'a.yaml'}",
                           f"--config={tmp_path / 'b.yaml'}")
    config = yaml.safe_load(printed.stdout)
    assert (config["train"]["seed"], config["train"]["learning_rate"], config["model"]["num_layers"]) == (3, 0.02, 3)
    twice = probe_recipe("sentiment", "--dataset=sst2", "--config.model.num_layers=2", "--config.model.num_layers=4",
                         f"--model_dir={tmp_path / 'run'}")
    assert twice.returncode == 2 and twice.stderr.strip().splitlines()[-1] == (
        "error: model.num_layers is overridden twice ('2' and '4'): give it once.")
    assert sorted(os.listdir(tmp_path)) == ["a.yaml", "b.yaml"]


@pytest.mark.parametrize("name, text, message", [
    ("twice.yaml", b"train:\n  seed: 1\ntrain:\n  learning_rate: 0.1\n",
     "twice.yaml, line 3: 'train' is given twice in one mapping (first at line 1), and YAML would keep only the last"),
    ("latin1.yaml", "train:\n  # café\n  seed: 1\n".encode("latin-1"),
     "latin1.yaml is not UTF-8 text: byte 0xe9 at line 2"),
    ("bomb.yaml", ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" +
                   "".join(f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")) +
                   "data: {classes: *i}\n").encode(),
     "bomb.yaml expands to more than 100,000 values through its aliases"),
])
def test_a_config_file_that_would_lose_or_bury_its_fields_is_one_short_error_line(name, text, message, tmp_path,
                                                                                  probe_recipe):
    (tmp_path / name).write_bytes(text)
    result = probe_recipe("sentiment", "--dataset=sst2", f"--config={tmp_path / name}",
                          f"--model_dir={tmp_path / 'run'}")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(result.stderr) < 400, result.stderr[:400]
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path}/{message}"), lines
    assert not os.path.exists(tmp_path / "run")
