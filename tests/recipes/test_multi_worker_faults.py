"""Multi-worker faults: a worker killed mid-run stops the others within seconds with one line
naming it, TensorFlow's own log lines kept in a file out of the way; both started again resume from
the last checkpoint and finish at the right step, only the chief's files left in the run folder."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import tensorflow as tf

from tests.conftest import HANG, ROOT


def native_log_of(stderr):
    """The TensorFlow log file a multi-worker run named at its start (recipes.native_log), or None."""
    found = re.search(r"log lines of this worker go to (.+)$", stderr, re.MULTILINE)
    return found and found.group(1)


# A line of TensorFlow's C++ log (glog's prefix: severity, date, time), or absl's line before its log starts.
NATIVE_LOG_LINE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl)")

QUICK = ["--dataset=sst2", "--preset=tiny", "--max_examples=2000", "--vocab_size=500", "--batch_size=16"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_workers(model_dir, steps):
    ports = [free_port(), free_port()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    workers = []
    for index in range(2):
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})}
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "recipes.sentiment", *QUICK, "--mode=train", f"--train_steps={steps}",
             "--checkpoint_every=10", "--log_every=5", "--strategy=multi_worker_mirrored", f"--model_dir={model_dir}"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    return workers


def finish(workers, timeout):
    try:
        return [w.communicate(timeout=timeout) for w in workers]
    finally:
        for w in workers:  # a hung peer must not hang the suite
            if w.poll() is None:
                w.kill()


def test_a_killed_worker_stops_the_chief_with_one_line_and_a_restart_resumes(tmp_path):
    model_dir = str(tmp_path / "run")
    chief, other = workers = start_workers(model_dir, steps=100_000)
    deadline = time.time() + HANG
    while not os.path.exists(os.path.join(model_dir, "ckpt-10.index")):
        assert chief.poll() is None and other.poll() is None and time.time() < deadline, "no checkpoint in time"
        time.sleep(0.2)
    other.send_signal(signal.SIGKILL)
    (out, err), (_, killed_err) = finish(workers, timeout=HANG)
    killed_log = native_log_of(killed_err)
    if killed_log and os.path.exists(killed_log):  # SIGKILL left it: nobody could remove it
        os.remove(killed_log)
    assert chief.returncode == 75, err[-3000:]  # stopped, long before its 100,000 steps
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert "task:1" in lines[0] and "Start all the workers again" in lines[0]
    # After the run's start, TensorFlow's lines went to the file the error line names, not to the terminal.
    after_start = err.split("TensorFlow's own log lines of this worker go to ", 1)[1].splitlines()[1:]
    assert not [line for line in after_start if NATIVE_LOG_LINE.match(line)], err[-3000:]
    log_path = re.search(r"\(TensorFlow's log of this worker: (.+)\)$", lines[0]).group(1)
    with open(log_path) as f:
        assert any(NATIVE_LOG_LINE.match(line) for line in f), "the kept log holds no TensorFlow line"
    os.remove(log_path)

    last = int(os.path.basename(tf.train.latest_checkpoint(model_dir)).split("-")[1])
    assert last >= 10
    restarted = start_workers(model_dir, steps=last + 10)
    outputs = finish(restarted, timeout=HANG)
    for worker, (out, err) in zip(restarted, outputs):
        assert worker.returncode == 0, err[-3000:]
        assert f"Resuming from step {last}" in out
        log_path = native_log_of(err)
        assert log_path and not os.path.exists(log_path), "a run that ended well leaves its TensorFlow log behind"
    with open(os.path.join(model_dir, "metrics.json")) as f:
        assert json.load(f)["train"]["step"] == last + 10
    # Only the chief writes in the run folder: the other worker's copy of the checkpoints (.worker_1), left by
    # the kill, went with the run that ended well.
    assert {name for name in os.listdir(model_dir) if not re.fullmatch(r"ckpt-\d+\.(index|data-00000-of-00001)", name)
            } == {"checkpoint", "config.json", "metrics.json", "tokenizer.model", "train"}


def test_the_lost_worker_line_names_the_peer_not_this_task():
    from recipes.driver import lost_worker_message

    error = tf.errors.UnavailableError(
        None, None, "Collective ops is aborted by: Task /job:worker/replica:0/task:1 stopped sending heartbeats "
        "[[{{node CollectiveReduceV2}}]] on /job:worker/replica:0/task:0/device:CPU:0")
    line = lost_worker_message(error, own_task="/job:worker/task:0")
    assert "lost /job:worker/task:1 (" in line and "task:0" not in line.split("(")[0]
    assert "Start all the workers again" in line
    assert "lost /job:worker/task:2" in lost_worker_message(ValueError("/job:worker/task:2 is gone"), "/job:worker/task:0")
