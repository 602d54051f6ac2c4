"""Dense whose product over sequences is one 2-D matmul."""

import keras
from keras import ops

from layers.flat_einsum_dense import flat_matmul


@keras.saving.register_keras_serializable(package="zoo")
class FlatDense(keras.layers.Dense):
    """`keras.layers.Dense` that folds the leading axes of (batch, seq, ..., in) inputs into
    rows of one 2-D matmul (`flat_matmul`): the kernel gradient is then one matmul, not one
    per batch row summed.

    Same arguments, weights, config and results as Dense; 2-D inputs, LoRA and quantized
    kernels go through Dense's own `call`.

    Example:
    >>> FlatDense(64, activation="relu")(keras.random.normal((2, 5, 16))).shape  # (2, 5, 64)
    """

    def call(self, inputs, training=None):
        if len(inputs.shape) <= 2 or self.lora_enabled or self.quantization_mode:
            return super().call(inputs, training=training)
        x = flat_matmul(inputs, self.kernel)
        if self.bias is not None:
            x = ops.add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        return x
