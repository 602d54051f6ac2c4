"""Each config field declared once (issue 50, item 6): a recipe's shortcut flags are made from its typed config
(recipes/shortcuts.py), each another name of exactly one dotted field, of its type, default None (the config's),
its help naming the field; a bad value is refused by the config, naming the field, whichever way it comes in.

The command lines go through each recipe's own entry point in one warm process (`probe_recipe`); zoo.train's
keywords through zoo.train in this process (refused before any work)."""

import os
import re

import pytest
import yaml
from absl import flags

import zoo
from recipes import shortcuts
from zoo.api import RECIPES
from zoo.core import config as cfg
from zoo.training import run_settings

NAMES = ("sentiment", "lm", "translate", "pretrain")
# absl's type of the flag a field's type makes (an enum where the field's class names its values in CHOICES).
FLAG_TYPES = {bool: "bool", int: "int", float: "float", str: "string",
              tuple: "comma separated list of strings"}
# A value each shortcut's field refuses (by the shortcut's name: the same check in every recipe that has it) ...
BAD = {"train_steps": 0, "batch_size": 0, "learning_rate": 0, "warmup_steps": -1, "label_smoothing": 1.0,
       "weight_decay": -1, "layer_decay": 0, "clip_norm": -1, "checkpoint_every": 0, "keep_checkpoints": 0,
       "log_every": 0, "seed": -1, "cpu_replicas": -1, "max_tokens": 0, "max_examples": 0, "dropout": 1.5,
       "attention_dropout": 1.5, "vocab_size": 1, "max_length": 1, "segment_length": 0, "memory_length": -1,
       "clamp_length": -1, "eval_fraction": 1.0, "mask_rate": 1.0, "generator_scale": 0, "sequence_length": 1,
       "min_vector_coverage": 1.5, "threshold": 1.5, "label_separator": " ", "profile_steps": "1,2",
       "activation": "nosuch", "beam_size": 0, "length_penalty": -1, "num_return": 0, "top_k": -1, "top_p": 0,
       "temperature": 0, "eval_batch_size": 0, "eval_memory_length": -1, "max_new_tokens": 0,
       "distill_weight": 1.5, "max_transfer": 0, "augment": "shuffle:0.1", "copies": -1}
# ... or none: a name, a path, a switch, checked where it is used (a dataset's files) or not at all.
UNCHECKED = {"dataset", "text_column", "label_column", "text_pair_column", "classes", "init_from", "tpu",
             "word_vectors", "freeze_word_vectors", "jit_compile", "random_offset", "same_length", "source", "target",
             "shared_vocabulary", "tie_embeddings", "source_vectors", "target_vectors", "corpus", "document_per_file",
             "eval_split",  # translate's: any split of the dataset's (sentiment's and lm's are enums)
             "predictions", "overwrite_predictions", "text", "text_pair", "prompt", "greedy",  # the modes' inputs
             "teacher", "transfer", "transfer_text_column", "augment_vectors"}  # distillation's paths and datasets, checked when read


def generated(name):
    """(the recipe, its shortcut flags as recipes.shortcuts makes them, in a FlagValues of their own)."""
    recipe, values = RECIPES[name], flags.FlagValues()
    shortcuts.define(recipe, values)
    return recipe, values


def choices(recipe, field):
    owner, _ = cfg.field_type(recipe.config_class, field)
    return getattr(owner, "CHOICES", {}).get(field.rpartition(".")[2])


def refusal(result):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert lines and lines[-1].startswith("error: "), result.stderr[-2000:]
    return lines[-1]


@pytest.mark.parametrize("name", NAMES)
def test_every_shortcut_is_one_field_of_its_type_with_default_none(name):
    recipe, values = generated(name)
    names = run_settings.shortcuts(recipe)
    assert names and sorted(names) == sorted(flag for flag in values)
    for short, field in names.items():
        assert isinstance(field, str), f"--{short} names {field!r}: a shortcut is one dotted field"
        _, kind = cfg.field_type(recipe.config_class, field)
        kind = shortcuts.plain(kind)
        expected = "string enum" if choices(recipe, field) else FLAG_TYPES[getattr(kind, "__origin__", kind)]
        flag = values[short]
        assert flag.flag_type() == expected, (short, field, flag.flag_type())
        assert flag.default is None, short
        assert re.match(rf"(<[^>]*>: )?{re.escape(field)}: ", flag.help), (short, flag.help)  # an enum's values first
        if expected == "string enum":
            assert flag.parser.enum_values == list(choices(recipe, field))


@pytest.mark.parametrize("name", NAMES)
def test_the_help_shows_the_default_that_mode_config_prints(name, probe_recipe):
    recipe, values = generated(name)
    printed = probe_recipe(name, "--mode=config")
    assert printed.returncode == 0, printed.stderr[-2000:]
    config = yaml.safe_load(printed.stdout)
    for short, field in run_settings.shortcuts(recipe).items():
        if field in run_settings.UNSET:  # auto: printed as this machine's dtype
            assert f"(default: {run_settings.UNSET[field]})" in values[short].help
            continue
        value = config
        for part in field.split("."):
            value = value[part]
        default = shortcuts.DEFAULTS[short]
        assert value == (list(default) if isinstance(default, tuple) else default), (short, field, value, default)
        assert f"(default: {shortcuts.shown(default)})" in values[short].help, values[short].help


