"""The machine's matrix-multiply peak, measured in the program whose figures it judges.

  from benchmarks.common.peak import matmul_flops
  matmul_flops("float32")  # FLOP/s of a 2048 x 2048 x 2048 product on TensorFlow's default device
"""

import time

from benchmarks.common import quick
from benchmarks.common.costs import flops_per_token


def matmul_flops(dtype, size=2048, seconds=3.0):
    """FLOP/s of a square `size` matmul in `dtype` (float32, bfloat16, float16): the best of timed
    rounds of 5 products each, after a warm-up, for about `seconds` (a --quick run: 256, for 0.1 s)."""
    import tensorflow as tf

    if quick.active():
        size, seconds = 256, 0.1

    a = tf.cast(tf.random.stateless_normal((size, size), seed=[1, 2]), dtype)
    # Five different right-hand sides: five products of the same operands would be merged into one
    # by the graph optimizer (common subexpression elimination), and the work counted five times over.
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


def training_share(recipe, config, model_dir, train):
    """A sentence: the run's steady training tokens/s (`train`, metrics.json's entry) as FLOP/s of the model's
    counted work (`benchmarks.common.costs.flops_per_token` of `recipe`'s run in `model_dir`, `config` its typed
    run config) and as a share of the matmul peak of the run's dtype, measured here and now."""
    dtype = config.train.mixed_precision
    rate = train["steady_tokens_per_second"]
    achieved, peak = rate * flops_per_token(recipe, config, model_dir), matmul_flops(dtype)
    return (f"Training at {rate:.0f} tokens/s once traced: {achieved / 1e9:.0f} GFLOP/s of the model's counted work "
            f"(`benchmarks/common/costs.py`), {achieved / peak:.0%} of this machine's {dtype} matmul peak "
            f"({peak / 1e9:.0f} GFLOP/s, {256 if quick.active() else 2048}³, measured by this program).")
