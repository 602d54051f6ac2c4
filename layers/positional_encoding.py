"""Sinusoidal positional encoding (Vaswani et al., 2017, section 3.5)."""

import math

import keras
from keras import ops


def sinusoid(positions, hidden_dim):
    """Sinusoids of arbitrary (possibly fractional) positions.

    PE[p, 2i] = sin(p / 10000^(2i / hidden_dim)) and
    PE[p, 2i + 1] = cos(p / 10000^(2i / hidden_dim)), interleaved.

    Args:
        positions: 1-D tensor or array of positions.
        hidden_dim: size of each encoding.

    Returns:
        float32 tensor (len(positions), hidden_dim).
    """
    positions = ops.cast(ops.convert_to_tensor(positions), "float32")
    dims = ops.arange(hidden_dim)
    # 2i for both members of the (sin, cos) pair at dims 2i and 2i + 1.
    even_dims = ops.cast(dims - dims % 2, "float32")
    inverse_frequency = ops.exp(even_dims * (-math.log(10000.0) / hidden_dim))
    angles = positions[:, None] * inverse_frequency[None, :]
    return ops.where(dims % 2 == 0, ops.sin(angles), ops.cos(angles))


def sinusoidal_encoding(length, hidden_dim):
    """The paper's table for positions 0 .. length - 1: float32 (length, hidden_dim).

    Example:
    >>> sinusoidal_encoding(50, 16).shape  # (50, 16)
    """
    return sinusoid(ops.arange(length), hidden_dim)


@keras.saving.register_keras_serializable(package="zoo")
class PositionalEncoding(keras.layers.Layer):
    """Adds the sinusoidal positional encoding to a sequence of vectors.

    The table is computed in float32 and cast to the inputs' dtype, so it is
    exact under mixed precision up to that final cast.

    Call arguments:
        inputs: (batch, seq, hidden_dim) tensor.
        start_index: position of the first element of `inputs` (for
            incremental decoding, where one token arrives at a time).

    Returns:
        (batch, seq, hidden_dim) tensor: inputs + PE[start_index : start_index + seq].

    Example:
    >>> x = keras.random.normal((2, 10, 16))
    >>> PositionalEncoding()(x).shape  # (2, 10, 16)

    Reference: Vaswani et al., "Attention Is All You Need", 2017, section 3.5.
    """

    def call(self, inputs, start_index=0):
        length, hidden_dim = ops.shape(inputs)[1], ops.shape(inputs)[2]
        positions = ops.arange(length) + start_index
        encoding = sinusoid(positions, hidden_dim)
        return inputs + ops.cast(encoding, inputs.dtype)[None]

    def compute_output_shape(self, input_shape):
        return input_shape
