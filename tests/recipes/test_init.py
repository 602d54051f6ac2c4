"""A recipe's program sets up its process (recipes/__init__.py): Keras's TensorFlow backend whatever
KERAS_BACKEND says (the library leaves it to its caller: tests/zoo/test_init.py). Its quiet start, TensorFlow's C++
lines kept off the terminal unless asked for: tests/zoo/runs/test_argument_faults.py."""

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_the_recipes_choose_tensorflow_whatever_keras_backend_says(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, "KERAS_BACKEND": "jax",
           "KERAS_HOME": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    program = "import recipes, keras, zoo; print(keras.backend.backend())"
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "tensorflow"
