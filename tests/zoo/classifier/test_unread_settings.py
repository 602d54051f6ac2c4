"""Settings a run does not read, and labels it cannot score (issue 58): model.threshold on a single-label or
regression run and data.label_separator on either are refused when the config is built, naming the field and the
problem type, as data.classes is for a regression (their defaults, as every record holds them, pass); a regression
label beyond +-1e15 is a bad row named file:line before anything is written (its squared errors would overflow
float32 at evaluation), which --bad_rows=skip leaves out. Nothing here trains."""

import os

import pytest

import zoo
from zoo.classifier import data as classifier_data
from zoo.classifier.run_config import SentimentRunConfig
from zoo.classifier.targets import MAX_LABEL
from zoo.core import config as cfg
from zoo.core.config import ConfigError

SINGLE, REGRESSION, MULTI = "single_label_classification", "regression", "multi_label_classification"


@pytest.mark.parametrize("problem_type, given, message", [
    (SINGLE, {"model": {"threshold": 0.7}}, "model.threshold=0.7 is the probability at which a multi-label run "
                                            "predicts a label, and a single_label_classification (model.problem_type) "
                                            "answers its likeliest class: leave it out."),
    (REGRESSION, {"model": {"threshold": 0.3}}, "model.threshold=0.3 is the probability at which a multi-label run "
                                                "predicts a label, and a regression (model.problem_type) answers a "
                                                "number: leave it out."),
    (SINGLE, {"data": {"label_separator": ";"}}, "data.label_separator=';' splits a multi-label run's labels, and a "
                                                 "single_label_classification (model.problem_type) reads one label a "
                                                 "row: leave it out."),
    (REGRESSION, {"data": {"label_separator": ","}}, "data.label_separator=',' splits a multi-label run's labels, and "
                                                     "a regression (model.problem_type) reads one label a row: leave "
                                                     "it out."),
], ids=["threshold, single-label", "threshold, regression", "separator, single-label", "separator, regression"])
def test_a_multi_label_setting_on_another_problem_type_is_refused(problem_type, given, message):
    given = {**given, "model": {**given.get("model", {}), "problem_type": problem_type}}
    with pytest.raises(ConfigError) as raised:
        cfg.from_dict(SentimentRunConfig, given)
    assert str(raised.value) == message


def test_the_defaults_and_a_multi_label_run_pass():
    for problem_type in (SINGLE, REGRESSION, MULTI):  # the defaults, as every record of these runs holds them
        config = cfg.from_dict(SentimentRunConfig, {"model": {"problem_type": problem_type, "threshold": 0.5},
                                                    "data": {"label_separator": "|"}})
        assert (config.model.threshold, config.data.label_separator) == (0.5, "|")
    config = cfg.from_dict(SentimentRunConfig, {"model": {"problem_type": MULTI, "threshold": 0.3},
                                                "data": {"label_separator": ";"}})
    assert (config.model.threshold, config.data.label_separator) == (0.3, ";")


def test_zoo_train_refuses_threshold_on_a_single_label_run_before_writing(tmp_path):
    with pytest.raises(ConfigError, match=r"^model.threshold=0.9 is the probability"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset="sst2", threshold=0.9, mode="train")
    with pytest.raises(ConfigError, match=r"^data.label_separator=';' splits"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset="sst2", label_separator=";", mode="train")
    assert not os.path.exists(tmp_path / "run")


def scores_csv(folder, bad_label):
    """A regression csv: dataset whose train.csv holds 40 rows, line 8 (row 7) labelled `bad_label`."""
    rows = [f"sentence number {i},{i % 5 + 0.5}" for i in range(40)]
    rows[6] = f"the big one,{bad_label}"
    folder.mkdir()
    (folder / "train.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    (folder / "validation.csv").write_text("text,label\n" + "\n".join(rows[20:]) + "\n")  # no held-out share
    return f"csv:{folder}/{{split}}.csv"


@pytest.mark.parametrize("label", ["1e30", "-1e30", "3.4e38", "-3.4e38", "1e16"])
def test_a_label_beyond_the_bound_is_a_bad_row_named_before_anything_is_written(label, tmp_path):
    dataset = scores_csv(tmp_path / "scores", label)
    (tmp_path / "run").mkdir()
    with pytest.raises(ValueError, match=rf"1 bad row\(s\) .*scores/train.csv:8: label '{label}' is beyond "
                                         r"\+-1e\+15, the largest magnitude a regression reads"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=dataset, problem_type=REGRESSION, preset="tiny",
                  train_steps=1, mode="train")
    assert os.listdir(tmp_path / "run") == []


def test_skip_leaves_such_a_label_out_and_the_bound_itself_is_read(tmp_path):
    spec = cfg.from_dict(SentimentRunConfig, {"data": {"dataset": scores_csv(tmp_path / "scores", "2e30"),
                                                       "bad_rows": "skip"},
                                              "model": {"problem_type": REGRESSION}}).dataset_spec
    examples = classifier_data.load(spec, "train")
    assert (examples.count, examples.skipped) == (39, 1) and abs(examples.targets.values).max() == 4.5
    spec = cfg.from_dict(SentimentRunConfig, {"data": {"dataset": scores_csv(tmp_path / "edge", "-1e15")},
                                              "model": {"problem_type": REGRESSION}}).dataset_spec
    assert classifier_data.load(spec, "train").targets.values.min() == -MAX_LABEL == -1e15
