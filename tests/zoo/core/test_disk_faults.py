"""Fault injection, the run's files on disk. A write the file system refuses is one WriteError (a
ValueError: a recipe's one `error:` line) naming the path and the cause, and every file written
before is byte for byte as it was: a full disk (here a file size limit, as `ulimit -f` sets, in a
process of its own: never a real disk filled), a path through a file, too long a name. A damaged
tokenizer.model or vocabulary.json is named, with what to do."""

import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import HANG, ROOT
from zoo.runs import checkpoints, export
from zoo.core import disk
from zoo.data import tokenizer
from zoo.language_model.vocabulary import Vocabulary

LIMIT = 64 * 1024  # bytes; each write below grows a file past it
SIZE = 100_000  # float32 values (400 KB) in the checkpoint and the export

# Each write of the zoo, in a process under the file size limit. Python ignores SIGXFSZ (said again
# here, since the default action kills the process): a write past the limit fails with EFBIG.
WRITER = f"""
import json, os, resource, signal, sys
import tensorflow as tf
from zoo.runs import checkpoints, export
from zoo.data import tokenizer
from zoo.language_model.vocabulary import Vocabulary

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
folder = sys.argv[1]
module = tf.Module()
module.variable = tf.Variable(tf.ones([{SIZE}]))
manager = checkpoints.CheckpointManager(tf.train.Checkpoint(value=module.variable), os.path.join(folder, "run"), 3)
resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
writes = {{
    "tokenizer": lambda: tokenizer.save_tokenizer(bytes(2 * {LIMIT}), folder),
    "vocabulary": lambda: Vocabulary(["<pad>", "<unk>"] + [f"w{{i}}" for i in range(30_000)], "word").save(folder),
    "checkpoint": lambda: manager.save(30),
    "export": lambda: export.export(module, {{}}, os.path.join(folder, "export"), {{}}),
}}
errors = {{}}
for name, write in writes.items():
    try:
        write()
    except ValueError as error:
        errors[name] = [type(error).__name__, str(error)]
print(json.dumps(errors))
"""


def files_under(folder):
    """{relative path: bytes} of every file under `folder`."""
    found = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(parent, name), "rb") as f:
                found[os.path.relpath(os.path.join(parent, name), folder)] = f.read()
    return found


def dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture(name="full_disk", scope="module")
def full_disk_fixture(tmp_path_factory):
    """(folder, files before, errors): a run folder with a tokenizer, a vocabulary, checkpoints 10
    and 20, an export version and the staging folder of a killed export, then every write again
    past the limit."""
    folder = str(tmp_path_factory.mktemp("full"))
    tokenizer.save_tokenizer(b"the tokenizer trained before", folder)
    Vocabulary(["<pad>", "<unk>", "a"], "word").save(folder)
    variable = tf.Variable(tf.zeros([SIZE]))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(value=variable), os.path.join(folder, "run"), 3)
    for step in (10, 20):
        variable.assign(tf.fill([SIZE], float(step)))
        manager.save(checkpoint_number=step)
    for version in ("export/1", f"export/.staging-{dead_pid()}"):
        os.makedirs(os.path.join(folder, version, "variables"))
        with open(os.path.join(folder, version, "saved_model.pb"), "wb") as f:
            f.write(b"a version exported before")
    before = files_under(folder)
    written = subprocess.run([sys.executable, "-c", WRITER, folder], cwd=ROOT, capture_output=True, text=True,
                             timeout=HANG)
    assert written.returncode == 0, written.stderr[-3000:]
    return folder, before, json.loads(written.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("write, path", [
    ("tokenizer", "tokenizer.model"), ("vocabulary", "vocabulary.json"), ("checkpoint", "run/ckpt-30"),
    ("export", "export"),
])
def test_a_full_disk_is_one_line_naming_the_path_and_the_cause(full_disk, write, path):
    folder, _, errors = full_disk
    kind, message = errors[write]
    assert kind == "WriteError" and "\n" not in message
    assert f"Could not write the {write}" in message and os.path.join(folder, path) in message
    assert "(File too large). Nothing was lost: " in message and "ulimit -f" in message


def test_a_full_disk_loses_nothing_and_training_resumes_from_the_newest_checkpoint(full_disk):
    folder, before, errors = full_disk
    assert "the newest complete checkpoint, ckpt-20, is as it was" in errors["checkpoint"][1]
    # Every file as it was, nothing half-written left (no .tmp, ckpt-30*, staging folder), and the
    # killed export's staging folder removed.
    assert files_under(folder) == {path: data for path, data in before.items() if ".staging-" not in path}
    assert sorted(os.listdir(os.path.join(folder, "run"))) == [
        "checkpoint", "ckpt-10.data-00000-of-00001", "ckpt-10.index", "ckpt-20.data-00000-of-00001", "ckpt-20.index"]
    run = os.path.join(folder, "run")
    path, step, _ = checkpoints.newest_readable(run)
    assert step == 20 and tf.train.load_checkpoint(path).get_tensor("value/.ATTRIBUTES/VARIABLE_VALUE")[0] == 20.0
    variable = tf.Variable(tf.zeros([SIZE]))
    checkpoints.CheckpointManager(tf.train.Checkpoint(value=variable), run, 3).save(30)
    assert checkpoints.checkpoint_steps(run) == [30, 20, 10]


@pytest.fixture(name="odd_path", params=["through a file", "a 300-character name"])
def odd_path_fixture(request, tmp_path):
    """(folder, what the message names, cause): a folder that cannot be made."""
    (tmp_path / "file").write_text("a file")
    if request.param == "through a file":
        return str(tmp_path / "file" / "run"), f"{tmp_path / 'file'} is a file, not a folder", "(Not a directory)"
    folder = str(tmp_path / ("x" * 300))
    return folder, f"a name in {folder}", "(File name too long)"


@pytest.mark.parametrize("write", [
    lambda folder: tokenizer.save_tokenizer(b"a tokenizer", folder),
    lambda folder: tokenizer.save_wordpiece(["[PAD]", "[UNK]"], True, None, folder),
    lambda folder: Vocabulary(["<pad>", "<unk>"], "word").save(folder),
    lambda folder: export.export(tf.Module(), {}, folder, {}),
])
def test_a_folder_through_a_file_or_with_too_long_a_name_is_one_line(tmp_path, odd_path, write):
    folder, named, reason = odd_path
    with pytest.raises(disk.WriteError) as refused:
        write(folder)
    message = str(refused.value)
    assert named in message and reason in message and "Nothing was lost" in message and "\n" not in message
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("code", sorted(disk.CAUSES))
def test_every_cause_is_named_from_an_os_error_and_from_tensorflows(code):
    text = os.strerror(code)
    for error in (OSError(code, text, "/runs/x/ckpt-40.index"), tf.errors.UnknownError(None, None, f"/runs/x; {text}")):
        refused = disk.write_error(error, "the checkpoint of step 40", "/runs/x/ckpt-40", "ckpt-30 is as it was")
        message = str(refused)
        assert isinstance(refused, ValueError) and "\n" not in message
        assert message.startswith("Could not write the checkpoint of step 40: ") and f"({text})" in message
        assert "Nothing was lost: ckpt-30 is as it was." in message and ("/runs/x" in message or code == errno.ENOTDIR)
    assert disk.write_error(OSError(errno.EIO, "Input/output error"), "x", "/x", "") is None
    assert disk.write_error(tf.errors.InvalidArgumentError(None, None, "shapes differ"), "x", "/x", "") is None


def test_a_damaged_tokenizer_model_is_named_with_what_to_do(tmp_path):
    (tmp_path / tokenizer.TOKENIZER_FILE).write_bytes(np.random.default_rng(0).bytes(3000))
    with pytest.raises(disk.DamagedFileError) as damaged:
        tokenizer.load_tokenizer(str(tmp_path))
    message = str(damaged.value)
    assert message.startswith(f"{tmp_path / tokenizer.TOKENIZER_FILE} is damaged (it is not a SentencePiece model)")
    assert "Restore it from a backup, or train again in a new --model_dir." in message and "\n" not in message


@pytest.mark.parametrize("content", ['{"level": "word", "tok', "[1, 2]", '{"level": "word"}',
                                     '{"level": "word", "tokens": ["a", "b"]}'])
def test_a_damaged_vocabulary_is_named_with_what_to_do(tmp_path, content):
    (tmp_path / "vocabulary.json").write_text(content)
    with pytest.raises(disk.DamagedFileError) as damaged:
        Vocabulary.load(str(tmp_path))
    message = str(damaged.value)
    assert message.startswith(f"{tmp_path / 'vocabulary.json'} is damaged (")
    assert "Restore it from a backup, or train again in a new --model_dir." in message and "\n" not in message
