"""The fine-tuning speed of the zoo's encoder against keras-hub's BertBackbone on a published
checkpoint, measured in one program (`benchmarks.published`, `benchmarks.transfer`). No flags."""

import os
import time

# The recipes' CPU allocator settings (recipes.common, zoo.training.runtime.keep_freed_memory), for both models alike:
# set before TensorFlow allocates anything.
if os.environ.get("ZOO_TF_ALLOCATOR") != "1":
    os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "1")

from benchmarks.common.report import ROOT  # noqa: E402


def fine_tuning_rates(checkpoint, batch_size, length, steps, dtype):
    """Training tokens/s (every position counted, the batch full of text) of a [CLS] classifier
    over the checkpoint's encoder: the zoo's (`zoo.classifier.model.build_classifier`, trained by the
    zoo's loop step) and keras-hub's BertBackbone with a Dense head, in one program, same batch,
    length, dtype and optimizer (AdamW). Returns {name: tokens/s} after a warm-up step each."""
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from zoo.classifier import model as classifier
    from zoo.pretraining import published
    from zoo.core.dtype_policy import dtype_policy
    from zoo.training.runtime import keep_freed_memory

    keep_freed_memory()
    read = published.read_checkpoint(checkpoint)
    config = published.encoder_config(read, max_length=length)
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, config.vocab_size, (batch_size, length)).astype(np.int32)
    labels = rng.integers(0, 2, batch_size).astype(np.int32)

    def timed(model, inputs):
        optimizer = keras.optimizers.AdamW(5e-5)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                logits = tf.cast(model(inputs, training=True), tf.float32)
                loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss

        step().numpy()
        began = time.time()
        for _ in range(steps):
            step().numpy()
        return steps * batch_size * length / (time.time() - began)

    with dtype_policy(dtype):
        zoo = classifier.build_classifier(config)
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=config.vocab_size, num_layers=config.num_layers, num_heads=config.num_heads,
            hidden_dim=config.hidden_dim, intermediate_dim=config.intermediate_dim, dropout=config.dropout,
            max_sequence_length=length)
        inputs = {"token_ids": keras.Input((None,), dtype="int32"), "segment_ids": keras.Input((None,), dtype="int32"),
                  "padding_mask": keras.Input((None,), dtype="int32")}
        head = keras.layers.Dense(2, dtype="float32")(keras.layers.Dropout(config.dropout)(
            backbone(inputs)["sequence_output"][:, 0]))
        peer = keras.Model(inputs, head)
        peer_inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                       "padding_mask": np.ones_like(token_ids)}
        rates = {"zoo": timed(zoo, token_ids), "keras-hub": timed(peer, peer_inputs)}
    return rates, config


def speed_lines(checkpoint, batch_size, length, steps, dtype=None):
    """Markdown lines: the zoo's and keras-hub's fine-tuning tokens/s on `checkpoint`, their ratio and
    their shares of the dtype's matmul peak, all measured in this program."""
    from benchmarks.common.costs import encoder_multiply_adds, training_flops
    from benchmarks.common.peak import matmul_flops
    from zoo.training import precision

    dtype = dtype or precision.choose("auto")[0]
    rates, config = fine_tuning_rates(checkpoint, batch_size, length, steps, dtype)
    flops = training_flops(encoder_multiply_adds(config, length, 0, config.vocab_size) / length)  # per token
    peak = matmul_flops(dtype)
    shown = os.path.relpath(checkpoint, ROOT) if os.path.isdir(checkpoint) else checkpoint
    lines = [f"Fine-tuning speed on `{shown}` ({dtype}, batch {batch_size} x {length} tokens, {steps} timed steps "
             "each after one untimed, AdamW, one program, the recipes' CPU allocator settings for both):", "",
             "| model | tokens/s | share of the matmul peak |", "|---|---|---|"]
    lines += [f"| {name} | {rate:,.0f} | {rate * flops / peak:.0%} |" for name, rate in rates.items()]
    lines += ["", f"zoo / keras-hub: **{rates['zoo'] / rates['keras-hub']:.2f}x**. {flops / 1e6:.0f} MFLOP per token "
              f"(`benchmarks/common/costs.py`, forward and backward); {dtype} matmul peak {peak / 1e9:.0f} GFLOP/s "
              "(2048³, measured by this program)."]
    return lines
