"""EinsumDense whose product is one 2-D matmul, and the helper it shares with FlatDense."""

import math

import keras
from keras import ops


def flat_matmul(inputs, kernel, contracted=1):
    """inputs (..., *k) times kernel (*k, *out), where k are the last `contracted` axes of
    the inputs: (..., *out), computed as one (rows, prod(k)) x (prod(k), prod(out)) matmul.

    TensorFlow's matmul of a (batch, seq, in) tensor and a 2-D kernel broadcasts the kernel
    over the batch: its kernel gradient is then one product per batch row followed by a sum
    over the batch. Folding the leading axes into rows gives the same numbers with one matmul
    each way.
    """
    rank = len(inputs.shape)
    leading = [ops.shape(inputs)[i] for i in range(rank - contracted)]
    inner = math.prod(kernel.shape[:contracted])
    outer = tuple(kernel.shape[contracted:])
    rows = ops.reshape(inputs, (-1, inner))
    product = ops.matmul(rows, ops.reshape(ops.cast(kernel, rows.dtype), (inner, -1)))
    return ops.reshape(product, (*leading, *outer))


def flat_plan(equation):
    """(contracted axes, output permutation or None) when `equation` contracts the inputs'
    trailing axes with the kernel's leading ones ("abc,cde->abde", "bkd,dnh->bnkh",
    "abcd,cde->abe"); None for any other equation."""
    if "..." in equation or "->" not in equation:
        return None
    operands, output = equation.split("->")
    inputs, kernel = operands.split(",")
    shared = "".join(c for c in kernel if c in inputs)
    if not shared or not inputs.endswith(shared) or not kernel.startswith(shared):
        return None
    natural = inputs[: -len(shared)] + kernel[len(shared) :]
    if sorted(natural) != sorted(output):
        return None
    return len(shared), (None if natural == output else [natural.index(c) for c in output])


@keras.saving.register_keras_serializable(package="zoo")
class FlatEinsumDense(keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` computed as one 2-D matmul (`flat_matmul`), then a transpose
    where the equation's output order asks for one.

    Same arguments, weights, config and results as EinsumDense; equations that do not
    contract the inputs' trailing axes with the kernel's leading ones, LoRA and quantized
    kernels go through EinsumDense's own `call`.

    Example:
    >>> projection = FlatEinsumDense("abc,cde->abde", output_shape=(None, 4, 16), bias_axes="de")
    >>> projection(keras.random.normal((2, 5, 32))).shape  # (2, 5, 4, 16)
    """

    def call(self, inputs, training=None):
        plan = flat_plan(self.equation)
        if plan is None or self.lora_enabled or self.quantization_mode:
            return super().call(inputs, training=training)
        contracted, permutation = plan
        x = flat_matmul(inputs, self.kernel, contracted)
        if permutation is not None:
            x = ops.transpose(x, permutation)
        if self.bias is not None:
            x = ops.add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        return x
