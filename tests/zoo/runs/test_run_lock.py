"""One run per folder: a second run is refused at once naming the holder; a lock whose holder is gone
(killed, a zombie, a reused pid, another host's without a heartbeat) is taken over with a note; the lock
goes when its run ends, normally or by an error; the run that takes the folder removes the checkpoint a dead
run left half-written. Then the data loss it prevents, end to end."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import HANG, ROOT
from zoo.runs import run_lock
from zoo.runs.run_lock import LOCK_FILE, RunLock, RunLockError
from zoo.training.stopping import Stopped, stop_on_signals

# A second process holding a folder: zoo/runs/run_lock.py alone (standard library only, so no TensorFlow to load).
HOLDER = (
    "import importlib.util, sys, time\n"
    f"spec = importlib.util.spec_from_file_location('run_lock', {os.path.join(ROOT, 'zoo', 'runs', 'run_lock.py')!r})\n"
    "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
    "module.RunLock(sys.argv[1]).acquire()\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)


def write_lock(folder, age=0.0, **record):
    path = os.path.join(folder, LOCK_FILE)
    with open(path, "w") as f:
        f.write(json.dumps({"host": socket.gethostname(), "started": "2026-01-01 00:00:00 UTC",
                            "command": "recipes/sentiment.py --mode=train", **record}))
    os.utime(path, (time.time() - age,) * 2)
    return path


def held_by(folder):
    with open(os.path.join(folder, LOCK_FILE)) as f:
        return json.load(f)


@pytest.fixture(name="holder")
def holder_fixture(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield process
    process.kill()
    process.wait()


def test_a_second_process_is_refused_at_once_naming_the_holder(tmp_path, holder):
    began = time.time()
    with pytest.raises(RunLockError) as refused:
        RunLock(str(tmp_path)).acquire()
    assert time.time() - began < 5
    message = str(refused.value)
    assert f"process {holder.pid} on {socket.gethostname()}, since " in message and "UTC" in message
    assert str(tmp_path) in message and "Let it finish (or stop it), or use another --model_dir" in message
    assert held_by(tmp_path)["pid"] == holder.pid  # the refused run leaves the holder's lock alone


def test_a_killed_holders_lock_is_taken_over_with_a_note(tmp_path, holder):
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert held_by(tmp_path)["pid"] == os.getpid()
    assert said[0].startswith(f"Note: took over {tmp_path} from process {holder.pid} on {socket.gethostname()} "
                              "(since ") and said[0].endswith("), which no longer runs.")
    assert not os.path.exists(tmp_path / LOCK_FILE)


def test_a_checkpoint_a_dead_run_left_half_written_is_removed_once_the_folder_is_taken(tmp_path, holder):
    unfinished = tmp_path / "ckpt-40_temp"  # where TensorFlow writes a checkpoint before it is complete
    unfinished.mkdir()
    (unfinished / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"half a checkpoint")
    (tmp_path / "ckpt-30.index").write_bytes(b"a complete checkpoint")
    with pytest.raises(RunLockError):
        RunLock(str(tmp_path)).acquire()
    assert unfinished.is_dir()  # its run may still be writing it
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert not unfinished.exists() and (tmp_path / "ckpt-30.index").read_bytes() == b"a complete checkpoint"
    assert said[1] == f"Note: removed {unfinished}, a checkpoint that a run which ended did not finish writing."


def test_a_checkpoint_cut_while_its_index_was_written_is_set_aside_and_the_run_continues_from_the_one_before(
        tmp_path):
    """A SIGKILL while TensorFlow writes ckpt-N.index (last, not atomically) leaves that file short beside its
    ckpt-N_temp/ folder: once the folder is taken, those files go to unreadable_checkpoints/ (nothing deleted)
    and the newest checkpoint found is the complete one before it; a damaged checkpoint with no such folder is
    still refused by name (tests/zoo/runs/test_checkpoint_faults.py)."""
    import tensorflow as tf

    from zoo.runs import checkpoints

    variable = tf.Variable([1.0, 2.0, 3.0])
    manager = checkpoints.CheckpointManager(tf.train.Checkpoint(v=variable), str(tmp_path), max_to_keep=None)
    manager.save(1)
    variable.assign([4.0, 5.0, 6.0])
    manager.save(2)
    index = tmp_path / "ckpt-2.index"
    whole = index.read_bytes()
    index.write_bytes(whole[: len(whole) // 2])
    (tmp_path / "ckpt-2_temp").mkdir()
    said = []
    with RunLock(str(tmp_path), log=said.append):
        path, step, skipped = checkpoints.newest_readable(str(tmp_path), log=said.append)
    assert (path, step, skipped) == (str(tmp_path / "ckpt-1"), 1, [])
    aside = tmp_path / checkpoints.UNREADABLE_DIR
    assert (aside / "ckpt-2.index").read_bytes() == whole[: len(whole) // 2]
    assert sorted(os.listdir(aside)) == ["ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    assert not (tmp_path / "ckpt-2_temp").exists() and f"Moved the files of ckpt-2 to {aside}." in said
    tf.train.Checkpoint(v=variable).read(path).assert_existing_objects_matched()
    assert variable.numpy().tolist() == [1.0, 2.0, 3.0]
    # The first checkpoint cut so: the run starts from step 0 (it was refused, "No checkpoint ... can be read").
    first = tmp_path / "first"
    checkpoints.CheckpointManager(tf.train.Checkpoint(v=variable), str(first), max_to_keep=None).save(1)
    (first / "ckpt-1.index").write_bytes(b"")
    (first / "ckpt-1_temp").mkdir()
    with RunLock(str(first), log=said.append):
        assert checkpoints.newest_readable(str(first), log=said.append) == (None, 0, [])


def test_a_zombie_or_another_process_under_the_recorded_pid_does_not_hold(tmp_path):
    zombie = subprocess.Popen(["true"])  # exited, not yet waited for
    time.sleep(0.5)
    write_lock(tmp_path, pid=zombie.pid, boot=run_lock._boot_id())
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert "which no longer runs" in said[0]
    zombie.wait()
    record = run_lock.own_record()
    write_lock(tmp_path, pid=os.getpid(), boot=record["boot"], process_start=record["process_start"] - 1)
    with RunLock(str(tmp_path), log=said.append):  # this pid, but not the process that took the lock
        assert "which no longer runs" in said[1]
    write_lock(tmp_path, pid=os.getpid(), boot="another boot")  # a lock from before a reboot
    with RunLock(str(tmp_path), log=said.append):
        assert "which no longer runs" in said[2]


def test_another_hosts_lock_is_taken_over_only_once_its_heartbeat_is_old(tmp_path):
    write_lock(tmp_path, host="elsewhere", pid=1, age=run_lock.STALE_SECONDS / 2)
    with pytest.raises(RunLockError, match="process 1 on elsewhere"):
        RunLock(str(tmp_path)).acquire()
    write_lock(tmp_path, host="elsewhere", pid=1, age=run_lock.STALE_SECONDS + 5)
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert said[0].startswith(f"Note: took over {tmp_path} from process 1 on elsewhere")
        assert "whose lock has not been refreshed for" in said[0]


def test_the_holder_refreshes_its_lock_while_it_runs(tmp_path):
    with RunLock(str(tmp_path), heartbeat_seconds=0.05):
        path = tmp_path / LOCK_FILE
        os.utime(path, (1, 1))
        time.sleep(0.5)
        assert os.stat(path).st_mtime > 1  # touched again since


def test_an_unreadable_lock_waits_for_its_writer_then_is_taken_over(tmp_path):
    path = tmp_path / LOCK_FILE
    path.write_text("")
    with pytest.raises(RunLockError, match="is being taken by another run just now"):
        RunLock(str(tmp_path)).acquire()
    os.utime(path, (time.time() - run_lock.HEARTBEAT_SECONDS - 5,) * 2)
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert "left unreadable" in said[0]


def test_the_lock_goes_when_the_run_ends_normally_or_by_an_error(tmp_path):
    with RunLock(str(tmp_path)):
        assert held_by(tmp_path)["pid"] == os.getpid()
    assert not os.path.exists(tmp_path / LOCK_FILE)
    with pytest.raises(KeyError):
        with RunLock(str(tmp_path)):
            raise KeyError("a failure inside the run")
    assert not os.path.exists(tmp_path / LOCK_FILE)


@pytest.mark.parametrize("cut", ["fsync", "_remove_unfinished_checkpoints"])
def test_a_signal_while_the_lock_is_being_taken_leaves_no_lock(tmp_path, monkeypatch, cut):
    """SIGTERM raises Stopped wherever the run is (zoo.training.stopping): one that comes after the lock file is
    created and before `with` has it (its record half-written, or its heartbeat started) still removes it."""
    def stopped(*args):
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(*((run_lock.os, "fsync") if cut == "fsync" else (RunLock, cut)), stopped)
    lock = RunLock(str(tmp_path))
    with pytest.raises(Stopped):
        with lock:
            pytest.fail("the block ran")
    assert not os.path.exists(tmp_path / LOCK_FILE)
    assert lock.thread is None or not lock.thread.is_alive()


@pytest.mark.parametrize("where", ["open", "fsync", "remove"])
def test_a_sigterm_while_the_lock_is_made_or_removed_comes_once_the_file_is_whole(tmp_path, monkeypatch, where):
    """The signal itself, sent just after the lock file is created (os.open), while its record is written (fsync)
    or just before it is removed (release): it stops the run, and the lock is gone all the same."""
    real, sent = getattr(os, where), []

    def then_sigterm(*args, **kwargs):  # os.<where> is everyone's: the signal is sent once, at the lock's own call
        due = not sent and (where == "fsync" or args[0] == os.path.join(tmp_path, LOCK_FILE))
        if due and where == "remove":
            sent.append(os.kill(os.getpid(), signal.SIGTERM))
        result = real(*args, **kwargs)
        if due and where != "remove":
            sent.append(os.kill(os.getpid(), signal.SIGTERM))
        return result

    lock = RunLock(str(tmp_path))
    if where != "remove":
        monkeypatch.setattr(run_lock.os, where, then_sigterm)
    with stop_on_signals(), pytest.raises(Stopped):
        with lock:
            if where != "remove":
                pytest.fail("the block ran")
            monkeypatch.setattr(run_lock.os, where, then_sigterm)
    assert sent and not os.path.exists(tmp_path / LOCK_FILE)
    assert not lock.thread.is_alive()


def test_a_run_whose_lock_was_taken_over_leaves_the_new_holders_lock(tmp_path):
    lock = RunLock(str(tmp_path))
    lock.acquire()
    write_lock(tmp_path, host="elsewhere", pid=7)
    lock.release()
    assert held_by(tmp_path)["pid"] == 7


def test_a_folder_where_no_lock_can_be_made_is_named(tmp_path):
    with pytest.raises(RunLockError, match="Cannot create .*run.lock"):
        RunLock(str(tmp_path / "missing")).acquire()



@pytest.mark.parametrize("pid", [4294967296, 2**63])
def test_a_pid_no_process_can_have_does_not_hold(tmp_path, pid):
    assert not run_lock.pid_runs(pid)
    write_lock(tmp_path, pid=pid, boot=run_lock._boot_id())
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert held_by(tmp_path)["pid"] == os.getpid()
    assert said == [f"Note: took over {tmp_path} from process {pid} on {socket.gethostname()} (since 2026-01-01 "
                    "00:00:00 UTC), which no longer runs."]


def test_a_lock_that_is_a_folder_is_refused_naming_it(tmp_path):
    (tmp_path / LOCK_FILE).mkdir()
    with pytest.raises(RunLockError) as refused:
        RunLock(str(tmp_path)).acquire()
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / LOCK_FILE} is a folder, not a lock file") and "remove it" in message
    assert (tmp_path / LOCK_FILE).is_dir()  # not ours to delete


def test_a_holder_is_named_by_what_its_record_holds(tmp_path):
    path = tmp_path / LOCK_FILE
    path.write_text(json.dumps({"host": "elsewhere", "pid": 15805}))
    with pytest.raises(RunLockError) as refused:
        RunLock(str(tmp_path)).acquire()
    assert "in use by another run: process 15805 on elsewhere. Let it finish" in str(refused.value)
    path.write_text(json.dumps({"host": "elsewhere", "pid": 15805, "command": "recipes.lm --mode=train"}))
    with pytest.raises(RunLockError, match=r"process 15805 on elsewhere \(recipes.lm --mode=train\)\. Let"):
        RunLock(str(tmp_path)).acquire()
    os.utime(path, (time.time() - run_lock.STALE_SECONDS - 5,) * 2)
    said = []
    with RunLock(str(tmp_path), log=said.append):
        assert said[0].startswith(f"Note: took over {tmp_path} from process 15805 on elsewhere, whose lock")


# ---------------------------------------------------------------- end to end: the data loss of two runs

QUICK = ["--dataset=sst2", "--preset=tiny", "--max_examples=200", "--vocab_size=500", "--batch_size=8",
         "--train_steps=30", "--checkpoint_every=10", "--mode=train"]


def test_a_second_training_on_a_held_folder_is_refused_and_the_first_run_keeps_its_files(tmp_path, probe_recipe):
    model_dir = str(tmp_path / "x")
    first = subprocess.Popen([sys.executable, "-m", "recipes.sentiment", *QUICK, f"--model_dir={model_dir}"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + HANG
        while not os.path.exists(os.path.join(model_dir, "config.json")):
            assert first.poll() is None and time.time() < deadline, "the first run wrote no config.json in time"
            time.sleep(0.1)
        first.send_signal(signal.SIGSTOP)  # the first run stays alive mid-run for as long as the second takes
        try:
            # Refused before any work: through the recipe's entry point in the suite's warm process.
            second = probe_recipe("sentiment", *QUICK, "--learning_rate=0.01", f"--model_dir={model_dir}")
        finally:
            first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=HANG)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr[-3000:]
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"process {first.pid} on {socket.gethostname()}" in errors[0]
    # At once: before any data is read or a step is trained (no step line), whatever the machine's load.
    assert not any(line.startswith("step ") for line in second.stdout.splitlines()), second.stdout[-3000:]
    assert first.returncode == 0, err[-3000:]
    with open(os.path.join(model_dir, "config.json")) as f:
        assert json.load(f)["train"]["learning_rate"] == 5e-4  # the first run's, not 0.01
    assert {f"ckpt-{step}.index" for step in (10, 20, 30)} <= set(os.listdir(model_dir))
    assert "step 30/30" in out and not os.path.exists(os.path.join(model_dir, LOCK_FILE))


def test_a_heartbeat_that_cannot_start_is_refused_with_no_lock_left(tmp_path, monkeypatch):
    def cannot_start(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(run_lock.threading.Thread, "start", cannot_start)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        RunLock(str(tmp_path)).acquire()
    assert not os.path.exists(tmp_path / LOCK_FILE)
