"""The classifier's losses and answers by problem type, for training, evaluation and explanation."""

import tensorflow as tf

from zoo.classifier.config import MULTI_LABEL, REGRESSION, SINGLE_LABEL
from zoo.classifier.model import model_inputs
from zoo.training.losses import smoothed_cross_entropy


def example_losses(problem_type, labels, logits, label_smoothing=0.0):
    """Each example's loss (batch,): the cross-entropy of its class; regression's squared error of the one output
    against the standardised target; multi-label's binary cross-entropy of each label's sigmoid, averaged over the
    labels (Hugging Face's BCEWithLogitsLoss), its 0/1 targets smoothed towards 1/2 as Keras's BinaryCrossentropy
    does."""
    if problem_type == REGRESSION:
        return tf.square(logits[:, 0] - labels)
    if problem_type == MULTI_LABEL:
        targets = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(targets, logits), axis=-1)
    return smoothed_cross_entropy(labels, logits, label_smoothing)


def answers(problem_type, logits):
    """The model's answer before any naming: class probabilities (softmax), each label's probability (sigmoid),
    or regression's standardised score."""
    if problem_type == REGRESSION:
        return {"score": logits[:, 0]}
    return {"probabilities": (tf.sigmoid if problem_type == MULTI_LABEL else tf.nn.softmax)(logits)}


def classification_loss(label_smoothing, problem_type=SINGLE_LABEL):
    """The Task.loss of a classifier: summed `example_losses` over the examples."""
    def loss(model, batch, training):
        logits = model(model_inputs(batch), training=training)
        losses = example_losses(problem_type, batch["label"], logits, label_smoothing)
        tokens = tf.reduce_sum(tf.cast(batch["token_ids"] != 0, tf.int64))
        return tf.reduce_sum(losses), tf.shape(losses)[0], tokens

    return loss


def classification_outputs(model, problem_type=SINGLE_LABEL):
    """Per-example outputs for `zoo.training.evaluation.gather`: each text's loss, `answers` and index (batches
    come in length order; the index puts them back in the data's)."""

    def outputs(batch):
        logits = tf.cast(model(model_inputs(batch), training=False), tf.float32)
        return {"loss": example_losses(problem_type, batch["label"], logits), **answers(problem_type, logits),
                "label": batch["label"], "index": batch["index"]}

    return outputs
