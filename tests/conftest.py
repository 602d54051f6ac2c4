"""Shared fixtures: the data folder and a runner for recipe subprocesses."""

import json
import os
import select
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("ZOO_DATA_DIR", os.path.join(os.path.dirname(ROOT), "shared", "data"))
# The suite runs on TensorFlow, Keras's default, whatever a keras.json says; tests/layers/test_backends.py runs
# the layer tests again in a process of their own with KERAS_BACKEND=jax, which this leaves as it is.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# As the recipes run (recipes.common): TensorFlow's BFC allocator for CPU tensors, set before any test allocates.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")
# One thread per op in this process and the recipes it starts: pytest runs one worker per core, and the tiny
# models' ops are too small to gain from a second thread that the other worker is using.
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
# The token cache (zoo.data.cache) of this test session, not the user's ~/.cache.
os.environ.setdefault("ZOO_CACHE_DIR", tempfile.mkdtemp(prefix="zoo-test-cache-"))


# The files that take longest, longest first (each a minute or more of a core; docs/testing.md). pytest-xdist hands a
# worker the next file, in the order collected (pyproject's --no-loadscope-reorder), as it nears the end of its
# last: with these first, the two workers end together instead of one running a long file alone at the end.
LONGEST_FIRST = (
    "tests/recipes/test_lm.py",
    "tests/recipes/test_translate.py",
    "tests/zoo/runs/test_serving_faults.py",
    "tests/zoo/classifier/test_text_pairs.py",
    "tests/benchmarks/test_gpu.py",
    "tests/recipes/test_sentiment.py",
    "tests/zoo/translation/test_model.py",
    "tests/recipes/test_config.py",
    "tests/zoo/translation/test_word_vectors.py",
    "tests/recipes/test_sweep.py",
    "tests/zoo/classifier/test_regression.py",
    "tests/zoo/classifier/test_multi_label.py",
    "tests/recipes/test_multi_worker_faults.py",
    "tests/recipes/test_exact_resumption.py",
    "tests/recipes/test_pretrain.py",
    "tests/zoo/language_model/test_word_vectors.py",
    "tests/zoo/pretraining/test_word_vectors.py",
    "tests/recipes/test_shortcuts.py",
    "tests/recipes/test_sentiment_published.py",
    "tests/recipes/test_pretrain_published.py",
    "tests/zoo/runs/test_run_lock.py",
    "tests/zoo/sentiment/test_word_vectors.py",
    "tests/recipes/test_config_values.py",
    "tests/zoo/runs/test_checkpoint_faults.py",
)


def pytest_collection_modifyitems(items):
    """LONGEST_FIRST's files first, in its order; the others after them, as collected."""
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


# Seconds a test waits for a process: a guard against one that hangs, not a speed limit, so generous that a
# machine busy with other work does not trip it.
HANG = 3600


def run_recipe(module, *args, timeout=HANG, env=None, check=True, input=None):
    """Runs `python -m recipes.<module> args...` from the repository root (`input`: its stdin)."""
    command = [sys.executable, "-m", f"recipes.{module}", *args]
    result = subprocess.run(
        command, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
        input=input,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr[-5000:]}")
    return result


def fresh_process_json(program, timeout=HANG):
    """Runs `program` in a new Python process (from /, so the repository is not importable) and
    returns the JSON of its last line of output."""
    fresh = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=timeout, cwd="/")
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    return json.loads(fresh.stdout.strip().splitlines()[-1])


def as_flags(keywords):
    """zoo.train's keywords as a recipe's flags: {"dataset": "sst2", "jit_compile": True} -> ["--dataset=sst2",
    "--jit_compile"] (False: --noNAME; a list: its items joined by commas)."""
    def flag(name, value):
        if isinstance(value, bool):
            return f"--{'' if value else 'no'}{name}"
        return f"--{name}={','.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"

    return [flag(name, value) for name, value in keywords.items()]


# Run in a fresh process from the repository root: zoo.train(**run) for each run of argv[1] (JSON), in order;
# prints each run's standard output.
TRAIN_RUNS = """
import contextlib, io, json, sys
import zoo
outputs = []
for run in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        zoo.train(**run)
    outputs.append(out.getvalue())
print(json.dumps(outputs))
"""


