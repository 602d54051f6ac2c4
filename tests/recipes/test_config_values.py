"""Values that training used to refuse in a library's words, after writing config.json and the tokenizer (issue
52), are refused when the config is built: --mode=config, a file, an override, a shortcut flag and zoo.train
give one error naming the dotted field and what is allowed, and an empty --model_dir stays empty, so the
corrected command runs there."""

import os

import pytest
import yaml

from tests.conftest import run_recipe
from zoo.core import config as cfg

BASE = {
    "sentiment": ["--dataset=sst2", "--preset=tiny", "--max_examples=100", "--batch_size=16", "--train_steps=2"],
    "translate": ["--dataset=multi30k", "--preset=tiny", "--max_examples=100", "--batch_size=16", "--max_tokens=512",
                  "--train_steps=2"],
    "pretrain": ["--corpus=sst2", "--preset=tiny", "--batch_size=8", "--sequence_length=32", "--train_steps=2"],
    "lm": ["--dataset=tinyshakespeare", "--preset=tiny", "--batch_size=4", "--train_steps=2"],
}
# recipe, the fields given, the shortcut flag that gives them (None: none), the refusal
PROBES = [
    ("sentiment", {"model.activation": "nosuch"}, None, "model.activation='nosuch' must be one of relu, gelu, silu"),
    ("sentiment", {"model.position": "rotary"}, None, "model.position='rotary' must be one of sinusoidal, learned"),
    ("sentiment", {"train.seed": 10**20}, "seed", "train.seed=100000000000000000000 is out of range"),
    ("sentiment", {"train.seed": -1}, "seed", "train.seed=-1 must be in 0 .. 4294967295"),
    ("translate", {"train.seed": 2**32}, "seed", "train.seed=4294967296 must be in 0 .. 4294967295"),
    ("pretrain", {"model.mask_id": 99999999}, None, "model.mask_id=99999999 must be a special id, 1 .. 4"),
    ("translate", {"model.max_length": 1}, "max_length", "model.max_length=1 leaves no room for text"),
    ("sentiment", {"model.vocab_size": 3}, "vocab_size",
     "model.vocab_size=3 is too small for a SentencePiece vocabulary: it needs at least 6 pieces"),
    ("translate", {"model.source_vocab_size": 1, "model.target_vocab_size": 1}, "vocab_size",
     "model.source_vocab_size=1 is too small for a SentencePiece vocabulary: it needs at least 6 pieces"),
    ("pretrain", {"model.encoder.vocab_size": 6}, "vocab_size",
     "model.encoder.vocab_size=6 is too small for a SentencePiece vocabulary: it needs at least 7 pieces"),
    ("lm", {"data.vocab_size": 3}, "vocab_size",
     "data.vocab_size=3 is too small for a SentencePiece vocabulary: it needs at least 262 pieces"),
]
IDS = [f"{recipe}:{','.join(f'{k}={v}' for k, v in fields.items())}" for recipe, fields, _, _ in PROBES]


def refused(result, message):
    lines = result.stderr.strip().splitlines()
    return result.returncode == 2 and lines and lines[-1].startswith(f"error: {message}") and \
        "Traceback" not in result.stderr


@pytest.mark.parametrize("recipe, fields, flag, message", PROBES, ids=IDS)
def test_a_value_training_refused_is_refused_by_every_way_in_and_the_run_folder_stays_empty(
        recipe, fields, flag, message, tmp_path, probe_recipe):
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(cfg.nested(fields)))
    overrides = [f"--config.{field}={value}" for field, value in fields.items()]
    ways = {"mode=config": [*overrides, "--mode=config"], "file": [f"--config={tmp_path / 'exp.yaml'}"],
            "override": overrides}
    if flag:
        ways["flag"] = [f"--{flag}={next(iter(fields.values()))}"]
    for way, args in ways.items():
        run = tmp_path / way
        run.mkdir()
        result = probe_recipe(recipe, *BASE[recipe], "--mode=train", *args, f"--model_dir={run}")
        assert refused(result, message), (way, result.stderr[-3000:])
        assert os.listdir(run) == [], (way, os.listdir(run))


@pytest.mark.parametrize("recipe, fields, flag, message", PROBES, ids=IDS)
def test_zoo_train_refuses_it_before_anything_is_written(recipe, fields, flag, message, tmp_path):
    import zoo

    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(cfg.ConfigError) as error:
        zoo.train(recipe, model_dir=run, config=cfg.nested(fields), preset="tiny", mode="train", train_steps=2)
    assert str(error.value).startswith(message) and os.listdir(run) == []


def test_the_corrected_command_runs_in_the_folder_a_refusal_left(tmp_path, probe_recipe):
    run = tmp_path / "run"
    args = [*BASE["sentiment"], "--vocab_size=300", "--mode=train", f"--model_dir={run}"]
    assert refused(probe_recipe("sentiment", *args, "--config.model.activation=nosuch"), "model.activation=")
    run_recipe("sentiment", *args, "--config.model.activation=gelu")
    assert "ckpt-2.index" in os.listdir(run)
