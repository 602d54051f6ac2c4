"""The loss of a student taught by a teacher (docs/distillation.md): each example's

    weight x teacher_loss + (1 - weight) x gold x gold_loss

where gold is 1 for a training text with its label and 0 for an augmented copy or a transfer text (the teacher's
outputs alone teach those), gold_loss the classifier's own (zoo.classifier.losses.example_losses) and teacher_loss:

    soft  T^2 x the cross-entropy of the teacher's softened distribution, softmax(t / T), under the student's,
          softmax(s / T) (Hinton et al. 2015; the T^2 keeps its gradients' scale as T changes); multi-label: each
          label's binary cross-entropy of sigmoid(t / T), averaged over the labels
    mse   the squared error of the logits, averaged over the outputs (Tang et al. 2019); single-label logits are
          centred first (a softmax's logits are known up to a constant, and the teacher's are its log-probabilities)

A regression's teacher_loss is the squared error of the standardised scores, whatever `loss` says.
"""

import tensorflow as tf

from zoo.classifier.config import MULTI_LABEL, REGRESSION
from zoo.classifier.losses import example_losses
from zoo.classifier.model import model_inputs


def teacher_losses(problem_type, teacher, logits, loss="soft", temperature=1.0):
    """Each example's loss (batch,) against the teacher's outputs `teacher` (batch, outputs)."""
    if problem_type == REGRESSION:
        return tf.square(logits[:, 0] - teacher[:, 0])
    if loss == "mse":
        if problem_type != MULTI_LABEL:
            logits = logits - tf.reduce_mean(logits, axis=-1, keepdims=True)
            teacher = teacher - tf.reduce_mean(teacher, axis=-1, keepdims=True)
        return tf.reduce_mean(tf.square(logits - teacher), axis=-1)
    if problem_type == MULTI_LABEL:
        return temperature ** 2 * tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(tf.sigmoid(teacher / temperature), logits / temperature), axis=-1)
    return temperature ** 2 * tf.nn.softmax_cross_entropy_with_logits(tf.nn.softmax(teacher / temperature),
                                                                     logits / temperature)


def distillation_losses(problem_type, batch, logits, options, label_smoothing=0.0):
    """Each example's mixed loss (see the module); `options`: the run's DistillConfig."""
    taught = teacher_losses(problem_type, batch["teacher"], logits, options.loss, options.temperature)
    gold = example_losses(problem_type, batch["label"], logits, label_smoothing) * batch["gold"]
    return options.weight * taught + (1.0 - options.weight) * gold


def distillation_loss(options, label_smoothing, problem_type):
    """The Task.loss of a taught classifier: summed `distillation_losses` over the examples."""
    def loss(model, batch, training):
        logits = tf.cast(model(model_inputs(batch), training=training), tf.float32)
        losses = distillation_losses(problem_type, batch, logits, options, label_smoothing)
        tokens = tf.reduce_sum(tf.cast(batch["token_ids"] != 0, tf.int64))
        return tf.reduce_sum(losses), tf.shape(losses)[0], tokens

    return loss
