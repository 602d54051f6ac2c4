"""End to end, from the command line (python -m recipes.sweep) on tiny sentiment runs of an SST-2 slice: a sweep
folder of the user's files refused with one error line, the folder left as it was; a sweep whose every trial
failed ends with one error line giving their error (exit status 2) once results.csv is written, and
--retry_failed runs those trials again in their own folders."""

import csv

import pytest
import yaml

from tests.conftest import as_flags, run_recipe

pytestmark = pytest.mark.slow  # each starts a process that imports TensorFlow (docs/testing.md)

SETTINGS = {"dataset": "sst2_tune", "preset": "tiny", "max_examples": 200, "vocab_size": 300, "batch_size": 8,
            "train_steps": 4, "checkpoint_every": 2, "log_every": 2}


def sweep(space, sweep_dir, *extra):
    return run_recipe("sweep", "--recipe=sentiment", f"--space={space}", f"--sweep_dir={sweep_dir}",
                      *as_flags(SETTINGS), *extra, check=False)


def write_space(path, fields):
    path.write_text(yaml.safe_dump({"method": "grid", "metric": "validation.accuracy", "space": fields}))
    return path


def test_a_folder_of_the_users_files_is_refused_with_one_line(tmp_path):
    space = write_space(tmp_path / "space.yaml", {"model.dropout": [0.0, 0.1]})
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.csv").write_text("my,own\n1,2\n")
    result = sweep(space, mine)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: --sweep_dir={mine} holds files this sweep did "
                                                             "not write (results.csv)")
    assert sorted(path.name for path in mine.iterdir()) == ["results.csv"]
    assert (mine / "results.csv").read_text() == "my,own\n1,2\n"


def test_a_sweep_whose_every_trial_failed_says_their_error_and_retry_failed_runs_them_again(tmp_path):
    space = write_space(tmp_path / "space.yaml", {"train.learning_rate": [1.0e+30, 1.0e+31]})  # a NaN loss each
    result = sweep(space, tmp_path / "sweep")
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: every trial of {tmp_path / 'sweep'} failed (2 trials; every one: "
                           "NonFiniteLossError: The loss is nan"), last
    assert f"{tmp_path / 'sweep' / 'trial-NNN'} was saved" in last  # the folder each trial's error names
    with open(tmp_path / "sweep" / "results.csv") as f:
        assert [row["status"] for row in csv.DictReader(f)] == ["failed", "failed"]
    assert "2 of 2 trials finished (0 done, 2 failed); no best yet." in result.stdout
    again = sweep(space, tmp_path / "sweep", "--retry_failed")
    assert "Running 2 failed trials again: trial-000, trial-001." in again.stdout
    assert [line.split(" ")[0] for line in again.stdout.splitlines() if line.startswith("trial-")] == [
        "trial-000:", "trial-001:"]
    assert again.returncode == 2 and "failed (2 trials; every one: NonFiniteLossError" in again.stderr
