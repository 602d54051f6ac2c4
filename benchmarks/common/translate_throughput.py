"""benchmarks.translate's training-throughput comparison: the zoo's Trainer loop against the same architecture
built from keras-hub layers (TokenAndPositionEmbedding, TransformerEncoder / TransformerDecoder, Dense), trained on
the same batches with the same optimizer in a plain tf.function step, the two sides taking turns in rounds
(`report.paired`); and what skipping the padding buys the zoo."""

from benchmarks.common import quick
from benchmarks.common.report import paired, read_record
from zoo.runs.run_dir import RunDir

QUICK_PAIRS = 1000  # Multi30k training pairs a --quick run batches


def keras_hub_translator(config):
    import keras
    import keras_hub

    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    embed = keras_hub.layers.TokenAndPositionEmbedding(config.source_vocab_size, config.max_length, config.hidden_dim)
    x = embed(source)
    for _ in range(config.num_encoder_layers):
        x = keras_hub.layers.TransformerEncoder(config.intermediate_dim, config.num_heads, config.dropout)(
            x, padding_mask=source != 0
        )
    y = embed(target)
    for _ in range(config.num_decoder_layers):
        y = keras_hub.layers.TransformerDecoder(config.intermediate_dim, config.num_heads, config.dropout)(
            y, x, decoder_padding_mask=target != 0, encoder_padding_mask=source != 0
        )
    logits = keras.layers.Dense(config.target_vocab_size)(y)
    return keras.Model([source, target], logits)


