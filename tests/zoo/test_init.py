"""`import zoo` changes nothing in the process (zoo/__init__.py): KERAS_BACKEND stays as the caller set it and
file descriptor 2 is never redirected; under another backend than TensorFlow the import is refused in one line
that says what to set. Each case runs in a fresh process, as Keras fixes its backend once per process."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Watches every redirection of a file descriptor and the fault handler's start, then imports the zoo.
PROGRAM = """
import faulthandler, json, os
redirected, handler = [], []
dup2, enable = os.dup2, faulthandler.enable
os.dup2 = lambda *args, **kwargs: (redirected.append(args[1]), dup2(*args, **kwargs))[1]
faulthandler.enable = lambda *args, **kwargs: (handler.append(True), enable(*args, **kwargs))[1]
try:
    import zoo
    error = None
except ImportError as refused:
    error = str(refused)
import keras
print(json.dumps({"error": error, "redirected": redirected, "fault_handler": handler, "backend": keras.backend.backend(),
                  "KERAS_BACKEND": os.environ.get("KERAS_BACKEND")}))
"""


def import_zoo(home, backend):
    """What PROGRAM saw, run with KERAS_BACKEND=`backend` (None: unset) and a fresh Keras home (no keras.json)."""
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND" and not k.startswith("PYTEST_")}
    env.update(KERAS_HOME=str(home), JAX_PLATFORMS="cpu")
    if backend:
        env["KERAS_BACKEND"] = backend
    done = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_zoo_runs_on_kerass_default_and_sets_nothing(tmp_path):
    seen = import_zoo(tmp_path, backend=None)
    assert seen == {"error": None, "redirected": [], "fault_handler": [], "backend": "tensorflow",
                    "KERAS_BACKEND": None}


def test_import_zoo_under_another_backend_is_refused_and_keeps_it(tmp_path):
    seen = import_zoo(tmp_path, backend="jax")
    assert (seen["backend"], seen["KERAS_BACKEND"], seen["redirected"]) == ("jax", "jax", [])
    assert "\n" not in seen["error"] and seen["error"].startswith("The zoo needs Keras's TensorFlow backend"), seen
    assert "KERAS_BACKEND=jax" in seen["error"] and "set KERAS_BACKEND=tensorflow" in seen["error"], seen
