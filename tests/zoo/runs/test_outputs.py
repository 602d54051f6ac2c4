"""Outputs never land on inputs (issue 52): `--predictions`, `--export_dir` and `--model_dir` are checked before
any work (zoo.runs.outputs). On the run's own files (metrics.json, config.json, a checkpoint's .index,
tokenizer.model), on a temporary name of the zoo's (metrics.json.tmp, which metrics.json's own write renames
over) or on the user's training CSV, `--mode=eval --predictions=PATH` is one `error:` line and nothing on disk
changes; a predictions file the zoo wrote may be written again, and another file of the user's only with
--overwrite_predictions. One tiny run on a CSV is trained in this process; the command lines go to a warm probe
process (tests/conftest.py)."""

import hashlib
import os
import random

import pytest

import zoo
from zoo.sentiment.recipe import SENTIMENT
from zoo.training import driver

WORDS = {"neg": ["bad", "awful", "dull", "boring", "bleak"], "pos": ["good", "great", "witty", "lovely", "moving"]}
FILLER = ["the", "film", "a", "plot", "cast", "and", "was", "very", "story", "scene"]


def csv_rows(count, seed):
    generator = random.Random(seed)
    rows = ["text,label"]
    for _ in range(count):
        label = generator.choice(sorted(WORDS))
        words = generator.choices(FILLER, k=5) + generator.choices(WORDS[label], k=2)
        rows.append(f"{' '.join(generator.sample(words, len(words)))},{label}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module", name="base")
def base_fixture(tmp_path_factory):
    """A folder holding data/{train,validation}.csv and run/, a sentiment run trained 2 steps on them."""
    base = tmp_path_factory.mktemp("outputs")
    (base / "data").mkdir()
    (base / "data" / "train.csv").write_text(csv_rows(160, 0))
    (base / "data" / "validation.csv").write_text(csv_rows(20, 1))
    zoo.train("sentiment", model_dir=base / "run", dataset=f"csv:{base}/data/{{split}}.csv", preset="tiny",
              vocab_size=40, max_length=24, batch_size=16, train_steps=2, checkpoint_every=2, mode="train")
    return base


def contents(folder):
    """{relative path: sha256} of every file under `folder`, and every folder (None)."""
    found = {}
    for root, folders, files in os.walk(folder):
        for name in folders:
            found[os.path.relpath(os.path.join(root, name), folder)] = None
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                found[os.path.relpath(os.path.join(root, name), folder)] = hashlib.sha256(f.read()).hexdigest()
    return found


def evaluate(base, **options):
    """--mode=eval of the run in this process (zoo.training.driver, as the command line runs it)."""
    driver.run(SENTIMENT, driver.settings(SENTIMENT, "eval", str(base / "run"), given=options))


@pytest.mark.parametrize("target, extra, message", [
    ("run/metrics.json", [], "would write over metrics.json, one of the run's own files in"),
    ("run/config.json", [], "would write over config.json, one of the run's own files in"),
    ("run/ckpt-2.index", [], "would write over ckpt-2.index, one of the run's own files in"),
    ("run/tokenizer.model", [], "would write over tokenizer.model, one of the run's own files in"),
    ("data/train.csv", [], "already exists and is not a file the zoo wrote: name a new file, or give "
                           "--overwrite_predictions to replace it."),
    ("run/metrics.json.tmp", [], "metrics.json.tmp is a temporary name of the zoo's"),
    ("run/metrics.json", ["--overwrite_predictions"], "would write over metrics.json"),  # the run's own, always
    ("run/train/predictions.jsonl", [], "would write into train, one of the run's own files in"),
], ids=["metrics.json", "config.json", "ckpt .index", "tokenizer.model", "training CSV", "metrics.json.tmp",
        "metrics.json with overwrite", "summaries folder"])
def test_predictions_never_land_on_the_runs_files_a_temporary_name_or_the_training_data(
        base, probe_recipe, target, extra, message):
    before = contents(base)
    result = probe_recipe("sentiment", "--mode=eval", f"--model_dir={base / 'run'}",
                          f"--predictions={base / target}", *extra)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: --predictions={base / target}") and message in line, line
    assert contents(base) == before


