"""Arguments out of range: refused where the frozen config is made (so the library refuses what
the command line does), with the field's name; on the command line, one `error:` line."""

import os
import re

import pytest

from tests.conftest import run_recipe
from zoo.classifier.model import ClassifierConfig
from zoo.language_model.model import LMConfig
from zoo.pretraining.model import PretrainConfig
from zoo.training.config import TrainConfig
from zoo.translation.model import TranslatorConfig
from zoo.translation.search import DecodeConfig


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: TrainConfig(learning_rate=-1.0), "learning_rate=-1.0 must be positive"),
        (lambda: TrainConfig(learning_rate=0.0), "learning_rate=0.0 must be positive"),
        (lambda: TrainConfig(warmup_steps=-1), "warmup_steps=-1 must be non-negative"),
        (lambda: TrainConfig(clip_norm=-0.5), "clip_norm=-0.5 must be non-negative"),
        (lambda: TrainConfig(weight_decay=-0.1), "weight_decay=-0.1 must be non-negative"),
        (lambda: TrainConfig(label_smoothing=1.0), r"label_smoothing=1.0 must be in \[0, 1\)"),
        (lambda: TrainConfig(train_steps=0), "train_steps=0 must be positive"),
        (lambda: TrainConfig(batch_size=-8), "batch_size=-8 must be positive"),
        (lambda: TrainConfig(keep_checkpoints=0), "keep_checkpoints=0 must be positive"),
        (lambda: TrainConfig(layer_decay=0.0), r"layer_decay=0.0 must be in \(0, 1\]"),
        (lambda: TrainConfig(mixed_precision="half"), "mixed_precision='half' is not one of"),
        (lambda: ClassifierConfig(dropout=1.0), r"dropout=1.0 must be in \[0, 1\)"),
        (lambda: ClassifierConfig(hidden_dim=130, num_heads=4), "num_heads=4 does not divide hidden_dim=130"),
        (lambda: TranslatorConfig(dropout=-0.1), r"dropout=-0.1 must be in \[0, 1\)"),
        (lambda: TranslatorConfig(hidden_dim=0), "hidden_dim=0 must be positive"),
        (lambda: LMConfig(memory_length=-1), "memory_length=-1 must be non-negative"),
        (lambda: LMConfig(attention_dropout=1.5), r"attention_dropout=1.5 must be in \[0, 1\)"),
        (lambda: DecodeConfig(beam_size=0), "beam_size=0"),
        (lambda: DecodeConfig(beam_size=1, top_k=-1), "top_k must be >= 0"),
        (lambda: DecodeConfig(beam_size=1, temperature=0.0), "temperature > 0"),
        (lambda: DecodeConfig(max_extra_length=-1), "max_extra_length=-1 must be non-negative"),
        (lambda: PretrainConfig(mask_rate=0.0), r"mask_rate=0.0 must be in \(0, 1\)"),
        (lambda: PretrainConfig(detection_weight=-1.0), "detection_weight=-1.0 must be non-negative"),
    ],
)
def test_a_config_refuses_an_out_of_range_value_naming_it(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "recipe, flags",
    [
        ("sentiment", ["--dataset=sst2"]),
        ("translate", ["--dataset=multi30k", "--source=de", "--target=en"]),
        ("lm", ["--dataset=ptb"]),
        ("pretrain", ["--corpus=sst2"]),
    ],
)
def test_every_recipe_refuses_a_negative_learning_rate_in_one_line_before_any_work(recipe, flags, tmp_path,
                                                                                    probe_recipe):
    model_dir = str(tmp_path / "run")
    result = probe_recipe(recipe, *flags, "--learning_rate=-1", f"--model_dir={model_dir}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == "error: train.learning_rate=-1.0 must be positive."
    assert not os.path.exists(os.path.join(model_dir, "config.json"))


def test_a_model_dir_that_is_a_file_is_refused_in_one_line(tmp_path, probe_recipe):
    path = tmp_path / "notes.txt"
    path.write_text("mine")
    result = probe_recipe("sentiment", "--dataset=sst2", f"--model_dir={path}")
    assert result.returncode == 2
    assert "is a file, not a folder" in result.stderr.strip().splitlines()[-1]
    assert path.read_text() == "mine"


@pytest.mark.parametrize(
    "recipe, flags, named",
    [
        ("sentiment", ["--dataset=sst2", "--max_examples=-5"], "data.max_examples=-5 must be at least 1"),
        ("sentiment", ["--dataset=sst2", "--epochs=-1"], "--epochs must be positive"),
        ("pretrain", ["--corpus=sst2", "--eval_fraction=1.5"], "data.eval_fraction=1.5 must be in (0, 1)"),
        ("translate", ["--mode=eval", "--eval_batch_size=0"], "--eval_batch_size=0"),
        ("sentiment", ["--dataset=sst2", "--profile_steps=a,b"], "--profile_steps=a,b must be two step numbers"),
        ("sentiment", ["--dataset=sst2", "--profile_steps=1,3"], "profile_steps=(1, 3) must be two steps"),
        ("sentiment", ["--dataset=sst2", "--epochs=inf"], "--epochs must be positive and finite"),
        ("sentiment", ["--dataset=sst2", "--epochs=nan"], "--epochs must be positive and finite"),
        ("lm", ["--dataset=ptb", "--segment_length=1000000000"], "model.segment_length=1000000000 must be at most 65,536 tokens"),
        ("lm", ["--dataset=ptb", "--memory_length=1000000000"], "model.memory_length=1000000000 must be at most 65,536 tokens"),
        ("lm", ["--mode=eval", "--eval_memory_length=1000000000"], "eval_memory_length=1000000000 must be in [0, 65,536]"),
        ("translate", ["--mode=translate", "--length_penalty=nan"], "--length_penalty must be a finite number"),
        ("translate", ["--mode=translate", "--length_penalty=-inf"], "--length_penalty must be a finite number"),
    ],
)
def test_flags_out_of_range_are_refused_when_parsed(recipe, flags, named, tmp_path, probe_recipe):
    result = probe_recipe(recipe, *flags, f"--model_dir={tmp_path / 'run'}")
    assert result.returncode != 0 and named in result.stderr and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "run" / "config.json")


