"""Dropout as one multiply by a mask, each way, from 16 random bits an element (TensorFlow and JAX)."""

import math

import keras
from keras import ops

KEEP_LEVELS = 2**16  # the rate is used rounded to a multiple of 1 / KEEP_LEVELS


def levels(rate):
    """(the 16-bit values below which an element is dropped, the kept elements' scale) for `rate`."""
    drop_levels = round(rate * KEEP_LEVELS)
    return drop_levels, KEEP_LEVELS / (KEEP_LEVELS - drop_levels)


def keep_mask(shape, rate, seed, dtype):
    """TensorFlow: a (shape) tensor of 0 and 1 / (1 - rate): each element kept with probability
    1 - rate (rate rounded to a multiple of 2**-16), from 16 random bits per element, two per
    uint32 that `tf.random.stateless_uniform` draws with `seed` (an int32 pair)."""
    import tensorflow as tf  # this path runs on the TensorFlow backend only, where it is loaded

    drop_levels, scale = levels(rate)
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform([(size + 1) // 2], seed, minval=None, maxval=None, dtype=tf.uint32)
    bits = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
    return tf.reshape(tf.where(bits >= drop_levels, tf.constant(scale, dtype), tf.constant(0, dtype)), shape)


def uniform_keep_mask(shape, rate, seed, dtype):
    """Any backend: `keep_mask`'s values and probabilities, from one `keras.random.uniform` draw
    per element (`seed`: a `keras.random.SeedGenerator` or an int). Uniform floats are multiples
    of 2**-23 or finer, so `uniform >= drop_levels / 2**16` keeps exactly 1 - the rounded rate."""
    drop_levels, scale = levels(rate)
    kept = ops.greater_equal(keras.random.uniform(shape, seed=seed), drop_levels / KEEP_LEVELS)
    return ops.where(kept, ops.cast(scale, dtype), ops.cast(0, dtype))


def jax_keep_mask(shape, rate, seed, dtype):
    """JAX: `keep_mask`'s values and probabilities from 16 random bits per element, four elements a
    Threefry-2x32 hash (its two output words, two halves each), where `keras.random.uniform` hashes once per
    element under JAX's default partitionable Threefry: a quarter of the hashing, which on a GPU is most of
    a dropout mask's cost (benchmarks/gpu.py's profile). `seed`: a (2,) uint32 key, a Keras seed."""
    import jax
    import jax.numpy as jnp
    from jax.extend.random import threefry_2x32

    drop_levels, scale = levels(rate)
    size = math.prod(shape)
    words = (size + 1) // 2
    count = jnp.arange(words + words % 2, dtype=jnp.uint32)  # hashed as pairs (first half, second half)
    key = jnp.asarray(seed).astype(jnp.uint32)
    bits = jax.lax.bitcast_convert_type(threefry_2x32((key[0], key[1]), count), jnp.uint16).reshape(-1)[:size]
    return jnp.where(bits >= drop_levels, jnp.asarray(scale, dtype), jnp.asarray(0, dtype)).reshape(shape)


@keras.saving.register_keras_serializable(package="zoo")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that multiplies its input by a mask of 0 and 1 / (1 - rate), so its
    gradient is that one multiply.

    Keras's dropout (`tf.nn.experimental.stateless_dropout` on TensorFlow) draws 32 random bits
    per element, then scales and selects; its gradient selects again against zeros. On
    TensorFlow this layer builds its mask from 16 random bits per element (`keep_mask`): on a CPU,
    where the random numbers dominate, its forward and backward run faster than Keras's
    (`benchmarks/dropout.py`, BENCHMARKS.md). JAX takes 16 bits per element too, four elements a
    Threefry hash (`jax_keep_mask`); other backends draw one uniform float per element
    (`uniform_keep_mask`), with the same mask values and keep probability. Same arguments,
    config and expected value as Keras's layer (the rate is used rounded to a multiple of
    2**-16); with `noise_shape`, or a rate that rounds to 1, it calls Keras's.

    Differences to know: the backward pass keeps the mask in the compute dtype (4 bytes per
    element in float32) where Keras keeps a boolean; and a dropped inf or NaN gives NaN (0 * inf),
    where Keras's select gives 0 (this matters only for overflowing float16 activations).

    Example:
    >>> y = Dropout(0.1)(keras.ops.ones((4, 8)), training=True)  # entries 0 or 1 / 0.9
    """

    def call(self, inputs, training=False):
        if not training or self.rate <= 0 or round(self.rate * KEEP_LEVELS) >= KEEP_LEVELS or self.noise_shape:
            return super().call(inputs, training=training)
        if keras.backend.backend() == "jax":
            return inputs * jax_keep_mask(tuple(inputs.shape), self.rate, self.seed_generator.next(), inputs.dtype)
        if keras.backend.backend() != "tensorflow":
            return inputs * uniform_keep_mask(ops.shape(inputs), self.rate, self.seed_generator, inputs.dtype)
        import tensorflow as tf  # the TensorFlow backend has loaded it

        seed = tf.cast(tf.math.floormod(self.seed_generator.next(), tf.int32.max - 1), tf.int32)
        return inputs * keep_mask(tf.shape(inputs), self.rate, seed, inputs.dtype)
