"""The ops manifest lists exactly the ops a TensorFlow-only process lacks (checked in such a process, once
per op in a process's life); the staging folder of an export that was killed is removed by the next export,
and no other."""

import os
import socket
import subprocess
import sys

from zoo.runs import export


def test_non_core_ops_are_found_in_a_tensorflow_only_process_registry():
    found = export.non_core_ops({"MatMul", "XlaDynamicUpdateSlice", "SentencepieceOp", "SentencepieceTokenizeOp",
                                 "NoSuchOpAnywhere"})
    # XlaDynamicUpdateSlice is registered by TensorFlow itself, though tf.raw_ops has no attribute for it.
    assert found == {"SentencepieceOp": "tensorflow_text", "SentencepieceTokenizeOp": "tensorflow_text",
                     "NoSuchOpAnywhere": "unknown"}


def test_ops_already_checked_are_not_asked_about_again(monkeypatch):
    first = export.non_core_ops({"MatMul", "SentencepieceOp"})

    def refuse(*args, **kwargs):
        raise AssertionError("a fresh process was asked again")

    monkeypatch.setattr(subprocess, "run", refuse)
    assert export.non_core_ops({"SentencepieceOp", "MatMul"}) == first == {"SentencepieceOp": "tensorflow_text"}


def test_the_staging_folder_of_a_killed_export_is_removed_and_a_running_ones_kept(tmp_path, capsys):
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    host = socket.gethostname()
    try:
        kept = [f".staging-{host}-{running.pid}", f".staging-elsewhere-{ended.pid}", "1"]  # another host's: unknown
        killed = [f".staging-{host}-{ended.pid}", f".staging-{ended.pid}"]  # the second as older zoos named it
        for name in kept + killed:
            os.makedirs(tmp_path / name / "variables")
        export.remove_abandoned(str(tmp_path))
        assert sorted(os.listdir(tmp_path)) == sorted(kept)
        assert f"Note: removed {tmp_path / killed[0]}, the unfinished export of a process that no longer runs." in (
            capsys.readouterr().out)
    finally:
        running.kill()
        running.wait()
