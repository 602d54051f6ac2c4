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


def test_an_unchanged_checkpoint_is_found_in_the_newest_version_and_a_changed_one_is_not(tmp_path):
    """Issue 58: exporting the same checkpoint twice wrote a duplicate version 2."""
    import json

    import tensorflow as tf

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"recipe": "sentiment"}')
    weights = tf.Variable([1.0, 2.0])
    tf.train.Checkpoint(w=weights).write(str(run / "ckpt-5"))
    digest = export.source_digest(str(run), metadata={"threshold": 0.5})
    assert digest and digest == export.source_digest(str(run), metadata={"threshold": 0.5})
    assert digest != export.source_digest(str(run), metadata={"threshold": 0.6})  # other serving settings
    version = tmp_path / "export" / "1"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    (version / export.MANIFEST).write_text(json.dumps({"source_digest": digest}))
    assert export.unchanged_version(str(tmp_path / "export"), digest) == str(version)
    weights.assign([1.0, 3.0])
    tf.train.Checkpoint(w=weights).write(str(run / "ckpt-6"))  # trained on: the newest checkpoint changed
    changed = export.source_digest(str(run), metadata={"threshold": 0.5})
    assert changed != digest and export.unchanged_version(str(tmp_path / "export"), changed) is None
    assert export.source_digest(str(tmp_path / "empty")) is None  # no checkpoint: nothing to compare
