"""Damaged sweep state is one error naming the file and what to do (zoo.sweeps.journal, zoo.sweeps.folder): a
journal cut mid-line (what a kill during a write leaves) repaired, its cut line set aside; a journal of random
bytes, a --storage that is a folder or a CSV, and a sweep folder the file system refuses, each refused."""

import contextlib
import io
import os
import subprocess

import pytest

from zoo.core import disk
from zoo.sweeps import claims, folder as folders, space as spaces, study as studies
from zoo.sweeps.trials import Outcome

GRID = spaces.read({"method": "grid", "metric": "validation.accuracy",
                    "space": {"train.learning_rate": [1e-3, 3e-3, 1e-2]}}, "sentiment")
IDENTITY = {"space": GRID.as_data()}


def test_a_journal_cut_mid_line_is_repaired_and_the_cut_line_set_aside(tmp_path):
    sweep = studies.start(str(tmp_path), None, GRID, IDENTITY)
    claim = claims.take(sweep, GRID)
    claim.tell(Outcome(0.5, 6, 1.0))
    claim.release()
    journal = tmp_path / studies.JOURNAL
    whole = journal.read_bytes()
    cut = b'{"op_code":5,"worker_id":"a","trial_id":1,"sta'
    journal.write_bytes(whole + cut)  # a worker killed while it wrote
    with contextlib.redirect_stdout(io.StringIO()) as out:
        again = studies.start(str(tmp_path), None, GRID, IDENTITY)
    assert f"{journal} ended in a line cut short ({len(cut)} bytes" in out.getvalue()
    assert f"set aside in {journal}.damaged-1" in out.getvalue()
    assert journal.read_bytes() == whole and (tmp_path / "study.journal.damaged-1").read_bytes() == cut
    assert [trial.state.name for trial in again.study().trials] == ["COMPLETE", "WAITING", "WAITING"]
    claim = claims.take(again, GRID)  # the journal takes new records after the repair
    claim.tell(Outcome(0.6, 6, 1.0))
    claim.release()
    assert [trial.state.name for trial in studies.find(str(tmp_path)).study().trials][:2] == ["COMPLETE"] * 2


def test_a_journal_of_random_bytes_is_refused_naming_it(tmp_path):
    studies.start(str(tmp_path), None, GRID, IDENTITY)
    journal = tmp_path / studies.JOURNAL
    journal.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(folders.FolderError, match=rf"{journal} is not an Optuna study journal \(line 1 is not "):
        studies.start(str(tmp_path), None, GRID, IDENTITY)


def test_a_journal_damaged_inside_is_refused_naming_the_line(tmp_path):
    studies.start(str(tmp_path), None, GRID, IDENTITY)
    journal = tmp_path / studies.JOURNAL
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join([*lines[:2], b"{garbled", *lines[2:]]))
    with pytest.raises(folders.FolderError, match=rf"{journal} is damaged at line 3 \(not a JSON record\): .*Restore"):
        studies.find(str(tmp_path))


def test_a_storage_that_is_a_folder_or_a_csv_is_refused(tmp_path):
    (tmp_path / "here").mkdir()
    with pytest.raises(folders.FolderError, match=rf"--storage={tmp_path / 'here'} is a folder: name the study's "
                                                  "journal file"):
        studies.start(str(tmp_path / "a"), str(tmp_path / "here"), GRID, IDENTITY)
    table = tmp_path / "table.csv"
    table.write_text("trial,accuracy\n0,0.5\n")
    with pytest.raises(folders.FolderError, match=rf"{table} is not an Optuna study journal \(line 1 is not a JSON "
                                                  r"record\): name a journal file the sweep wrote, or a new one"):
        studies.start(str(tmp_path / "b"), str(table), GRID, IDENTITY)
    assert table.read_text() == "trial,accuracy\n0,0.5\n"
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # refused before the folder was made


@contextlib.contextmanager
def read_only(folder):
    """`folder` made read-only for this user (root ignores the mode: the immutable attribute then, if it can)."""
    os.chmod(folder, 0o555)
    immutable = False
    try:
        if os.access(folder, os.W_OK):
            immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
            if not immutable:
                pytest.skip("this user may write a read-only folder, and chattr +i is refused")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        os.chmod(folder, 0o755)


def test_a_read_only_sweep_folder_is_one_line_naming_it(tmp_path):
    sweep_dir = tmp_path / "a"
    sweep_dir.mkdir()
    with read_only(sweep_dir), pytest.raises(disk.WriteError, match=rf"Could not write the sweep's lock: .*"
                                                                   rf"{sweep_dir / folders.LOCK}.* Choose a "):
        studies.start(str(sweep_dir), None, GRID, IDENTITY)
