"""Shared fixtures: the data folder and a runner for recipe subprocesses."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("ZOO_DATA_DIR", os.path.join(os.path.dirname(ROOT), "shared", "data"))
# The suite runs on TensorFlow, Keras's default, whatever a keras.json says; tests/layers/test_backends.py runs
# the layer tests again in a process of their own with KERAS_BACKEND=jax, which this leaves as it is.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# As the recipes run (recipes.common): TensorFlow's BFC allocator for CPU tensors, set before any test allocates.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")


def run_recipe(module, *args, timeout=300, env=None, check=True, input=None):
    """Runs `python -m recipes.<module> args...` from the repository root (`input`: its stdin)."""
    command = [sys.executable, "-m", f"recipes.{module}", *args]
    result = subprocess.run(
        command, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
        input=input,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr[-5000:]}")
    return result


def fresh_process_json(program, timeout=300):
    """Runs `program` in a new Python process (from /, so the repository is not importable) and
    returns the JSON of its last line of output."""
    fresh = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=timeout, cwd="/")
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    return json.loads(fresh.stdout.strip().splitlines()[-1])


@pytest.fixture(name="run_recipe")
def run_recipe_fixture():
    return run_recipe
