"""Model builders, presets and the machinery every recipe shares, on Keras's TensorFlow backend."""

import os
import sys

# The zoo runs on TensorFlow (tf.data, tf.distribute, TF Serving exports). Keras reads its backend once, when
# it is first imported: choose TensorFlow then, whatever the environment says, as every recipe needs.
if "keras" not in sys.modules:
    os.environ["KERAS_BACKEND"] = "tensorflow"

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"The zoo needs Keras's TensorFlow backend, but Keras was already imported with the "
        f"{keras.backend.backend()!r} backend: import zoo before keras (or the layers package), or set "
        "KERAS_BACKEND=tensorflow; the layers package alone runs on other backends."
    )

# Registers the layers with Keras's serialization: a model file of the zoo loads after `import zoo` alone.
import layers  # noqa: E402,F401