def write_vectors(path, table):
    """A GloVe-format text file of `table` ({word: vector}) at `path`, for the word-vector tests; its path."""
    with open(path, "w", encoding="utf-8") as f:
        for word, vector in table.items():
            f.write(word + " " + " ".join(repr(float(x)) for x in vector) + "\n")
    return str(path)


def train_in_fresh_process(*runs):
    """Trains each of `runs` (zoo.train's arguments: recipe, model_dir, keywords) in order, all in one new
    Python process: for what TensorFlow takes only before it starts, the CPU split of setup.cpu_replicas above
    all. Returns each run's standard output."""
    result = subprocess.run([sys.executable, "-c", TRAIN_RUNS, json.dumps(runs)], cwd=ROOT, capture_output=True,
                            text=True, timeout=HANG)
    if result.returncode != 0:
        raise AssertionError(f"zoo.train of {runs} exited {result.returncode}:\n{result.stderr[-5000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def data_path_peak(program, cache_dir, *args):
    """The last line's JSON of `program` (which prints its peak memory) run with `args` in a new process, its
    token cache in `cache_dir`, TensorFlow's BFC allocator on as the recipes run (recipes.common: it reuses its
    pool chunk after chunk)."""
    env = {"ZOO_CACHE_DIR": str(cache_dir), "TF_CPP_MIN_LOG_LEVEL": "3", "TF_CPU_ALLOCATOR_USE_BFC": "1",
           "PYTHONPATH": ROOT, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", program, *map(str, args)], env=env, capture_output=True, text=True,
                          check=True, timeout=HANG)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(name="run_recipe")
def run_recipe_fixture():
    return run_recipe


class RecipeProbes:
    """Commands that do not train (refused before any work; --mode=config, eval, export, explain, generate,
    translate), run in one warm process per recipe (tests/recipe_probes.py) instead of a fresh one each: the same
    entry point, flags parsing, `error:` lines and exit status, without starting TensorFlow again. Returns what
    `run_recipe(check=False)` does (`input`: the command's standard input)."""

    def __init__(self):
        self.processes = {}

    def __call__(self, module, *args, env=None, timeout=HANG, input=None):
        process = self.processes.get(module)
        if process is None or process.poll() is not None:
            process = subprocess.Popen([sys.executable, "-m", "tests.recipe_probes", module], cwd=ROOT,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True)
            self.processes[module] = process
        process.stdin.write(json.dumps({"argv": list(args), "env": env or {}, "input": input}) + "\n")
        process.stdin.flush()
        command = [sys.executable, "-m", f"recipes.{module}", *args]
        if not select.select([process.stdout], [], [], timeout)[0]:
            process.kill()
            raise subprocess.TimeoutExpired(command, timeout)
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the probe process of recipes.{module} ended on {command}")
        answer = json.loads(line)
        return subprocess.CompletedProcess(command, answer["returncode"], answer["stdout"], answer["stderr"])

    def close(self):
        for process in self.processes.values():  # nothing to flush: they only refused commands
            process.kill()
            process.wait()


@pytest.fixture(scope="session", name="probe_recipe")
def probe_recipe_fixture():
    """One warm process per recipe for the whole session (of each pytest worker), whatever module asks."""
    probes = RecipeProbes()
    yield probes
    probes.close()


def train_resumed_and_reproduced(tmp_path, dataset, settings):
    """Trains a sentiment run on `dataset` to step 2, resumes it to `settings`' 4 steps (tmp_path/resumed), trains
    it again in one go from its config.json (tmp_path/again) and checks every saved tensor is the same: resumption
    and reproduction both hold. Returns the two run folders."""
    import numpy as np
    import tensorflow as tf

    import zoo

    resumed_dir, again_dir = tmp_path / "resumed", tmp_path / "again"
    zoo.train("sentiment", model_dir=resumed_dir, dataset=dataset, **{**settings, "train_steps": 2})
    zoo.train("sentiment", model_dir=resumed_dir, dataset=dataset, **settings)  # from step 2 to 4
    zoo.train("sentiment", model_dir=again_dir, config=str(resumed_dir / "config.json"), mode="train")
    resumed = tf.train.load_checkpoint(str(resumed_dir / "ckpt-4"))
    again = tf.train.load_checkpoint(str(again_dir / "ckpt-4"))
    names = [n for n in resumed.get_variable_to_shape_map() if n != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert len(names) > 20
    for name in names:
        np.testing.assert_array_equal(resumed.get_tensor(name), again.get_tensor(name), err_msg=name)
    return resumed_dir, again_dir