def throughput(model_dir, steps, rounds):
    """tokens/s of the zoo's training loop and of the keras-hub peer on the same batches, in
    `rounds` alternating rounds of steps // rounds steps each (each round, both sides train on
    the same batches). Returns (zoo tokens/s, peer tokens/s, the median of the per-round
    ratios, peer parameters, zoo parameters, the skip-padding gain, the dtype)."""
    import tempfile

    import keras
    import tensorflow as tf

    from zoo.data import batching
    from zoo.translation import corpora as translation_corpora
    from zoo.translation import model as translation, preprocessor as translation_preprocessing
    from zoo.training.distribute import make_strategy
    from zoo.training.optimization import make_optimizer
    from zoo.core.dtype_policy import dtype_policy
    from zoo.training.config import Task, TrainConfig
    from zoo.training.loop import Trainer

    from zoo.translation.recipe import padded_lengths

    run_config = read_record(model_dir).config
    config = run_config.model
    source_tok, target_tok = RunDir(model_dir).tokenizers(config.shared_vocabulary)
    data = translation_corpora.load_translation("multi30k", "train", "de", "en")
    if quick.active():
        data = translation_corpora.Translation(data.sources[:QUICK_PAIRS], data.targets[:QUICK_PAIRS])
    rows = {
        "source": translation_preprocessing.source_rows(source_tok, data.sources, config.max_length),
        "target": translation_preprocessing.target_rows(target_tok, data.targets, config.max_length),
    }
    lengths = [max(len(s), len(t) - 1) for s, t in zip(rows["source"], rows["target"])]
    if rounds <= 0 or steps % rounds:
        raise ValueError(f"--throughput_steps={steps} must be a positive multiple of --throughput_rounds={rounds}.")
    warmup, per_round = 1 if quick.active() else 10, steps // rounds
    dtype = run_config.train.mixed_precision  # both sides compute in the run's dtype
    train_config = TrainConfig(train_steps=warmup + steps, batch_size=512, max_tokens=4096, learning_rate=1e-3,
                               warmup_steps=400, checkpoint_every=10_000, mixed_precision=dtype)
    plan = batching.training_plan(lengths, warmup + per_round * rounds, 512, 0, 1, 4096)

    def zoo_side(skip_padding):
        """steps(n) of the zoo's Trainer loop (the function Trainer.train runs between two log
        lines), its model, optimizer and loss, over the plan's batches from the first."""
        task = Task(
            lambda: translation.build_translator(config),
            lambda c, s: batching.plan_dataset(plan, rows, skip=s, max_length=padded_lengths(config)),
            translation.translation_loss(0.1, skip_padding),
        )
        trainer = Trainer(task, train_config, tempfile.mkdtemp(prefix="bench_zoo_"), make_strategy("one_device"))
        loop = tf.function(trainer._train_loop)
        batches = iter(trainer.strategy.distribute_datasets_from_function(lambda c: trainer.task.dataset(c, 0)))

        def steps(n):
            _, tokens, trainer.state = loop(batches, tf.constant(n), trainer.state)
            return int(tokens.numpy())

        return steps, trainer.model

    zoo_steps, zoo_model = zoo_side(skip_padding=True)  # as recipes.translate trains without XLA

    # The peer: keras-hub layers, the same optimizer and batches, one tf.function per step, and the same loss
    # (label-smoothed cross-entropy over the real target tokens) as a Keras user writes it: Keras's own.
    with dtype_policy(dtype):
        model = keras_hub_translator(config)
    optimizer = make_optimizer(1e-3, 400)

    @tf.function(reduce_retracing=True)  # batches vary in shape: trace once for any shape
    def step(batch):
        with tf.GradientTape() as tape:
            target = batch["target"]
            logits = tf.cast(model([batch["source"], target[:, :-1]], training=True), tf.float32)
            weights = tf.cast(target[:, 1:] != 0, tf.float32)
            labels = tf.one_hot(target[:, 1:], config.target_vocab_size)
            losses = keras.losses.categorical_crossentropy(labels, logits, from_logits=True, label_smoothing=0.1)
            loss = tf.reduce_sum(losses * weights) / tf.reduce_sum(weights)
        gradients = tape.gradient(loss, model.trainable_variables)
        gradients, _ = tf.clip_by_global_norm(gradients, 1.0)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return tf.reduce_sum(tf.cast(batch["source"] != 0, tf.int64)) + tf.reduce_sum(tf.cast(weights, tf.int64))

    peer_batches = iter(batching.plan_dataset(plan, rows, max_length=padded_lengths(config)))

    def peer_steps(n):
        return sum(int(step(next(peer_batches))) for _ in range(n))

    zoo_steps(warmup)  # traces
    peer_steps(warmup)
    zoo_runs, peer_runs, ratio = paired(
        lambda: zoo_steps(per_round), lambda: peer_steps(per_round), rounds, "training throughput (zoo, keras-hub)"
    )

    # What skipping the padding buys: the zoo against itself computing every padded position.
    skipping, _ = zoo_side(skip_padding=True)
    padded, _ = zoo_side(skip_padding=False)
    skipping(warmup)
    padded(warmup)
    _, _, skip_gain = paired(
        lambda: skipping(per_round), lambda: padded(per_round), rounds, "training throughput (zoo, zoo padded)"
    )

    def rate(runs):
        return sum(tokens for _, tokens in runs) / sum(seconds for seconds, _ in runs)

    return rate(zoo_runs), rate(peer_runs), ratio, model.count_params(), zoo_model.count_params(), skip_gain, dtype


def throughput_line(zoo_tps, peer_tps, ratio, peer_params, zoo_params, skip_gain, dtype, steps, rounds):
    """The throughput comparison's sentence: `throughput`'s figures, timed over `steps` steps in `rounds` rounds."""
    return (
        f"Training throughput in {dtype} (the run's dtype; the peer's logits cast to float32 for its loss, as "
        f"Keras's mixed-precision guide does), same architecture ({zoo_params:,} parameters in the zoo's, {peer_params:,} in the "
        "keras-hub one: untied output layer, learned positions), same batches (max 4,096 tokens, padding included), "
        "same optimizer, same loss (label-smoothed cross-entropy over the real target tokens: the zoo's, and Keras's "
        "`categorical_crossentropy` for the peer, as a Keras user writes it), "
        f"{steps} steps after 10 warm-up steps, in {rounds} rounds "
        f"taken alternately on the same batches: zoo {zoo_tps:.0f} tokens/s, keras-hub layers {peer_tps:.0f} "
        f"tokens/s, ratio **{ratio:.2f}x** (median of the rounds' ratios). The zoo trains as `recipes.translate` "
        "does without XLA: its position-wise layers, output projection and loss skip the padding (`skip_padding`), "
        "where the keras-hub layers compute every padded position. Skipping the padding alone, the zoo against "
        f"itself with `skip_padding=False` on the same batches, in as many alternating rounds: **{skip_gain:.2f}x**."
    )
