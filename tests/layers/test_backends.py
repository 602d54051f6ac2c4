"""The layers across the backends this project supports: `.keras` files cross between TensorFlow (this
process) and JAX (a subprocess, since Keras fixes its backend per process); `import layers` leaves the
environment and Keras's backend alone, and the zoo asks for TensorFlow.

The layer tests themselves run on JAX in a pytest run of their own (`.ci/run`:
`KERAS_BACKEND=jax python -m pytest -q tests/layers`), which skips the rest of this file.
"""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _cross_backend  # noqa: E402
from _backend import BACKEND  # noqa: E402

pytestmark = pytest.mark.slow  # outside the default run: python -m pytest -m slow

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

from_tensorflow = pytest.mark.skipif(BACKEND != "tensorflow",
                                     reason="started from the TensorFlow run, which starts JAX")


def run(arguments, home, backend=None):
    """Runs `python arguments...` from the repository root with KERAS_BACKEND=`backend` (None: unset) and
    the Keras home `home` (a fresh folder: no keras.json choosing a backend); returns the finished process.
    No time limit: how long a subprocess takes on a busy machine says nothing about the layers."""
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND" and not k.startswith("PYTEST_")}
    env.update(KERAS_HOME=str(home), JAX_PLATFORMS="cpu")
    if backend:
        env["KERAS_BACKEND"] = backend
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_layer_tests_run_on_the_backend_asked_for():
    """`KERAS_BACKEND=jax pytest tests/layers` tests the layers on JAX: nothing on the way (a conftest, a
    keras.json) chooses another backend."""
    assert BACKEND == os.environ["KERAS_BACKEND"]


@from_tensorflow
def test_keras_files_saved_on_tensorflow_load_on_jax_and_back(tmp_path):
    _cross_backend.save(str(tmp_path))
    script = os.path.join(HERE, "_cross_backend.py")
    on_jax = run([script, "check", str(tmp_path), "tensorflow"], tmp_path, backend="jax")
    assert on_jax.returncode == 0, on_jax.stderr[-3000:]
    saved = run([script, "save", str(tmp_path)], tmp_path, backend="jax")
    assert saved.returncode == 0, saved.stderr[-3000:]
    differences = {"on jax": json.loads(on_jax.stdout.strip().splitlines()[-1]),
                   "on tensorflow": _cross_backend.check(str(tmp_path), "jax")}
    for side, by_case in differences.items():
        assert sorted(by_case) == _cross_backend.NAMES, side
        assert all(difference < 1e-5 for difference in by_case.values()), (side, by_case)


IMPORTS = """
import json, os, sys
import keras, keras_hub
before = dict(os.environ)
import layers
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
try:
    import zoo
    zoo_error = None
except ImportError as error:
    zoo_error = str(error)
print(json.dumps({"changed": changed, "backend": keras.backend.backend(), "zoo_error": zoo_error}))
"""


@from_tensorflow
@pytest.mark.parametrize("backend", [None, "jax"])
def test_import_layers_sets_nothing_and_the_zoo_needs_tensorflow(backend, tmp_path):
    result = run(["-c", IMPORTS], tmp_path, backend=backend)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["changed"] == []
    assert found["backend"] == (backend or "tensorflow")  # Keras's default, or what the caller chose
    if backend is None:
        assert found["zoo_error"] is None
    else:
        assert "\n" not in found["zoo_error"] and "needs Keras's TensorFlow backend" in found["zoo_error"]

