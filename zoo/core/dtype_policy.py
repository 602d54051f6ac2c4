"""The compute dtypes a run can train in, as Keras's dtype policies, and the policy for one of them held for a
`with` block. Below both the training loop (zoo.training) and the run folder's owner (zoo.runs), which
builds a trained model back in float32."""

import contextlib

import keras

# --mixed_precision's dtype -> Keras's policy (variables stay float32 in the mixed ones).
PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


@contextlib.contextmanager
def dtype_policy(mixed_precision):
    """Keras's global dtype policy for `mixed_precision` ("float32", "bfloat16", "float16": variables
    stay float32) inside the `with` block; the caller's policy again after it."""
    before = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(PRECISIONS[mixed_precision])
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(before)
