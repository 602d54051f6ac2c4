"""What a sweep checks before its first trial (zoo.sweeps.space, trials.check, metrics): a grid's size counted
without making its points, the metric against each trial's kind of run, the settings every trial shares by
preparing the first trial's run without training it; and the figures asked of the recipe registry
(zoo.training.driver.Figures), not known by recipe name. No training."""

import dataclasses
import os
import tempfile
import time

import pytest

import zoo
from zoo.api import RECIPES
from zoo.configs import RUN_CONFIGS
from zoo.core.config import ConfigError
from zoo.sweeps import metrics, space as spaces
from zoo.training import driver

FIXED = {"dataset": "sst2", "preset": "tiny", "max_examples": 200, "vocab_size": 300, "train_steps": 6}


def refused(tmp_path, space, match, **fixed):
    """zoo.sweep refuses `space` with an error matching `match`, and the sweep folder is not made."""
    sweep_dir = tmp_path / "sweep"
    with pytest.raises(ConfigError, match=match):
        zoo.sweep("sentiment", sweep_dir, space, **{**FIXED, **fixed})
    assert not os.path.exists(sweep_dir)


@pytest.fixture
def no_grid_made(monkeypatch):
    """Making a range's values fails the test: a search's size and corners are counted, never listed."""
    def made(self):
        raise AssertionError(f"the range {self.as_data()} was made")

    monkeypatch.setattr(spaces.Range, "grid", made)


def test_a_huge_grid_is_refused_at_once_its_points_counted_not_made(tmp_path, no_grid_made):
    lists = {"train.learning_rate": [k * 1e-5 for k in range(1, 101)], "model.dropout": [k / 100 for k in range(50)],
             "train.warmup_steps": list(range(100))}
    began = time.time()
    refused(tmp_path, {"method": "grid", "metric": "validation.accuracy", "space": lists},
            r"the grid has 500,000 points \(its fields' values: 100 x 50 x 100\), more than the 10,000 trials")
    refused(tmp_path, {"method": "grid", "metric": "validation.accuracy",
                       "space": {"train.warmup_steps": {"min": 0, "max": 1_000_000_000, "step": 1}}},
            r"the grid has 1,000,000,001 points")
    refused(tmp_path, {"method": "grid", "metric": "validation.accuracy",
                       "space": {"model.dropout": {"min": 0.0, "max": 0.5, "step": 1e-300}}},
            r"the grid has more points than can be counted \(its fields' values: past counting\)")
    refused(tmp_path, {"method": "random", "metric": "validation.accuracy", "max_trials": 20_000,
                       "space": {"model.dropout": [0.1]}}, r"max_trials=20,000 is more than the 10,000 trials")
    assert time.time() - began < 10


def test_a_random_searchs_corners_are_a_huge_ranges_ends(no_grid_made):
    space = spaces.read({"method": "random", "metric": "validation.accuracy", "max_trials": 4, "space": {
        "train.warmup_steps": {"min": 0, "max": 1_000_000_000, "step": 1}, "model.dropout": [0.1, 0.3]}}, "sentiment")
    space = spaces.with_types(space, RUN_CONFIGS["sentiment"])
    assert sorted(tuple(point.values()) for point in space.corners()) == [
        (0, 0.1), (0, 0.3), (1_000_000_000, 0.1), (1_000_000_000, 0.3)]


def test_a_metric_the_trials_kind_does_not_write_is_refused(tmp_path):
    refused(tmp_path, {"method": "grid", "metric": "validation.mse", "space": {"model.dropout": [0.1]}},
            r"metric=validation\.mse is not written by a run of model\.problem_type=single_label_classification .*"
            r"it writes accuracy, macro_f1, loss; mse is written where model\.problem_type is regression")


def test_a_search_over_kinds_of_run_is_refused_with_the_reason(tmp_path):
    kinds = ["single_label_classification", "multi_label_classification"]
    refused(tmp_path, {"method": "grid", "metric": "validation.loss", "space": {"model.problem_type": kinds}},
            r"metric=validation\.loss would rank runs of different kinds against each other: model\.problem_type is "
            r"single_label_classification and multi_label_classification .* each kind writes its own figures")


def test_a_metric_is_checked_against_the_kind_a_trials_config_has():
    sentiment = RECIPES["sentiment"]
    config = RUN_CONFIGS["sentiment"]()
    regression = dataclasses.replace(config, model=dataclasses.replace(config.model, problem_type="regression"))
    metrics.check_trial(sentiment, "validation.mse", regression, {})
    with pytest.raises(ConfigError, match=r"metric=validation\.accuracy is not written by a run of "
                                          r"model\.problem_type=regression"):
        metrics.check_trial(sentiment, "validation.accuracy", regression, {})
    metrics.check_kinds(sentiment, "validation.loss", [config, config])


