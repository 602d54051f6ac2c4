"""benchmarks/common/quick.py, every benchmark program's --quick: it shrinks only what the command line left
unset, trains the recipes' tiny preset for a few steps, and sends the sections to the quick report, never to
BENCHMARKS.md."""

from absl import flags

from benchmarks.common import quick, report


def quick_flags(*argv):
    values = flags.FlagValues()
    quick.define(values)
    quick.define(values)  # a second program's import in the same process defines nothing again
    flags.DEFINE_integer("steps", 100, "", flag_values=values)
    flags.DEFINE_list("seeds", ["0", "1"], "", flag_values=values)
    values(["program", *argv])
    return values


def test_shrink_changes_only_the_flags_the_command_line_left_and_only_with_quick():
    values = quick_flags("--quick", "--steps=7")
    quick.shrink(values, steps=2, seeds=["0"])
    assert (values.steps, values.seeds) == (7, ["0"])
    plain = quick_flags("--steps=7")
    quick.shrink(plain, steps=2, seeds=["0"])
    assert (plain.steps, plain.seeds) == (7, ["0", "1"])


def test_a_quick_runs_recipe_trains_the_tiny_preset_for_a_few_steps():
    values = quick_flags("--quick")
    flags_ = ["--dataset=sst2", "--preset=small", "--epochs=2", "--learning_rate=1e-3", "--warmup_steps=300"]
    assert quick.training(flags_, values, max_examples=200) == [
        "--dataset=sst2", "--preset=tiny", "--learning_rate=1e-3", "--warmup_steps=1", "--train_steps=2",
        "--checkpoint_every=2", "--log_every=1", "--max_examples=200"]
    tuned = quick.training(["--init_from=/ckpt", "--epochs=1"], values)
    assert not [f for f in tuned if f.startswith(("--preset=", "--epochs="))] and "--train_steps=2" in tuned
    assert quick.training(flags_, quick_flags()) == flags_


def test_a_quick_run_writes_its_section_into_the_quick_report_alone(tmp_path, monkeypatch):
    target, quick_report = tmp_path / "BENCHMARKS.md", tmp_path / "quick.md"
    target.write_text("# Benchmarks\n")
    monkeypatch.setattr(report, "BENCHMARKS", str(target))
    monkeypatch.setattr(flags.FLAGS["quick"], "value", True)
    monkeypatch.setattr(flags.FLAGS["quick_report"], "value", str(quick_report))
    report.write_section("Smoke", "figures")
    assert target.read_text() == "# Benchmarks\n"
    assert "<!-- Smoke -->\n## Smoke\n" in quick_report.read_text() and "figures" in quick_report.read_text()
    monkeypatch.setattr(flags.FLAGS["quick"], "value", False)
    report.write_section("Smoke", "figures")
    assert "## Smoke" in target.read_text()
