"""What the layer tests need from the Keras backend they run on (TensorFlow or JAX).

Keras fixes its backend per process: the suite runs on TensorFlow, and `.ci/run` runs
these same files again as `KERAS_BACKEND=jax python -m pytest -q tests/layers`.
"""

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()

tensorflow_only = pytest.mark.skipif(
    BACKEND != "tensorflow", reason="checks TensorFlow itself (its graphs, its ops, its random numbers)"
)


def gradients(loss, inputs=(), variables=(), has_aux=False):
    """Gradients of the scalar `loss(*inputs)` with respect to `inputs` (arrays) and to the
    Keras `variables` it reads: (input gradients, variable gradients), NumPy arrays. With
    `has_aux`, `loss` returns (scalar, extras) and the extras come third, as NumPy arrays.

    TensorFlow records `loss` on a tape; JAX differentiates a stateless call of it, with the
    variables' values swapped in through a `keras.StatelessScope`."""
    inputs = [keras.ops.convert_to_tensor(x) for x in inputs]
    variables = list(variables)
    with_aux = loss if has_aux else (lambda *args: (loss(*args), ()))
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch(inputs)
            total, extras = with_aux(*inputs)
        found = tape.gradient(total, inputs + variables)
    elif BACKEND == "jax":
        import jax

        def stateless_loss(input_values, variable_values):
            with keras.StatelessScope(state_mapping=list(zip(variables, variable_values))):
                return with_aux(*input_values)

        differentiate = jax.grad(stateless_loss, argnums=(0, 1), has_aux=True)
        (input_gradients, variable_gradients), extras = differentiate(inputs, [v.value for v in variables])
        found = [*input_gradients, *variable_gradients]
    else:
        raise NotImplementedError(f"The layer tests take gradients on TensorFlow and JAX, not on {BACKEND!r}.")
    found = [None if g is None else numpy(g) for g in found]
    results = found[: len(inputs)], found[len(inputs) :]
    return (*results, keras.tree.map_structure(numpy, extras)) if has_aux else results


def numpy(x):
    """A tensor as a NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(x))


def compiled(function):
    """`function` compiled as the backend compiles a training step: tf.function or jax.jit."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    import jax

    return jax.jit(function)