@pytest.mark.parametrize("name", NAMES)
def test_the_recipe_lists_every_shortcut_with_its_field(name, probe_recipe):
    """What the program itself declares (python -m recipes.X --helpfull), not only what the generator makes."""
    recipe, _ = generated(name)
    listed = probe_recipe(name, "--helpfull").stdout
    for short, field in run_settings.shortcuts(recipe).items():
        entry = re.search(rf"^  --(\[no\])?{short}:(.*?)(?=^  --|\Z)", listed, re.M | re.S)
        assert entry, f"--{short} is not listed"
        assert re.match(rf"(<[^>]*>: )?{re.escape(field)}: ", " ".join(entry.group(2).split())), entry.group(0)


def bad_cases():
    for name in NAMES:
        for short, field in run_settings.shortcuts(RECIPES[name]).items():
            if choices(RECIPES[name], field):
                yield name, short, field, "nosuch"
            elif short in BAD:
                yield name, short, field, BAD[short]


@pytest.mark.parametrize("name", NAMES)
def test_every_shortcut_has_a_bad_value_below_or_none(name):
    for short, field in run_settings.shortcuts(RECIPES[name]).items():
        assert choices(RECIPES[name], field) or short in BAD or short in UNCHECKED, \
            f"{name}'s --{short} ({field}): add a value its field refuses to BAD, or it to UNCHECKED"


@pytest.mark.parametrize("name, short, field, value", list(bad_cases()))
def test_a_bad_value_is_refused_by_the_config_naming_its_field(name, short, field, value, tmp_path, probe_recipe):
    line = refusal(probe_recipe(name, "--mode=config", f"--{short}={value}"))
    if choices(RECIPES[name], field):  # an enum flag: absl lists the config's own values
        assert line.startswith(f"error: flag --{short}=nosuch: value should be one of <"), line
        assert "|".join(choices(RECIPES[name], field)) in line, line
    else:
        assert field in line, line
    keyword = tuple(int(step) for step in value.split(",")) if short == "profile_steps" else value
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        zoo.train(name, model_dir=str(tmp_path / "run"), **{short: keyword})
    assert not os.path.exists(tmp_path / "run")


def printed(probe_recipe, name, *args):
    result = probe_recipe(name, "--mode=config", *args)
    assert result.returncode == 0, result.stderr[-2000:]
    return yaml.safe_load(result.stdout)


def test_eval_fraction_is_accepted_or_refused_the_same_by_flag_and_override(tmp_path, probe_recipe):
    """It was [0, 0.5] as a flag and (0, 1) as a field."""
    for args in (["--eval_fraction=0.7"], ["--config.data.eval_fraction=0.7"]):
        assert printed(probe_recipe, "pretrain", *args)["data"]["eval_fraction"] == 0.7
    for args in (["--eval_fraction=1.0"], ["--config.data.eval_fraction=1.0"]):
        assert refusal(probe_recipe("pretrain", "--mode=config", *args)) == \
            "error: data.eval_fraction=1.0 must be in (0, 1)."
    with pytest.raises(ValueError, match=r"data\.eval_fraction=1\.0 must be in \(0, 1\)"):
        zoo.train("pretrain", model_dir=str(tmp_path / "run"), eval_fraction=1.0)


def test_eval_split_takes_the_configs_values_in_every_way(probe_recipe):
    """Sentiment's and the LM's data.eval_split name a split of SPLITS, its flag an enum of that list; the
    default is the field's alone; translate's is any split of the dataset's, as a flag too."""
    line = refusal(probe_recipe("sentiment", "--mode=config", "--config.data.eval_split=dev"))
    assert line == "error: data.eval_split='dev' must be one of train, validation, test."
    assert "value should be one of <train|validation|test>" in refusal(
        probe_recipe("sentiment", "--mode=config", "--eval_split=dev"))
    assert printed(probe_recipe, "sentiment")["data"]["eval_split"] == "validation" == shortcuts_default("sentiment")
    for args in (["--eval_split=test_2017_flickr"], ["--config.data.eval_split=test_2017_flickr"]):
        assert printed(probe_recipe, "translate", *args)["data"]["eval_split"] == "test_2017_flickr"


def shortcuts_default(name):
    recipe = RECIPES[name]
    return shortcuts.value_of(recipe.base(None, None, None), run_settings.shortcuts(recipe)["eval_split"])


def test_a_field_follows_another_unless_set_whichever_way_it_is_given(probe_recipe):
    """Pretraining's sequence_length follows encoder.max_length, translate's target_vocab_size its
    source_vocab_size: a shortcut names one field, and the config derives the other."""
    for args in (["--max_length=128"], ["--config.model.encoder.max_length=128"]):
        model = printed(probe_recipe, "pretrain", *args)["model"]
        assert model["encoder"]["max_length"] == model["sequence_length"] == 128
    assert printed(probe_recipe, "pretrain", "--max_length=128", "--sequence_length=64")["model"][
        "sequence_length"] == 64
    for args in (["--vocab_size=300"], ["--config.model.source_vocab_size=300"]):
        model = printed(probe_recipe, "translate", *args)["model"]
        assert model["source_vocab_size"] == model["target_vocab_size"] == 300
    model = printed(probe_recipe, "translate", "--vocab_size=300", "--noshared_vocabulary",
                    "--config.model.target_vocab_size=400")["model"]
    assert (model["source_vocab_size"], model["target_vocab_size"]) == (300, 400)
