"""Length-bucketed batch plans and the tf.data pipelines built from them.

A *plan* says which examples form each batch, for every training step, made in NumPy from the examples' lengths and a
seed. Because it is a pure function of (lengths, seed), a resumed run rebuilds the same plan and skips the steps it has
done: the data position is the step count. Under tf.distribute every global batch is split into one part per replica,
and each input pipeline (worker) yields the parts of its own replicas.
"""

import numpy as np
import tensorflow as tf

PAD_TO_MULTIPLE = 8  # few distinct shapes: fewer retraces and XLA compilations
BUCKET_BATCHES = 100  # examples are sorted by length within windows of this many batches


def epoch_batches(lengths, batch_size, rng, max_tokens=None):
    """One epoch of batches, each an int array of example indices: the examples shuffled, sorted by length within
    windows of BUCKET_BATCHES batches, cut into batches of `batch_size` (with `max_tokens`, as many as fit max_tokens
    once padded, at most batch_size), and the batches shuffled."""
    order = rng.permutation(len(lengths))
    window = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(_cut(chunk, lengths, batch_size, max_tokens))
    return [batches[i] for i in rng.permutation(len(batches))]


def _cut(sorted_indices, lengths, batch_size, max_tokens):
    if max_tokens is None:
        return [sorted_indices[i : i + batch_size] for i in range(0, len(sorted_indices), batch_size)]
    batches, current, longest = [], [], 0
    for index in sorted_indices:
        longest_if_added = max(longest, lengths[index])
        full = len(current) == batch_size or longest_if_added * (len(current) + 1) > max_tokens
        if current and full:
            batches.append(np.asarray(current))
            current, longest_if_added = [], lengths[index]
        current.append(index)
        longest = longest_if_added
    if current:
        batches.append(np.asarray(current))
    return batches


def training_plan(lengths, steps, batch_size, seed, num_replicas=1, max_tokens=None):
    """`steps` global batches, epoch after epoch, each split into `num_replicas` parts: a list (steps * num_replicas)
    of index arrays, step-major. Batches with fewer examples than replicas are dropped."""
    lengths = np.asarray(lengths)
    rng = np.random.default_rng(seed)
    plan = []
    while len(plan) < steps * num_replicas:
        before = len(plan)
        for batch in epoch_batches(lengths, batch_size, rng, max_tokens):
            if len(batch) >= num_replicas:
                plan.extend(np.array_split(batch, num_replicas))
        if len(plan) == before:
            raise ValueError(f"No batch of {len(lengths)} examples has one example for each of the {num_replicas} "
                             "replicas: use more data or fewer replicas.")
    return plan[: steps * num_replicas]


def evaluation_plan(lengths, batch_size):
    """Every example once, in batches of similar lengths (order does not matter)."""
    return _cut(np.argsort(np.asarray(lengths), kind="stable"), lengths, batch_size, None)


def pipeline_part(plan, num_pipelines, pipeline_id, replicas_per_pipeline):
    """The plan entries that input pipeline `pipeline_id` feeds to its own replicas."""
    num_replicas = num_pipelines * replicas_per_pipeline
    first = pipeline_id * replicas_per_pipeline
    return [part for i, part in enumerate(plan) if first <= i % num_replicas < first + replicas_per_pipeline]


def planned_dataset_fn(plan, replicas, make_dataset):
    """A `zoo.training.config.Task.dataset` over a training plan: each input pipeline's part of `plan`
    (`pipeline_part`), from the start step on, as `make_dataset(part, skip, pipeline_id)` makes it
    (skip: the plan entries already trained on)."""

    def dataset_fn(context, start_step):
        per_pipeline = replicas // context.num_input_pipelines
        part = pipeline_part(plan, context.num_input_pipelines, context.input_pipeline_id, per_pipeline)
        return make_dataset(part, start_step * per_pipeline, context.input_pipeline_id)

    return dataset_fn


def ragged(rows):
    """A tf.RaggedTensor from a list of 1-D int arrays."""
    lengths = np.asarray([len(r) for r in rows], np.int64)
    values = np.concatenate(rows) if rows else np.zeros((0,), np.int32)
    return tf.RaggedTensor.from_row_lengths(values.astype(np.int32), lengths)


def padded(rows, multiple=PAD_TO_MULTIPLE, max_length=None):
    """(batch, length) int32 with zero padding, length rounded up to `multiple`, but not past
    `max_length` (a model with that many learned positions takes no longer batch)."""
    dense = rows.to_tensor(0)
    length = tf.shape(dense)[1]
    target = (length + multiple - 1) // multiple * multiple
    if max_length is not None:
        target = tf.maximum(tf.minimum(target, max_length), length)
    return tf.pad(dense, [[0, 0], [0, target - length]])


def plan_dataset(plan, fields, skip=0, max_length=None):
    """A tf.data.Dataset of a dict of fields for each entry of `plan` (int arrays of example indices) after the first
    `skip` (resumption). `fields`: name -> token rows, padded (a zoo.data.cache.TokenRows, read from disk a batch at a
    time, or a list of 1-D int arrays), or a NumPy array of one value per example (labels, gathered as is).
    `max_length`: the model's positions, if rounding up must not pass them: one number for every field, or field name
    -> number (fields it does not name are not capped)."""
    tables = {name: v if hasattr(v, "gather") else ragged(v) if isinstance(v, list) else tf.constant(v)
              for name, v in fields.items()}
    dataset = tf.data.Dataset.from_tensor_slices(ragged([np.asarray(p, np.int64) for p in plan[skip:]]))

    def gather(indices):
        batch = {}
        for name, table in tables.items():
            if hasattr(table, "gather"):  # zoo.data.cache.TokenRows: read from disk, the batch's rows alone
                values, lengths = tf.numpy_function(table.gather, [indices], (tf.int32, tf.int64), stateful=False)
                rows = tf.RaggedTensor.from_row_lengths(tf.ensure_shape(values, [None]),
                                                        tf.ensure_shape(lengths, [None]))
            else:
                rows = tf.gather(table, indices)
            limit = max_length.get(name) if isinstance(max_length, dict) else max_length
            batch[name] = padded(rows, max_length=limit) if isinstance(rows, tf.RaggedTensor) else rows
        return batch

    options = tf.data.Options()
    # tf.data's autotuning thread sleeps up to a minute between rounds, and
    # deleting the iterator waits for it: an evaluation ended ~40 s late.
    options.autotune.enabled = False
    dataset = dataset.map(gather, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    return dataset.with_options(options)