@pytest.mark.parametrize(
    "recipe, flags, message",
    [
        # --batch_size of --mode=eval is eval.batch_size's shortcut since issue 59: named as the field, as
        # --max_examples is named data.max_examples
        ("sentiment", ["--mode=eval", "--batch_size=-1"], "error: eval.batch_size=-1 must be at least 1."),
        ("pretrain", ["--mode=eval", "--batch_size=0"], "error: eval.batch_size=0 must be at least 1."),
        ("sentiment", ["--dataset=sst2", "--max_length=1"],
         "error: model.max_length=1 leaves no room for text beside the start token: use at least 2."),
        ("translate", ["--dataset=multi30k", "--max_tokens=1", "--max_length=16"],
         "error: train.max_tokens=1 cannot hold one pair of up to model.max_length=16 tokens: give at least 16, or "
         "a smaller model.max_length."),
        ("lm", ["--mode=generate", "--prompt=the", "--temperature=inf"],
         "error: eval.temperature=inf must be a finite number."),  # a field of the config since issue 59
        ("sentiment", ["--dataset=sst2", "--max_examples=200", "--batch_size=8", "--epochs=0.001"],
         "error: epochs=0.001 is less than one step: 200 examples make 25.00 steps of 8 a pass. Give at least "
         "epochs=0.04 (one step), or train_steps."),
    ],
)
def test_sizes_are_refused_in_one_line_before_any_work(recipe, flags, message, tmp_path, probe_recipe):
    model_dir = tmp_path / "run"
    result = probe_recipe(recipe, *flags, f"--model_dir={model_dir}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == message
    assert not model_dir.exists()  # nothing written, no empty folder left


def test_a_model_dir_under_a_file_is_refused_in_one_line(tmp_path, probe_recipe):
    path = tmp_path / "notes.txt"
    path.write_text("mine")
    result = probe_recipe("sentiment", "--dataset=sst2", f"--model_dir={path}/run")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: Could not write the run folder: {path} is a file")
    assert path.read_text() == "mine"


def test_a_model_dir_name_longer_than_the_file_system_takes_is_refused_in_one_line(tmp_path, probe_recipe):
    model_dir = tmp_path / ("x" * 300)
    result = probe_recipe("sentiment", "--dataset=sst2", f"--model_dir={model_dir}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (f"error: Cannot read {model_dir}/config.json (File name too "
                                                      "long): choose a --model_dir with shorter folder names.")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "recipe, flags, message",
    [
        ("sentiment", ["--mode=export"], "error: --mode=export needs --export_dir."),
        ("translate", ["--mode=export"], "error: --mode=export needs --export_dir."),
        ("lm", ["--model_dir="], "error: --model_dir is required."),
        ("pretrain", ["--mode=train"], "error: --corpus is required to train"),
    ],
)
def test_a_missing_flag_is_one_line_without_the_usage_text(recipe, flags, message, tmp_path, probe_recipe):
    result = probe_recipe(recipe, f"--model_dir={tmp_path / 'run'}", *flags)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith(message), result.stderr


# TensorFlow's C++ start-up lines: a log line (glog's prefix), absl's notice before its log starts, the rest of
# the notice of CPU instructions the binary was not built for.
NATIVE_LINE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl|To enable the following)")


def test_a_recipe_starts_without_tensorflows_own_lines_unless_asked(tmp_path):
    refused = ["--mode=export", f"--model_dir={tmp_path}"]
    unset = {"TF_CPP_MIN_LOG_LEVEL": ""}  # as a user who has not set it
    quiet = run_recipe("sentiment", *refused, check=False, env=unset)
    assert quiet.returncode == 2 and quiet.stderr.splitlines() == ["error: --mode=export needs --export_dir."]
    for asked, env in ((["--verbosity=0"], unset), ([], {**unset, "ZOO_DEBUG": "1"})):
        shown = run_recipe("sentiment", *refused, *asked, check=False, env=env)
        assert shown.returncode != 0 and any(NATIVE_LINE.match(line) for line in shown.stderr.splitlines())


def test_a_warmup_longer_than_training_is_said_and_endless_epochs_refused(capsys):
    from zoo.training import run_settings as common

    config = common.with_epochs(TrainConfig(train_steps=4, warmup_steps=10**12, learning_rate=1e-3), None, 100)
    assert config.train_steps == 4
    assert ("Warning: train.warmup_steps=1000000000000 is longer than training's 4 steps: the learning rate rises "
            "to only 4e-12 of train.learning_rate=0.001") in capsys.readouterr().out
    common.with_epochs(TrainConfig(train_steps=4, warmup_steps=4), None, 100)
    assert "Warning" not in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"epochs=1e\+308 makes more steps than can be counted"):
        common.with_epochs(TrainConfig(batch_size=1), 1e308, 100)
