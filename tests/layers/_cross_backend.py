"""Every layer-contract case saved as `.keras` on one backend and loaded on another.

  python tests/layers/_cross_backend.py save FOLDER   # FOLDER/<backend>_<case>.keras, with its inputs and outputs
  python tests/layers/_cross_backend.py check FOLDER OTHER  # loads OTHER's files here; prints the largest differences

`test_backends.py` saves on TensorFlow, checks and saves on JAX in a subprocess, then checks JAX's files on
TensorFlow. Outputs are inference calls (no dropout), in float32.
"""

import json
import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_layer_contract import CASES, functional_model, outputs_of  # noqa: E402


def save(folder):
    """Builds, calls and saves every case on this backend."""
    backend = keras.backend.backend()
    for name, (cls, init_kwargs, args, kwargs) in sorted(CASES.items()):
        keras.utils.set_random_seed(1)
        model, inputs = functional_model(cls(**init_kwargs), args, kwargs)
        model.save(os.path.join(folder, f"{backend}_{name}.keras"))
        arrays = {f"input_{i}": np.asarray(x) for i, x in enumerate(inputs)}
        arrays.update({f"output_{i}": y for i, y in enumerate(outputs_of(model(inputs)))})
        np.savez(os.path.join(folder, f"{backend}_{name}.npz"), **arrays)


def check(folder, other):
    """{case: the largest absolute difference between `other`'s outputs and this backend's outputs of the
    model `other` saved}."""
    differences = {}
    for name in sorted(CASES):
        model = keras.saving.load_model(os.path.join(folder, f"{other}_{name}.keras"))
        saved = np.load(os.path.join(folder, f"{other}_{name}.npz"))
        inputs = [saved[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in saved))]
        outputs = outputs_of(model(inputs))
        expected = [saved[f"output_{i}"] for i in range(len(outputs))]
        assert [y.shape for y in outputs] == [y.shape for y in expected], name
        differences[name] = max(float(np.max(np.abs(y - e), initial=0.0)) for y, e in zip(outputs, expected))
    return differences


if __name__ == "__main__":
    command, folder, *rest = sys.argv[1:]
    if command == "save":
        save(folder)
    else:
        print(json.dumps(check(folder, *rest)))
