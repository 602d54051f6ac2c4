"""recipes.common: nothing given on the command line is dropped. A flag the mode does not read is refused, naming
what the mode reads; a flag absl refuses is one `error:` line with exit status 2, like every other bad argument."""

import os

import pytest

TINY = ["--preset=tiny", "--train_steps=1"]  # should a refusal below fail, its run is short (probes never train)


def refusal(result):
    """The refusal's one line: exit status 2, no traceback, no absl banner."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and "Traceback" not in result.stderr and "FATAL" not in result.stderr, result.stderr
    assert lines and lines[-1].startswith("error: "), result.stderr
    return lines[-1]


@pytest.mark.parametrize("recipe, args, message", [
    ("sentiment", ["--mode=eval", "--max_length=8"],
     "error: --max_length is not used by --mode=eval: --max_length sets model.max_length of a run to train, and "
     "--mode=eval reads the trained run's config.json. Leave it out (--mode=eval reads --average_checkpoints, "),
    ("sentiment", ["--mode=eval", "--preset=tiny", "--learning_rate=1"],
     "error: --learning_rate, --preset are not used"),
    ("sentiment", ["--mode=explain", "--text=fine", "--eval_split=test"], "error: --eval_split is not used by"),
    ("sentiment", ["--mode=export", "--export_dir=EXPORT", "--batch_size=8"], "error: --batch_size is not used by"),
    ("sentiment", ["--dataset=sst2", *TINY, "--text=fine"], "error: --text is not used by --mode=train_and_eval."),
    ("sentiment", ["--mode=config", "--epochs=2"], "error: --epochs is not used by --mode=config. Leave it out."),
    ("lm", ["--mode=eval", "--dataset=ptb"], "error: --dataset is not used by --mode=eval"),
    ("lm", ["--mode=train", "--dataset=ptb", *TINY, "--eval_memory_length=64"], "error: --eval_memory_length is not"),
    ("lm", ["--mode=export", "--export_dir=EXPORT", "--greedy"], "error: --greedy is not used by --mode=export"),
    ("lm", ["--mode=generate", "--prompt=the", "--seed=3", "--level=word"], "error: --level is not used"),
    ("translate", ["--mode=translate", "--jit_compile"], "error: --jit_compile is not used by --mode=translate"),
    ("translate", ["--mode=eval", "--num_return=2", "--beam_size=2"], "error: --num_return is not used by --mode=eval"),
    ("translate", ["--mode=eval", "--vocab_size=300"],
     "error: --vocab_size is not used by --mode=eval: --vocab_size sets model.source_vocab_size of a run to train"),
    ("pretrain", ["--mode=export", "--export_dir=EXPORT", "--corpus=sst2"], "error: --corpus is not used"),
    ("pretrain", ["--mode=config", "--corpus=sst2", "--average_checkpoints=2"],
     "error: --average_checkpoints is not used by --mode=config"),
])
def test_a_flag_the_mode_does_not_read_is_refused_not_dropped(recipe, args, message, tmp_path, probe_recipe):
    model_dir = tmp_path / "run"
    args = [arg.replace("EXPORT", str(tmp_path / "export")) for arg in args]
    assert refusal(probe_recipe(recipe, *args, f"--model_dir={model_dir}")).startswith(message)
    assert not os.path.exists(model_dir) and not os.path.exists(tmp_path / "export")


@pytest.mark.parametrize("recipe, args, message", [
    ("sentiment", ["--mode=eval", "--eval_split=test", "--batch_size=8", "--dataset=sst2", "--average_checkpoints=2"],
     "holds no trained 'sentiment' run"),
    ("lm", ["--mode=generate", "--prompt=the", "--seed=3", "--top_k=4", "--average_checkpoints=2"],
     "holds no trained 'lm' run"),
    ("translate", ["--mode=translate", "--num_return=2", "--beam_size=2", "--eval_batch_size=4"],
     "holds no trained 'translate' run"),
    ("pretrain", ["--mode=eval", "--batch_size=8"], "holds no pretraining run"),
])
def test_the_flags_a_mode_reads_pass(recipe, args, message, tmp_path, probe_recipe):
    """The same check lets through what each mode reads: these fail later, on the empty folder."""
    assert message in refusal(probe_recipe(recipe, *args, f"--model_dir={tmp_path}"))


@pytest.mark.parametrize("recipe, args, message", [
    ("lm", ["--level=phoneme"], "error: flag --level=phoneme: value should be one of <"),
    ("sentiment", ["--dataset=sst2", "--epochs=inf"],
     "error: flag --epochs=inf: --epochs must be positive and finite."),
    ("translate", ["--length_penalty=nan"], "error: flag --length_penalty=nan: --length_penalty must be a finite"),
    ("sentiment", ["--lerning_rate=1"], "error: Unknown command line flag 'lerning_rate'. Did you mean: learning_rate"),
    ("pretrain", ["--train_steps=many"], "error: flag --train_steps=many: invalid literal for int()"),
])
def test_a_flag_absl_refuses_is_one_error_line_with_exit_status_2(recipe, args, message, tmp_path, probe_recipe):
    result = probe_recipe(recipe, *args, f"--model_dir={tmp_path / 'run'}")
    assert refusal(result).startswith(message) and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not os.path.exists(tmp_path / "run")