def test_a_setting_every_trial_shares_is_refused_by_preparing_the_first_trial(tmp_path, monkeypatch, capsys):
    """The default vocab_size=8000 is more than 2,000 SST-2 sentences make: the run's own line, no folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temporary"))
    os.makedirs(tempfile.tempdir)
    refused(tmp_path, {"method": "grid", "metric": "validation.accuracy", "space": {"model.dropout": [0.1, 0.2]}},
            r"the space: the trial at model\.dropout=0\.1 cannot train, nor can any trial that shares its settings: "
            r"vocab_size=8000 is too large for this training text: SentencePiece can make at most 3424 pieces",
            vocab_size=8000, max_examples=2000, train_steps=150)
    assert os.listdir(tempfile.tempdir) == []  # the prepared run's folder is removed
    assert "Preparing a trial's data" in capsys.readouterr().err


def test_a_yaml_list_is_described_in_a_space_files_words(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("- method: grid\n- metric: validation.accuracy\n")
    with pytest.raises(ConfigError, match=r"must hold a mapping of a space file's keys \(method:, metric:, space: "
                                          r"\.\.\.; docs/sweep\.md\), not list") as refusal:
        spaces.read(str(path), "sentiment")
    assert "data:" not in str(refusal.value)


def test_a_range_of_an_optional_whole_number_field_holds_whole_numbers():
    space = spaces.read({"method": "grid", "metric": "validation.accuracy",
                         "space": {"data.max_examples": {"min": 100, "max": 300, "step": 100}}}, "sentiment")
    assert spaces.with_types(space, RUN_CONFIGS["sentiment"]).points() == [
        {"data.max_examples": 100}, {"data.max_examples": 200}, {"data.max_examples": 300}]


def test_the_figures_and_split_are_asked_of_the_recipe():
    """A recipe the sweep has never heard of, with figures of its own, is searched by them."""
    figures = driver.Figures({"a": ("score_f1",), "b": ("score_f1", "log_loss")}, lambda config: "dev",
                             kind="model.dropout", within="inner")
    other = dataclasses.replace(RECIPES["sentiment"], name="other", figures=figures)
    space = spaces.read({"method": "grid", "metric": "dev.log_loss", "space": {"model.dropout": [0.1]}}, other)
    assert (space.metric, space.goal) == ("dev.log_loss", "min")
    with pytest.raises(ConfigError, match=r"metric='dev\.accuracy' is not a figure other runs write: name one of "
                                          r"SPLIT\.score_f1, SPLIT\.log_loss, train\.loss"):
        spaces.read({"method": "grid", "metric": "dev.accuracy", "space": {"model.dropout": [0.1]}}, other)
    assert metrics.read(other, "dev.log_loss", {"eval_dev": {"inner": {"log_loss": 0.25}}}) == 0.25
    assert RUN_CONFIGS == {name: recipe.config_class for name, recipe in RECIPES.items()}


@pytest.mark.parametrize("recipe, split, figures", [
    ("sentiment", "validation", ("accuracy", "macro_f1", "loss", "mse", "rmse", "mae", "pearson", "spearman",
                                 "micro_f1", "subset_accuracy")),
    ("translate", "test", ("bleu", "chrf", "loss")),
    ("lm", "test", ("perplexity", "bits_per_character")),
    ("pretrain", "held_out", ("masked_accuracy", "masked_perplexity", "detection_accuracy", "replaced_recall",
                              "detection_loss")),
])
def test_each_recipe_says_its_figures_and_split(recipe, split, figures):
    spec = RECIPES[recipe]
    assert spec.figures.every() == figures
    assert metrics.example(spec) == f"{split}.{figures[0]}"


def test_distillations_fields_are_searched_as_any_field():
    """Issue 60: the temperature, the teacher's weight and the copies are fields a space searches, typed."""
    space = spaces.read({"method": "grid", "metric": "validation.accuracy",
                         "space": {"distill.temperature": [1, 4], "distill.weight": {"min": 0.5, "max": 1.0,
                                                                                        "step": 0.5},
                                   "augment.copies": [1, 2]}}, "sentiment")
    points = spaces.with_types(space, RUN_CONFIGS["sentiment"]).points()
    assert len(points) == 8
    assert {(p["distill.temperature"], p["distill.weight"], p["augment.copies"]) for p in points} == {
        (t, w, c) for t in (1.0, 4.0) for w in (0.5, 1.0) for c in (1, 2)}
    assert all(isinstance(p["augment.copies"], int) for p in points)
