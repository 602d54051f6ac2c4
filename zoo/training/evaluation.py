"""Evaluation over a finite dataset: sums per batch, totals at the end (`evaluate`), or every example's
outputs (`gather`)."""

import numpy as np
import tensorflow as tf

from zoo.core.progress import Progress


def evaluate(metrics_fn, dataset, num_batches=None, description="eval"):
    """Runs `metrics_fn(batch) -> dict of scalar sums` over `dataset` in a
    tf.function and returns the totals as floats, with a progress bar."""
    step = tf.function(metrics_fn, reduce_retracing=True)
    progress = Progress(num_batches, unit=f"{description} batch")
    totals = {}
    for i, batch in enumerate(dataset):
        for name, value in step(batch).items():
            totals[name] = totals.get(name, 0.0) + float(value)
        progress.update(i + 1)
    return totals


def gather(outputs_fn, dataset, num_batches=None, description="eval"):
    """Runs `outputs_fn(batch) -> dict of per-example tensors` over `dataset` in a tf.function and returns
    each output of every example, batches concatenated, as NumPy arrays, with a progress bar."""
    step = tf.function(outputs_fn, reduce_retracing=True)
    progress = Progress(num_batches, unit=f"{description} batch")
    parts = {}
    for i, batch in enumerate(dataset):
        for name, value in step(batch).items():
            parts.setdefault(name, []).append(value.numpy())
        progress.update(i + 1)
    return {name: np.concatenate(values) for name, values in parts.items()}


def write_summaries(model_dir, name, step, metrics):
    """TensorBoard scalars for `metrics` under model_dir/name at `step`."""
    with tf.summary.create_file_writer(f"{model_dir}/{name}").as_default(step=step):
        for key, value in metrics.items():
            tf.summary.scalar(key, value)
