r"""Dropout forward and backward: the zoo's `layers.dropout.Dropout` against `keras.layers.Dropout`.

For each shape and compute dtype: one compiled step of y = dropout(x), loss = sum(y * w), and
the gradient with respect to x, timed over --calls calls per run; the two layers run in
alternating pairs (`report.paired`). The shapes are a small Transformer's: the feed-forward's
inner activations (batch 32, 128 positions, 1024), the attention probabilities (32, 4 heads,
128 queries, 256 keys) and a residual branch (32, 128, 256).

  python -m benchmarks.dropout
  python -m benchmarks.dropout --quick   # a smoke run: one call a run, one pair of runs
"""

import time

from absl import app, flags

from benchmarks.common import quick
from benchmarks.common.report import median_seconds, paired, write_section

flags.DEFINE_float("rate", 0.1, "Dropout rate.")
flags.DEFINE_integer("calls", 10, "Steps per timed run.")
flags.DEFINE_integer("repeats", 7, "Pairs of runs (zoo, Keras), taken alternately.")
FLAGS = flags.FLAGS

SHAPES = {"feed-forward inner": (32, 128, 1024), "attention probabilities": (32, 4, 128, 256),
          "residual branch": (32, 128, 256)}


def step_function(layer, x, weights):
    import tensorflow as tf

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.cast(layer(x, training=True), "float32") * weights)
        return tape.gradient(loss, x)

    return step


def timed(step, calls):
    """Seconds for `calls` calls of `step`, waiting for the last result."""
    began = time.perf_counter()
    for _ in range(calls):
        result = step()
    result.numpy()
    return time.perf_counter() - began


def main(argv):
    del argv
    quick.shrink(calls=1, repeats=1)
    import zoo  # noqa: F401  (first: it chooses TensorFlow's backend, or says in one line that it needs it)
    import keras
    import tensorflow as tf

    from layers.dropout import Dropout

    rows = []
    for name, shape in SHAPES.items():
        for dtype in ("float32", "bfloat16"):
            x = tf.cast(tf.random.normal(shape), dtype)
            weights = tf.random.normal(shape)
            ours = step_function(Dropout(FLAGS.rate, dtype=dtype), x, weights)
            peer = step_function(keras.layers.Dropout(FLAGS.rate, dtype=dtype), x, weights)
            ours().numpy()  # traces
            peer().numpy()
            ours_runs, peer_runs, ratio = paired(lambda: timed(ours, FLAGS.calls), lambda: timed(peer, FLAGS.calls),
                                                 FLAGS.repeats, f"{name}, {dtype} (zoo, Keras)")
            per_call = 1000 / FLAGS.calls
            rows.append(f"| {name} | {shape} | {dtype} | {median_seconds(ours_runs) * per_call:.1f} ms | "
                        f"{median_seconds(peer_runs) * per_call:.1f} ms | **{ratio:.2f}x** |")
    lines = [
        f"Dropout at rate {FLAGS.rate}, forward and backward of one compiled step (y = dropout(x), loss = sum(y * w), "
        f"gradient with respect to x), {FLAGS.calls} calls per run; the median of {FLAGS.repeats} pairs of runs "
        "taken alternately. Keras's `Dropout` draws 32 random bits per element; the zoo's draws 16 and multiplies "
        "by the mask.",
        "",
        "| tensor | shape | dtype | zoo `Dropout` | `keras.layers.Dropout` | zoo's speed-up |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    write_section("Dropout: forward and backward", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    app.run(main)
