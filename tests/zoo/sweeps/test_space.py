"""The space file and its checks against the typed config (zoo.sweeps.space, zoo.sweeps.trials.check): every
refusal is one error naming the field, raised before the sweep folder gets any file. No training."""

import os

import pytest

import zoo
from zoo.configs import RUN_CONFIGS
from zoo.core.config import ConfigError
from zoo.sweeps import space as spaces

FIXED = {"dataset": "sst2", "preset": "tiny", "max_examples": 200, "vocab_size": 300, "train_steps": 6}


def grid(**fields):
    return {"method": "grid", "metric": "validation.accuracy", "space": fields}


def refused(tmp_path, space, match, **fixed):
    """zoo.sweep refuses `space` with an error matching `match`, and the sweep folder is not made."""
    sweep_dir = tmp_path / "sweep"
    with pytest.raises(ConfigError, match=match):
        zoo.sweep("sentiment", sweep_dir, space, **{**FIXED, **fixed})
    assert not os.path.exists(sweep_dir)


@pytest.mark.parametrize("space, match", [
    (grid(**{"model.dropuot": [0.1]}), r"model\.dropuot is not a config field: did you mean model\.dropout"),
    (grid(**{"modle.dropout": [0.1]}), r"modle is not a config field"),
    (grid(**{"train.learning_rate": ["fast"]}), r"train\.learning_rate='fast' must be a number"),
    (grid(**{"train.warmup_steps": [1.5]}), r"train\.warmup_steps=1\.5 .*must be a whole number"),
    (grid(**{"model.dropout": [0.1, 1.0]}), r"model\.dropout"),
    (grid(**{"model.dropout": []}), r"model\.dropout has an empty list"),
    (grid(**{"model.dropout": [0.1, 0.1]}), r"model\.dropout lists 0\.1 twice"),
    (grid(**{"model.hidden_dim": [32, 48], "model.num_heads": [2, 32]}),
     r"model\.num_heads=32 .*model\.hidden_dim=48.*at the point model\.hidden_dim=48, model\.num_heads=32"),
    (grid(**{"train.warmup_steps": {"min": 10, "max": 0, "step": 5}}), r"train\.warmup_steps: min=10 is above max=0"),
    (grid(**{"train.weight_decay": {"min": 0.1, "max": 0.5}}), r"train\.weight_decay: a grid takes a list"),
    (grid(**{"train.warmup_steps": {"min": 0, "max": 10, "step": 2.5}}), r"train\.warmup_steps holds whole numbers"),
    (grid(**{"model.position": {"min": 0, "max": 1, "step": 1}}), r"model\.position is not a number field"),
    (grid(**{"setup.strategy": ["mirrored"]}), r"setup\.strategy sets the devices"),
    ({"method": "random", "metric": "validation.accuracy", "max_trials": 4,
      "space": {"train.weight_decay": {"min": 0.0, "max": 0.1, "scale": "log"}}},
     r"train\.weight_decay: a log scale needs min above 0"),
    ({"method": "random", "metric": "validation.accuracy", "space": {"model.dropout": [0.1]}}, r"needs max_trials"),
    ({"method": "sweep", "metric": "validation.accuracy", "space": {"model.dropout": [0.1]}}, r"method='sweep'"),
    ({"methd": "grid", "metric": "validation.accuracy", "space": {"model.dropout": [0.1]}}, r"'methd' is not a key"),
    ({"method": "grid", "metric": "validation.acuracy", "space": {"model.dropout": [0.1]}},
     r"metric='validation\.acuracy' is not a figure sentiment runs write"),
    ({"method": "grid", "metric": "test.accuracy", "space": {"model.dropout": [0.1]}},
     r"metric=test\.accuracy but the trials evaluate 'validation'"),
    ({"method": "grid", "metric": "validation.accuracy", "goal": "up", "space": {"model.dropout": [0.1]}},
     r"goal='up' must be max or min"),
    ({"method": "grid", "metric": "validation.accuracy", "max_trials": 1, "space": {"model.dropout": [0.1, 0.2]}},
     r"max_trials=1 is less than the grid's 2 points"),
    ({"method": "grid", "metric": "validation.accuracy", "space": {}}, r"space must map each searched field"),
])
def test_bad_spaces_are_refused_before_any_file(tmp_path, space, match):
    refused(tmp_path, space, match)


def test_a_searched_field_given_as_a_flag_or_override_is_refused(tmp_path):
    space = grid(**{"train.learning_rate": [1e-3, 3e-3]})
    refused(tmp_path, space, r"train\.learning_rate is searched by the space and set by --learning_rate too",
            learning_rate=1e-3)
    refused(tmp_path, space, r"train\.learning_rate is searched by the space and set by "
            r"--config\.train\.learning_rate too", overrides=["train.learning_rate=0.001"])


def test_a_bad_space_file_is_refused(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("method: grid\nmetric: validation.accuracy\nspace:\n  model.dropout: [0.1]\n"
                    "  model.dropout: [0.2]\n")
    refused(tmp_path, str(path), r"'model\.dropout' is given twice")
    path.write_text("")
    refused(tmp_path, str(path), r"is empty")


def test_a_grid_runs_every_point_the_first_field_slowest():
    space = spaces.read({"method": "grid", "metric": "validation.accuracy", "space": {
        "train.learning_rate": [1e-4, 5e-4], "train.warmup_steps": {"min": 0, "max": 400, "step": 200}}}, "sentiment")
    space = spaces.with_types(space, RUN_CONFIGS["sentiment"])
    assert space.trials == 6
    assert space.points() == [{"train.learning_rate": lr, "train.warmup_steps": warmup}
                              for lr in (1e-4, 5e-4) for warmup in (0, 200, 400)]
    assert all(isinstance(point["train.warmup_steps"], int) for point in space.points())


def test_random_corners_are_the_lists_and_the_ranges_ends():
    space = spaces.read({"method": "random", "metric": "validation.loss", "max_trials": 3, "space": {
        "model.dropout": [0.1, 0.3], "train.weight_decay": {"min": 1e-5, "max": 0.1, "scale": "log"}}}, "sentiment")
    assert space.goal == "min" and space.trials == 3
    assert {tuple(point.values()) for point in space.corners()} == {(0.1, 1e-5), (0.1, 0.1), (0.3, 1e-5), (0.3, 0.1)}


@pytest.mark.parametrize("recipe, metric, goal", [
    ("sentiment", "validation.accuracy", "max"), ("sentiment", "validation.macro_f1", "max"),
    ("sentiment", "train.loss", "min"), ("translate", "test.bleu", "max"), ("translate", "validation.chrf", "max"),
    ("lm", "test.perplexity", "min"), ("lm", "test.bits_per_character", "min"),
    ("pretrain", "held_out.masked_accuracy", "max"), ("pretrain", "held_out.masked_perplexity", "min"),
])
def test_the_goal_follows_the_metrics_kind(recipe, metric, goal):
    space = spaces.read({"method": "grid", "metric": metric, "space": {"model.dropout": [0.1]}}, recipe)
    assert space.goal == goal
    assert spaces.read({"method": "grid", "metric": metric, "goal": "min" if goal == "max" else "max",
                        "space": {"model.dropout": [0.1]}}, recipe).goal != goal
