"""Optimizer and learning-rate schedules shared by every recipe."""

import math

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="zoo")
class WarmupInverseSqrt(keras.optimizers.schedules.LearningRateSchedule):
    """The paper's schedule (section 5.3), scaled so that its peak is `peak`: linear warm-up for `warmup_steps`,
    then decay with 1/sqrt(step),

        lr(step) = peak * min(step / warmup_steps, sqrt(warmup_steps / step))

    Vaswani et al.'s d_model^-0.5 * min(step^-0.5, step * warmup^-1.5) is it with peak = (d_model * warmup_steps)^-0.5.
    """

    def __init__(self, peak, warmup_steps):
        self.peak, self.warmup_steps = peak, warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0  # Keras counts from 0
        warmup = tf.cast(max(self.warmup_steps, 1), tf.float32)
        return self.peak * tf.minimum(step / warmup, tf.sqrt(warmup / step))

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


@keras.saving.register_keras_serializable(package="zoo")
class WarmupCosine(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up to `peak` over `warmup_steps`, then half a cosine down to `peak * floor` at `total_steps`
    (Transformer-XL's schedule; fairseq's `cosine`), which ends a fixed budget lower than 1/sqrt(step) decay:

        lr(step) = peak * (floor + (1 - floor) * (1 + cos(pi * t)) / 2),
        t = (step - warmup_steps) / (total_steps - warmup_steps), clipped to [0, 1].
    """

    def __init__(self, peak, warmup_steps, total_steps, floor=0.0):
        self.peak, self.warmup_steps, self.total_steps, self.floor = peak, warmup_steps, total_steps, floor

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0  # Keras counts from 0
        warmup = float(max(self.warmup_steps, 1))
        span = float(max(self.total_steps - self.warmup_steps, 1))
        t = tf.clip_by_value((step - warmup) / span, 0.0, 1.0)
        cosine = self.floor + (1.0 - self.floor) * 0.5 * (1.0 + tf.cos(math.pi * t))
        return self.peak * tf.minimum(step / warmup, 1.0) * cosine

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps,
                "floor": self.floor}


SCHEDULES = ("inverse_sqrt", "cosine")


def make_schedule(name, learning_rate, warmup_steps, total_steps):
    """The learning-rate schedule called `name` (one of SCHEDULES)."""
    if name == "inverse_sqrt":
        return WarmupInverseSqrt(learning_rate, warmup_steps)
    if name == "cosine":
        return WarmupCosine(learning_rate, warmup_steps, total_steps)
    raise ValueError(f"Unknown learning-rate schedule {name!r}: use one of {SCHEDULES}.")


# Weight decay leaves these alone (BERT's choice): biases (Transformer-XL's u and v among them) and LayerNorm's.
NOT_DECAYED = ("bias", "gamma", "beta")


class ScaledRates:
    """Mixin for a Keras optimizer: each variable learns at the schedule's rate times its own
    factor, `rate_scales[i]` for the i-th variable the optimizer was built with (layer-wise
    learning-rate decay). Weight decay keeps the schedule's rate."""

    rate_scales = None

    def update_step(self, gradient, variable, learning_rate):
        scale = self.rate_scales[self._get_variable_index(variable)]
        return super().update_step(gradient, variable, learning_rate * scale)


class ScaledAdam(ScaledRates, keras.optimizers.Adam):
    pass


class ScaledAdamW(ScaledRates, keras.optimizers.AdamW):
    pass


def make_optimizer(learning_rate, warmup_steps, mixed_precision="float32", schedule="inverse_sqrt", total_steps=None,
                   weight_decay=0.0, rate_scales=None):
    """Adam with the paper's betas (0.9, 0.98), eps 1e-9, and a warm-up schedule (`total_steps` is where `cosine`
    ends); wrapped in dynamic loss scaling for float16.

    With `weight_decay`, AdamW (Loshchilov & Hutter): each step also shrinks the weights by learning_rate(step) *
    weight_decay, decoupled from the gradient; biases and LayerNorm's scales and offsets (NOT_DECAYED) are not
    decayed. With `rate_scales` (one factor per variable, in the order the optimizer is built with), each variable's
    learning rate is the schedule's times its factor (`ScaledRates`)."""
    schedule = make_schedule(schedule, learning_rate, warmup_steps, total_steps or warmup_steps)
    adam, adamw = (keras.optimizers.Adam, keras.optimizers.AdamW) if rate_scales is None else (ScaledAdam, ScaledAdamW)
    if weight_decay:
        optimizer = adamw(schedule, weight_decay, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
        optimizer.exclude_from_weight_decay(var_names=list(NOT_DECAYED))
    else:
        optimizer = adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
    if rate_scales is not None:
        optimizer.rate_scales = [float(s) for s in rate_scales]
    if mixed_precision == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
