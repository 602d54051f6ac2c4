"""Model builders, presets and the machinery every recipe shares, on Keras's TensorFlow backend; the Python
API `zoo.load(path)`, `zoo.train(recipe, ...)` and `zoo.sweep(recipe, sweep_dir, space=...)` (zoo.api).

Importing the zoo changes nothing in the process: no environment variable (KERAS_BACKEND stays as the caller
set it), no file descriptor. It needs Keras's TensorFlow backend (tf.data, tf.distribute, SavedModel), Keras's
default: under another, the import is refused, saying so. The recipes' programs choose TensorFlow and start
it quietly themselves (recipes/__init__.py)."""

import os

import keras

if keras.backend.backend() != "tensorflow":
    _CHOSEN_BY = f"KERAS_BACKEND={os.environ['KERAS_BACKEND']}" if os.environ.get("KERAS_BACKEND") else "keras.json"
    raise ImportError(
        f"The zoo needs Keras's TensorFlow backend, but Keras runs the {keras.backend.backend()!r} backend "
        f"({_CHOSEN_BY}): set KERAS_BACKEND=tensorflow before Keras is first imported (the recipes do); the "
        "layers package alone runs on other backends."
    )

# Registers the layers with Keras's serialization: a model file of the zoo loads after `import zoo` alone.
import layers  # noqa: E402,F401


def __getattr__(name):
    """`zoo.load`, `zoo.train` and `zoo.sweep` (zoo.api), imported at their first use: `import zoo` alone stays
    light. (The package of the search is zoo.sweeps, so that its import does not hide the function.)"""
    if name in ("load", "train", "sweep"):
        from zoo import api

        return getattr(api, name)
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")
