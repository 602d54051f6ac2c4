"""The sweep folder holds only what the sweep wrote (zoo.sweeps.folder, zoo.sweeps.study): a folder of the user's
files refused before anything is written; the study named by the folder's record, so that a copied folder
continues its own study and two sweeps of one folder name on one storage never mix; a folder of the earlier
form (no record, its study named after the folder) taken up and recorded. No training: trials are told made-up
values."""

import os
import shutil

import optuna
import pytest

from zoo.sweeps import claims, folder as folders, space as spaces, study as studies
from zoo.sweeps.trials import Outcome

GRID = spaces.read({"method": "grid", "metric": "validation.accuracy",
                    "space": {"train.learning_rate": [1e-3, 3e-3], "model.dropout": [0.0, 0.1]}}, "sentiment")
IDENTITY = {"space": GRID.as_data()}


def run_trials(sweep, count):
    """Takes and tells `count` trials (each its number / 100), returns their numbers."""
    numbers = []
    for _ in range(count):
        claim = claims.take(sweep, GRID)
        claim.tell(Outcome(claim.number / 100, 6, 1.0))
        claim.release()
        numbers.append(claim.number)
    return numbers


def snapshot(folder):
    return {path: open(os.path.join(folder, path), "rb").read() for path in os.listdir(folder)}


@pytest.mark.parametrize("name", ["results.csv", "results.md", "best", "space.yaml", "notes.txt"])
def test_a_folder_of_the_users_files_is_refused_and_left_as_it_was(tmp_path, name):
    (tmp_path / name).write_text("the user's own\n")
    before = snapshot(tmp_path)
    with pytest.raises(folders.FolderError, match=rf"--sweep_dir={tmp_path} holds files this sweep did not write "
                                                  rf"\({name}\).*Give a new or empty folder"):
        studies.start(str(tmp_path), None, GRID, IDENTITY)
    assert snapshot(tmp_path) == before  # not even the sweep's lock


def test_the_record_is_written_first_and_names_a_study_of_its_own(tmp_path):
    sweep = studies.start(str(tmp_path / "a"), None, GRID, IDENTITY)
    record = folders.read_record(str(tmp_path / "a"))
    assert record["study"] == sweep.name and sweep.name.startswith("a-") and len(sweep.name) == len("a-") + 12
    (tmp_path / "a" / "notes.txt").write_text("mine")  # a file put into a sweep's folder later is left alone
    assert studies.start(str(tmp_path / "a"), None, GRID, IDENTITY).name == sweep.name


def test_a_copied_folder_continues_its_own_study(tmp_path):
    original = str(tmp_path / "a")
    sweep = studies.start(original, None, GRID, IDENTITY)
    assert run_trials(sweep, 2) == [0, 1]
    cut = claims.take(sweep, GRID)  # trial 2 taken, then its worker killed: RUNNING, its claim free
    cut.release()
    copy = str(tmp_path / "copies" / "b")
    shutil.copytree(original, copy)
    copied = studies.start(copy, None, GRID, IDENTITY)
    assert copied.name == sweep.name
    again = claims.take(copied, GRID)
    assert (again.number, again.resumed, again.values) == (2, True, cut.values)  # finished ones not run again
    again.tell(Outcome(0.9, 6, 1.0))
    again.release()
    assert [claim.number for claim in iter(lambda: claims.take(copied, GRID), None)] == [3]
    states = [trial.state.name for trial in sweep.study().trials]  # the original's study is untouched
    assert states == ["COMPLETE", "COMPLETE", "RUNNING", "WAITING"]


def test_two_sweeps_of_one_folder_name_on_one_storage_never_mix(tmp_path):
    shared = str(tmp_path / "shared.journal")
    first = studies.start(str(tmp_path / "x" / "sweep"), shared, GRID, IDENTITY)
    assert run_trials(first, 4) == [0, 1, 2, 3]
    second = studies.start(str(tmp_path / "y" / "sweep"), shared, GRID, IDENTITY)
    assert second.name != first.name
    assert [trial.state.name for trial in second.study().trials] == ["WAITING"] * 4
    assert run_trials(second, 4) == [0, 1, 2, 3]


def test_a_recorded_folder_whose_storage_lacks_its_study_is_refused(tmp_path):
    sweep_dir = str(tmp_path / "a")
    run_trials(studies.start(sweep_dir, None, GRID, IDENTITY), 1)
    os.makedirs(os.path.join(sweep_dir, "trial-000"))
    with pytest.raises(folders.FolderError, match=r"holds trials of the study 'a-\w+', which --storage=\S+other"
                                                  r"\.journal does not hold: give the --storage the sweep was"):
        studies.start(sweep_dir, str(tmp_path / "other.journal"), GRID, IDENTITY)


def earlier_form(sweep_dir, identity):
    """A sweep folder as the previous version left it: no record, its study named after the folder, trial 0
    done (its figures on the trial), trial 1 cut while it ran."""
    os.makedirs(sweep_dir)
    open(os.path.join(sweep_dir, folders.LOCK), "w").close()
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(os.path.join(sweep_dir, folders.JOURNAL)))
    study = optuna.create_study(study_name=os.path.basename(sweep_dir), storage=storage, direction="maximize")
    study.set_user_attr("sweep", identity)
    for point in GRID.points():
        study.enqueue_trial(point)
    done = study.ask(studies.distributions(GRID))
    for key, value in {"folder": "trial-000", "steps": 6, "seconds": 2.5, "error": None}.items():
        done.set_user_attr(key, value)
    study.tell(done, 0.75)
    return study.ask(studies.distributions(GRID)).params  # trial 1, RUNNING: its worker was killed


def test_a_folder_of_the_earlier_form_resumes_and_is_recorded(tmp_path):
    from zoo.sweeps import results as sweep_results

    sweep_dir = str(tmp_path / "old")
    cut_values = earlier_form(sweep_dir, IDENTITY)
    sweep = studies.start(sweep_dir, None, GRID, IDENTITY)
    assert sweep.name == "old" and folders.read_record(sweep_dir)["study"] == "old"
    again = claims.take(sweep, GRID)
    assert (again.number, again.resumed, again.values) == (1, True, cut_values)
    rows = sweep_results.collect(sweep.study(), GRID).rows
    assert (rows[0]["status"], rows[0]["steps"], rows[0]["seconds"]) == ("done", 6, 2.5)
    with pytest.raises(ValueError, match=r"another space or other settings"):
        studies.start(sweep_dir, None, GRID, {"space": {**GRID.as_data(), "goal": "min"}})
