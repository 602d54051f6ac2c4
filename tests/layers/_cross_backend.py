"""Every layer-contract case, and layers built with their lengths left None, saved as `.keras` on one backend
and loaded on another.

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

import layers  # noqa: E402
from test_layer_contract import CASES, floats, functional_model, outputs_of  # noqa: E402

# name -> (layer class, constructor kwargs, the positional inputs of each call): a model built with every
# length None, called at several lengths. The Transformer-XL memory keeps the last 5 of 7 positions, then
# all 3 of 3.
ANY_LENGTH_CASES = {
    "transformer_xl_block_any_length": (
        layers.TransformerXLBlock,
        {"num_heads": 2, "intermediate_dim": 16, "memory_length": 5},
        [[floats(2, 4, 8), floats(2, 3, 8)], [floats(2, 1, 8), floats(2, 2, 8)]],
    ),
}
NAMES = sorted([*CASES, *ANY_LENGTH_CASES])


def built(name):
    """Case `name` built on this backend: (its functional model, the inputs of each call)."""
    keras.utils.set_random_seed(1)
    if name in CASES:
        cls, init_kwargs, args, kwargs = CASES[name]
        model, inputs = functional_model(cls(**init_kwargs), args, kwargs)
        return model, [inputs]
    cls, init_kwargs, calls = ANY_LENGTH_CASES[name]
    symbols = [keras.Input((None, *np.shape(x)[2:])) for x in calls[0]]
    return keras.Model(symbols, cls(**init_kwargs)(*symbols)), calls


def save(folder):
    """Builds, calls and saves every case on this backend."""
    backend = keras.backend.backend()
    for name in NAMES:
        model, calls = built(name)
        model.save(os.path.join(folder, f"{backend}_{name}.keras"))
        arrays = {}
        for j, inputs in enumerate(calls):
            arrays.update({f"{j}_input_{i}": np.asarray(x) for i, x in enumerate(inputs)})
            arrays.update({f"{j}_output_{i}": y for i, y in enumerate(outputs_of(model(inputs)))})
        np.savez(os.path.join(folder, f"{backend}_{name}.npz"), **arrays)


def saved_calls(saved):
    """[(inputs, outputs)] of each call in a `save`d .npz."""
    calls = []
    while f"{len(calls)}_input_0" in saved:
        prefixes = [f"{len(calls)}_{kind}_" for kind in ("input", "output")]
        calls.append([[saved[f"{p}{i}"] for i in range(sum(k.startswith(p) for k in saved))] for p in prefixes])
    return calls


def check(folder, other):
    """{case: the largest absolute difference between `other`'s outputs and this backend's outputs of the
    model `other` saved, over every call}."""
    differences = {}
    for name in NAMES:
        model = keras.saving.load_model(os.path.join(folder, f"{other}_{name}.keras"))
        differences[name] = 0.0
        for inputs, expected in saved_calls(np.load(os.path.join(folder, f"{other}_{name}.npz"))):
            outputs = outputs_of(model(inputs))
            assert [y.shape for y in outputs] == [y.shape for y in expected], name
            largest = max(float(np.max(np.abs(y - e), initial=0.0)) for y, e in zip(outputs, expected))
            differences[name] = max(differences[name], largest)
    return differences


if __name__ == "__main__":
    command, folder, *rest = sys.argv[1:]
    if command == "save":
        save(folder)
    else:
        print(json.dumps(check(folder, *rest)))
