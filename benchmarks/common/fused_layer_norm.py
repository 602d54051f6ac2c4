"""A layer norm for Keras's JAX backend whose statistics take one pass over its input each way, for
`benchmarks.gpu --layer_norm=fused` to try against Keras's `LayerNormalization`.

Keras computes a layer norm's mean and then its variance around that mean (`jnp.var`): two reductions one after
the other, and their gradients as JAX differentiates them. Here the forward pass takes the mean and the mean of
squares together (two sums of the same input, which XLA computes in one kernel), in float32, and the backward
pass is written out (`jax.custom_vjp`): the input's gradient from two row sums of one kernel, gamma's and beta's
from two column sums. The input and output stay in the compute dtype; only the statistics are float32.
"""

import functools

import jax
import jax.numpy as jnp
import keras


def statistics(x32, epsilon):
    """The last axis's mean and 1 / sqrt(variance + epsilon) of float32 `x32`, from its sum and sum of squares."""
    mean = jnp.mean(x32, axis=-1, keepdims=True)
    variance = jnp.maximum(jnp.mean(jnp.square(x32), axis=-1, keepdims=True) - jnp.square(mean), 0.0)
    return mean, jax.lax.rsqrt(variance + epsilon)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def layer_norm(x, gamma, beta, epsilon):
    """(x - mean) / sqrt(variance + epsilon) * gamma + beta over the last axis of `x`, in `x`'s dtype."""
    return _forward(x, gamma, beta, epsilon)[0]


def _forward(x, gamma, beta, epsilon):
    x32 = x.astype(jnp.float32)
    mean, rstd = statistics(x32, epsilon)
    y = (x32 - mean) * rstd * gamma.astype(jnp.float32) + beta.astype(jnp.float32)
    return y.astype(x.dtype), (x, mean, rstd, gamma, beta)


def _backward(epsilon, residuals, dy):
    del epsilon
    x, mean, rstd, gamma, beta = residuals
    dy32 = dy.astype(jnp.float32)
    normalized = (x.astype(jnp.float32) - mean) * rstd
    g = dy32 * gamma.astype(jnp.float32)
    dx = rstd * (g - jnp.mean(g, axis=-1, keepdims=True)
                 - normalized * jnp.mean(g * normalized, axis=-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return (dx.astype(x.dtype), jnp.sum(dy32 * normalized, axis=rows).astype(gamma.dtype),
            jnp.sum(dy32, axis=rows).astype(beta.dtype))


layer_norm.defvjp(_forward, _backward)


class FusedLayerNormalization(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` computed by `layer_norm` on JAX when it normalizes the last axis with
    both gamma and beta (not RMS scaling); Keras's own computation otherwise. Same weights and config."""

    def call(self, inputs):
        rank = len(inputs.shape)
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        last_axis = [a % rank for a in axes] == [rank - 1]
        if keras.backend.backend() != "jax" or not last_axis or self.rms_scaling or not (self.center and self.scale):
            return super().call(inputs)
        gamma, beta = (keras.ops.convert_to_tensor(w) for w in (self.gamma, self.beta))
        return keras.ops.cast(layer_norm(inputs, gamma, beta, self.epsilon), self.compute_dtype)


def use_fused_layer_norm(model):
    """Makes every `keras.layers.LayerNormalization` in `model` (its sub-layers' included) a
    `FusedLayerNormalization`, in place: the same weights, computed by `layer_norm`. Returns how many."""
    norms = [layer for layer in model._flatten_layers() if type(layer) is keras.layers.LayerNormalization]
    for layer in norms:
        layer.__class__ = FusedLayerNormalization
    return len(norms)
