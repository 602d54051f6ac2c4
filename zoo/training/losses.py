"""The loss every zoo model trains with: cross-entropy with label smoothing."""

import tensorflow as tf


def smoothed_cross_entropy(labels, logits, label_smoothing=0.0):
    """Per-example cross-entropy (float32) against labels smoothed uniformly
    over the classes: (1 - e) * NLL + e * mean over classes of -log p.

    Its gradient is written out, softmax(logits) - target (target = (1 - e) one_hot + e / classes),
    a few passes over the logits, where TensorFlow's own gradient of the same expression scatters the
    label term into a zeroed (examples, classes) tensor and broadcasts the mean's."""
    logits = tf.cast(logits, tf.float32)
    labels = tf.convert_to_tensor(labels)
    labels.shape.assert_is_compatible_with(logits.shape[:-1])
    tf.debugging.assert_equal(tf.shape(labels), tf.shape(logits)[:-1],
                              message="labels must have the logits' shape but the last axis")
    shape, classes = tf.shape(labels), tf.shape(logits)[-1]
    flat_labels = tf.reshape(labels, [-1])
    flat_logits = tf.reshape(logits, [-1, classes])
    e = float(label_smoothing)

    @tf.custom_gradient
    def loss(flat_logits):
        log_probs = tf.nn.log_softmax(flat_logits, axis=-1)  # (examples, classes)
        nll = -tf.gather(log_probs, flat_labels, axis=-1, batch_dims=1)
        value = nll if not e else (1.0 - e) * nll - e * tf.reduce_mean(log_probs, axis=-1)

        def grad(upstream):
            upstream = upstream[:, None]
            probabilities = tf.exp(log_probs) * upstream
            if e:
                probabilities -= upstream * (e / tf.cast(classes, tf.float32))
            rows = tf.range(tf.shape(flat_labels)[0], dtype=flat_labels.dtype)
            label_positions = tf.stack([rows, flat_labels], axis=1)
            return tf.tensor_scatter_nd_sub(probabilities, label_positions, (1.0 - e) * upstream[:, 0])

        return value, grad

    return tf.reshape(loss(flat_logits), shape)
