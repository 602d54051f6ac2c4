"""Run folders made before issue 59's change (tests/fixtures/old_runs: sentiment and a character LM of the tiny
presets, a translator of one layer a side and width 32 so its checkpoint stays under 1 MB; 4 steps each, trained,
evaluated and exported by main 6f73931) still evaluate, export, load and resume after it, with the figures and
answers that code gave (answers.json: its zoo.load of each run folder and of its export, the translation export
made with --beam_size=2)."""

import json
import pathlib
import shutil

import numpy as np
import pytest

import zoo
from tests.conftest import run_recipe

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

OLD = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "old_runs"
ANSWERS = json.loads((OLD / "answers.json").read_text())
TEXTS = ["a gorgeous, witty film", "dull and long", "the plot goes nowhere"]
SOURCES = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]
EVALUATED = {"sentiment": "eval_validation", "translate": "eval_test", "lm": "eval_test"}
OPTIONS = {"translate": ["--beam_size=2"]}  # the old run evaluated and exported with these


def figures(section):
    """A metrics.json section less its wall times (never the same twice)."""
    if isinstance(section, dict):
        return {key: figures(value) for key, value in section.items() if "seconds" not in key}
    return section


def answers_of(recipe, model):
    if recipe == "sentiment":
        return model.predict(TEXTS)
    if recipe == "translate":
        return model.translate(SOURCES)
    return {"generate": model.generate(["ROMEO: "], max_new_tokens=12, top_k=5, seed=0),
            "score": model.score(["To be, or not to be"])}


def same_answers(got, expected):
    if isinstance(expected, dict):
        assert set(got) == set(expected)
        for key in expected:
            same_answers(got[key], expected[key])
    elif isinstance(expected, list):
        assert len(got) == len(expected)
        for one, other in zip(got, expected):
            same_answers(one, other)
    elif isinstance(expected, float):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    else:
        assert got == expected


@pytest.mark.parametrize("recipe", ["sentiment", "translate", "lm"])
def test_an_old_run_evaluates_exports_and_loads_as_before(recipe, tmp_path, probe_recipe):
    run = shutil.copytree(OLD / recipe, tmp_path / "run")
    old = json.loads((OLD / recipe / "metrics.json").read_text())
    evaluated = probe_recipe(recipe, "--mode=eval", f"--model_dir={run}", *OPTIONS.get(recipe, []))
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    now = json.loads((run / "metrics.json").read_text())
    assert figures(now[EVALUATED[recipe]]) == figures(old[EVALUATED[recipe]])
    assert json.loads((run / "config.json").read_text()) == json.loads((OLD / recipe / "config.json").read_text())
    exported = probe_recipe(recipe, "--mode=export", f"--model_dir={run}", f"--export_dir={tmp_path / 'export'}",
                            *OPTIONS.get(recipe, []))
    assert exported.returncode == 0, exported.stderr[-3000:]
    same_answers(answers_of(recipe, zoo.load(str(tmp_path / "export"))), ANSWERS[f"{recipe}_export"])
    same_answers(answers_of(recipe, zoo.load(str(run))), ANSWERS[recipe])


@pytest.mark.parametrize("recipe", ["sentiment", "translate", "lm"])
def test_an_old_run_resumes_from_its_config(recipe, tmp_path):
    run = shutil.copytree(OLD / recipe, tmp_path / "run")
    resumed = run_recipe(recipe, f"--config={run / 'config.json'}", f"--model_dir={run}", "--train_steps=6",
                         "--mode=train", check=False)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resuming from step 4" in resumed.stdout
    assert json.loads((run / "metrics.json").read_text())["train"]["step"] == 6
    record = json.loads((run / "config.json").read_text())
    assert record["train"]["train_steps"] == 6 and "preset" not in record["derived"]  # an old record keeps its own
