"""One resolve for every mode (issue 59): a mode that reads a trained run takes the run's record as its config, its
eval section and the split it evaluates at the recipe's defaults, and the shortcuts that mode reads over them; a
training run's eval section follows the training fields it follows; an older record, without the section, takes
its defaults. Records are written by hand here: nothing trains."""

import json

import pytest

from zoo.classifier.run_config import SentimentData, SentimentEval, SentimentRunConfig
from zoo.core.config import ConfigError
from zoo.registry import RECIPES
from zoo.runs.run_dir import CONFIG_FILE, RunDir
from zoo.training import run_settings
from zoo.training.config import TrainConfig
from zoo.training.run_settings import resolve

SENTIMENT = RECIPES["sentiment"]


@pytest.fixture(name="trained")
def trained_fixture(tmp_path):
    """A sentiment run's folder holding only its record: trained on CSV columns of its own, evaluating test, with
    a predictions file."""
    config = SentimentRunConfig(
        data=SentimentData("csv:/data/{split}.csv", eval_split="test", text_column="review", label_column="stars"),
        train=TrainConfig(batch_size=16, mixed_precision="float32"),
        eval=SentimentEval(batch_size=16, predictions="/data/predictions.jsonl"))
    RunDir(str(tmp_path)).record_training("sentiment", config, {"class_names": ["neg", "pos"]})
    return tmp_path, config


def test_eval_takes_the_record_with_its_own_eval_section_and_split(trained):
    folder, config = trained
    evaluated = resolve(SENTIMENT, given={"batch_size": 8}, model_dir=str(folder), mode="eval")
    assert evaluated.eval == SentimentEval(batch_size=8)  # the command's own: no predictions file of training's
    assert evaluated.data.eval_split == "validation"  # the recipe's default, as --mode=eval evaluated before
    assert (evaluated.data.text_column, evaluated.data.label_column) == ("review", "stars")  # the run's own
    assert evaluated.model == config.model and evaluated.train == config.train
    columns = resolve(SENTIMENT, given={"text_column": "text", "eval_split": "test"}, model_dir=str(folder),
                      mode="eval")
    assert (columns.data.text_column, columns.data.label_column, columns.data.eval_split) == ("text", "stars", "test")


def test_a_mode_takes_only_the_shortcuts_it_reads(trained):
    folder, _ = trained
    assert run_settings.reads(SENTIMENT, "eval")["batch_size"] == "eval.batch_size"
    assert run_settings.reads(SENTIMENT, "train")["batch_size"] == "train.batch_size"
    with pytest.raises(ConfigError, match="learning_rate is not a setting of sentiment runs"):
        resolve(SENTIMENT, given={"learning_rate": 1e-3}, model_dir=str(folder), mode="eval")
    with pytest.raises(ConfigError, match=r"^eval\.batch_size=0 must be at least 1\.$"):  # named as the field
        resolve(SENTIMENT, given={"batch_size": 0}, model_dir=str(folder), mode="eval")


def test_an_older_record_without_the_eval_section_takes_its_defaults_and_resumes(trained):
    folder, config = trained
    record = json.loads((folder / CONFIG_FILE).read_text())
    del record["eval"]
    (folder / CONFIG_FILE).write_text(json.dumps(record))
    read = RunDir(str(folder)).read_record("sentiment", SentimentRunConfig)
    assert read.config.eval == SentimentEval() and not any(name.startswith("eval.") for name in read.fields)
    resumed = run_settings.start_run(RunDir(str(folder)), "sentiment", config, None, CONFIG_FILE, chief=True)
    assert resumed.model == config.model  # the eval section a resume asks for is its own: no refusal


def test_a_training_runs_eval_section_follows_its_training_fields():
    config = resolve(SENTIMENT, given={"dataset": "sst2", "batch_size": 8})
    assert config.eval.batch_size == 8 and resolve(SENTIMENT, given={"dataset": "sst2"}).eval.batch_size == 64
    translate = resolve(RECIPES["translate"], given={"dataset": "multi30k", "seed": 3, "jit_compile": True})
    assert (translate.eval.decode.seed, translate.eval.jit_compile) == (3, True)
    set_apart = resolve(RECIPES["translate"], given={"dataset": "multi30k", "seed": 3},
                        overrides=["eval.decode.seed=5"])
    assert set_apart.eval.decode.seed == 5 and set_apart.train.seed == 3