def test_a_predictions_file_of_the_zoo_is_written_again_and_a_users_file_only_when_asked(base, tmp_path):
    ours = tmp_path / "predictions.jsonl"
    evaluate(base, predictions=str(ours))
    first = ours.read_bytes()
    assert len(first.splitlines()) == 20
    evaluate(base, predictions=str(ours))  # the zoo's own predictions, from an earlier evaluation
    assert ours.read_bytes() == first
    mine = tmp_path / "notes.txt"
    mine.write_text("my own notes\n")
    with pytest.raises(ValueError, match="notes.txt already exists and is not a file the zoo wrote"):
        evaluate(base, predictions=str(mine))
    assert mine.read_text() == "my own notes\n"
    evaluate(base, predictions=str(mine), overwrite_predictions=True)
    assert mine.read_bytes() == first


@pytest.mark.parametrize("mode, model_dir, export_dir, message", [
    ("export", "run", "run", "is the run folder itself: its versions would lie among the run's files"),
    ("export", "run", "run/train", "would write over train, one of the run's own files in"),
    ("export", "run", "run/ckpt-2_temp", "ckpt-2_temp is a temporary name of the zoo's"),
    ("export", "run", "run/config.json", "is a file, not a folder"),
    ("train", "run/eval_validation", None, "would write over eval_validation, one of the run's own files in"),
    ("train", "data/train.csv", None, "is a file, not a folder"),
], ids=["export into the run folder", "export into its summaries", "export on a temporary name",
        "export on its record", "a run inside another's files", "a run on a data file"])
def test_an_export_or_a_run_folder_is_refused_on_a_runs_own_files(base, mode, model_dir, export_dir, message):
    os.makedirs(base / "run" / "eval_validation", exist_ok=True)  # as an evaluation leaves it
    before = contents(base)
    with pytest.raises(ValueError, match=message):
        driver.settings(SENTIMENT, mode, str(base / model_dir), export_dir and str(base / export_dir),
                        given={"dataset": "sst2"} if mode == "train" else None)
    assert contents(base) == before


def test_the_names_a_run_keeps_are_those_its_writers_use():
    from zoo.language_model.vocabulary import VOCABULARY_FILE
    from zoo.runs import outputs
    from zoo.runs.export import STAGING

    assert VOCABULARY_FILE in outputs.RUN_FILES  # named there as a literal: zoo.language_model is a layer above
    assert outputs.TEMPORARY.match(f"{STAGING}host-12") and outputs.TEMPORARY.match("ckpt-4_temp")
    assert outputs.RUN_PATTERNS.match("hypotheses.test.de-en.txt") and outputs.RUN_PATTERNS.match("eval_held_out")
    assert not outputs.RUN_PATTERNS.match("predictions.jsonl") and "export" not in outputs.RUN_FILES


@pytest.mark.parametrize("mode", ["export", "train"])
def test_an_export_into_another_runs_folder_is_refused(base, tmp_path, mode):
    """Issue 58: the version folder 1/ would lie among that run's files, as the run's own folder refuses."""
    before = contents(base)
    with pytest.raises(ValueError, match=rf"^--export_dir={base / 'run'} is another run's folder \(it holds that "
                                         r"run's config.json\): the versions would lie among its files"):
        driver.settings(SENTIMENT, mode, str(tmp_path / "mine"), str(base / "run"),
                        given={"dataset": "sst2"} if mode == "train" else None)
    assert contents(base) == before and not os.path.exists(tmp_path / "mine")
    outside = tmp_path / "exports"  # a folder of the user's, or one inside the run folder, is taken
    driver.settings(SENTIMENT, "export", str(base / "run"), str(outside))
    driver.settings(SENTIMENT, "export", str(base / "run"), str(base / "run" / "export"))
    assert contents(base) == before  # settings are checked, nothing written
