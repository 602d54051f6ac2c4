"""The machine's matrix-multiply peak, measured in the program whose figures it judges.

  from benchmarks.peak import matmul_flops
  matmul_flops("float32")  # FLOP/s of a 2048 x 2048 x 2048 product on TensorFlow's default device
"""

import time


def matmul_flops(dtype, size=2048, seconds=3.0):
    """FLOP/s of a square `size` matmul in `dtype` (float32, bfloat16, float16): the best of timed
    rounds of 5 products each, after a warm-up, for about `seconds`."""
    import tensorflow as tf

    a = tf.cast(tf.random.stateless_normal((size, size), seed=[1, 2]), dtype)
    # Five different right-hand sides: five products of the same operands would be merged into one
    # by the graph optimizer (common subexpression elimination), and the rate read 5 times too high.
    bs = [tf.cast(tf.random.stateless_normal((size, size), seed=[3, i]), dtype) for i in range(5)]

    @tf.function
    def products():
        total = tf.zeros((), tf.float32)
        for b in bs:
            total += tf.cast(tf.reduce_sum(tf.linalg.matmul(a, b)[0, :1]), tf.float32)
        return total

    products().numpy()
    best, deadline = 0.0, time.time() + seconds
    while time.time() < deadline or best == 0.0:
        began = time.time()
        products().numpy()
        best = max(best, 5 * 2 * size**3 / (time.time() - began))
    return best


def peak_share(achieved, peak, dtype):
    """`achieved` training FLOP/s (`benchmarks.costs.flops_per_token` times tokens/s) in words, as a share of
    the `peak` FLOP/s of `dtype` matmuls measured in the same program."""
    return (f"{achieved / 1e9:.0f} GFLOP/s of the model's counted work (`benchmarks/costs.py`), {achieved / peak:.0%} "
            f"of this machine's {dtype} matmul peak ({peak / 1e9:.0f} GFLOP/s, 2048³, measured by this program)")
