r"""Training throughput of Transformers built from `layers/` alone, on Keras's JAX backend: tokens/s, and
the counted work per second as a share of the chip's bfloat16 matmul peak, measured in this program.

  KERAS_BACKEND=jax python -m benchmarks.gpu                      # base and txl on a GPU; tiny on a CPU
  KERAS_BACKEND=jax python -m benchmarks.gpu --preset=tiny --models=base --rounds=1   # a smoke run
  KERAS_BACKEND=jax python -m benchmarks.gpu --models=base --breakdown   # and base's step in parts

- base: the paper's base encoder-decoder: 6 + 6 layers, hidden 512, 8 heads, feed-forward 2048, a shared
  vocabulary of 32,768 tied with the output projection, dropout 0.1 (sub-layer outputs, embeddings and the
  feed-forward's inner activations; none on the attention probabilities, as in the paper), label smoothing
  0.1. Synthetic Multi30k-shaped data: 29,000 sentence pairs (Multi30k's training set) of 10-40 tokens,
  copy tasks, bucketed by length into multiples of 8, about 25,000 padded source positions a batch (the
  paper's batches); one pass over them is a round.
- txl: a Transformer-XL stack (the zoo's `base` language-model preset, Dai et al.'s enwik8 base, with
  base's vocabulary): 12 layers, hidden 512, 8 heads, feed-forward 2048, segments of 512 tokens over 512
  positions of memory, batch 22, the memory carried from step to step; a synthetic token stream. Its token
  embedding, tied with the output projection, is keras-hub's ReversibleEmbedding (as in
  layers.TokenAndPositionEmbedding, without absolute positions: Transformer-XL's are relative).

Mixed bfloat16; each training step (a stateless Keras call, jax.value_and_grad, Adam) is one XLA program
compiled by jax.jit, its state buffers donated. Attention that is neither returned nor dropped goes
through `keras.ops.dot_product_attention` (layers.MultiHeadAttention): cuDNN flash attention on a recent
NVIDIA GPU, where a one-step check here shows it trains. Work is counted as `benchmarks/common/costs.py` counts
it (6 x the forward multiply-adds of the real tokens: padding's work is left out); the peak is the best
rate of bfloat16 products of random square matrices (8192 on a GPU), timed as `benchmarks/common/peak.py` times.
On a CPU the default preset is `tiny`, a smoke run that writes nothing into BENCHMARKS.md.
"""

import collections
import concurrent.futures
import dataclasses
import json
import math
import os
import time
import types

from absl import app, flags

from benchmarks.common import costs
from benchmarks.common.report import command_line, write_section

flags.DEFINE_list("models", ["base", "txl"], "Models to train: base, txl.")
flags.DEFINE_string("preset", None, "Sizes: base (the default on a GPU or TPU) or tiny (the default on a CPU).")
flags.DEFINE_multi_string("set", [], "Change a field of the preset, e.g. --set=tokens_per_batch=100000 "
                          "--set=dropout=0 (to see what a part of the step costs).")
flags.DEFINE_integer("rounds", 3, "Timed rounds per model (the median is reported), after one compiling step.")
flags.DEFINE_float("peak_seconds", 3.0, "How long the matmul peak is timed.")
flags.DEFINE_string("json", None, "Also write the figures to this JSON file.")
flags.DEFINE_bool("breakdown", False, "After base's rounds, time one step of its commonest batch shape in parts: "
                  "the forward pass and loss, the backward pass, the optimizer (three programs compiled apart).")
flags.DEFINE_bool("profile", False, "After base's rounds, trace 5 steps of its commonest batch shape with JAX's "
                  "profiler and print where the device time goes (benchmarks/common/device_trace.py).")
flags.DEFINE_bool("flash_attention", True, "Let Keras use cuDNN's flash attention where it trains here; "
                  "--noflash_attention: XLA's attention everywhere.")
flags.DEFINE_integer("flash_min_keys", None, "Set layers.multi_head_attention.FLASH_MIN_KEYS, the keys below "
                     "which the layers do not ask for cuDNN's flash attention (0: ask always).")
flags.DEFINE_bool("write", None, "Write the figures into BENCHMARKS.md (default: on a GPU or TPU, not on a CPU).")
FLAGS = flags.FLAGS

PAD, BOS = 0, 1  # token ids; the others are drawn from [2, vocab_size)


@dataclasses.dataclass(frozen=True)
class Preset:
    vocab_size: int
    hidden_dim: int
    num_heads: int
    intermediate_dim: int
    num_layers: int  # base: encoder layers and decoder layers each; txl: layers
    dropout: float
    pairs: int  # base: sentence pairs per round
    min_length: int  # base: tokens per sentence
    max_length: int
    tokens_per_batch: int  # base: padded source positions per batch
    segment_length: int  # txl
    memory_length: int  # txl
    batch_size: int  # txl: streams
    txl_steps: int  # txl: steps per round
    matmul_size: int  # the peak's square matrices


PRESETS = {
    "base": Preset(32768, 512, 8, 2048, 6, 0.1, 29000, 10, 40, 25000, 512, 512, 22, 20, 8192),
    "tiny": Preset(512, 64, 2, 128, 2, 0.1, 64, 9, 16, 256, 16, 16, 4, 3, 256),
}


def matmul_peak(size, seconds):
    """FLOP/s of bfloat16 products of random `size` x `size` matrices on JAX's default device: the best of
    timed rounds of 5 products with different right-hand sides (equal ones would be computed once), after a
    warm-up, for about `seconds`."""
    import jax

    a = jax.random.normal(jax.random.key(0), (size, size), "bfloat16")
    bs = [jax.random.normal(jax.random.key(i + 1), (size, size), "bfloat16") for i in range(5)]
    products = jax.jit(lambda a, bs: [a @ b for b in bs])
    jax.block_until_ready(products(a, bs))
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline or best == 0.0:
        began = time.perf_counter()
        jax.block_until_ready(products(a, bs))
        best = max(best, 5 * 2 * size**3 / (time.perf_counter() - began))
    return best


def flash_attention_trains():
    """Whether cuDNN's flash attention computes a masked bfloat16 attention and its gradient here, through
    `keras.ops.dot_product_attention` (which falls back to XLA's attention quietly): (bool, why)."""
    import jax
    import keras
    import numpy as np

    q = jax.random.normal(jax.random.key(0), (2, 16, 8, 64), "bfloat16")
    mask = np.tril(np.ones((16, 16), bool))[None, None].repeat(2, axis=0)
    loss = lambda q: keras.ops.dot_product_attention(q, q, q, mask=mask).astype("float32").sum()  # noqa: E731
    try:
        program = jax.jit(jax.grad(loss)).lower(q).compile()
        if "fmha" not in program.as_text():
            return False, "Keras chose XLA's attention for a small masked bfloat16 attention"
        jax.block_until_ready(program(q))
    except Exception as error:  # any failure of the check means: not here
        return False, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return True, "cuDNN's attention ran a small masked bfloat16 attention and its gradient"


def build_translator(p):
    """The encoder-decoder: [source ids, decoder input ids] (batch, length) -> logits (batch, length, vocab)."""
    import keras

    from layers import DecoderBlock, EncoderBlock, TokenAndPositionEmbedding, padding_mask

    positions = max(64, -(-p.max_length // 8) * 8)  # batches are padded to a multiple of 8
    embedding = TokenAndPositionEmbedding(p.vocab_size, p.hidden_dim, positions, dropout=p.dropout, name="embedding")
    block = dict(num_heads=p.num_heads, intermediate_dim=p.intermediate_dim, dropout=p.dropout, attention_dropout=0.0)
    source, target = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    source_mask, target_mask = padding_mask(source, PAD), padding_mask(target, PAD)
    x = embedding(source)
    for i in range(p.num_layers):
        x = EncoderBlock(**block, name=f"encoder_{i}")(x, padding_mask=source_mask)
    y = embedding(target)
    for i in range(p.num_layers):
        y = DecoderBlock(**block, name=f"decoder_{i}")(y, x, padding_mask=target_mask, encoder_padding_mask=source_mask)
    return keras.Model([source, target], embedding.token_embedding(y, reverse=True), name="translator")


def build_transformer_xl(p):
    """The language model: [token ids (batch, segment), one memory (batch, memory, hidden) per layer] ->
    [logits (batch, segment, vocab), the layers' new memories]."""
    import keras
    import keras_hub

    from layers import TransformerXLBlock
    from layers.dropout import Dropout

    embedding = keras_hub.layers.ReversibleEmbedding(
        p.vocab_size, p.hidden_dim, embeddings_initializer=keras.initializers.RandomNormal(stddev=p.hidden_dim**-0.5)
    )
    tokens = keras.Input((p.segment_length,), dtype="int32")
    memories = [keras.Input((p.memory_length, p.hidden_dim), dtype="bfloat16") for _ in range(p.num_layers)]
    x = Dropout(p.dropout)(embedding(tokens) * math.sqrt(p.hidden_dim))
    new_memories = []
    for i, memory in enumerate(memories):
        x, memory = TransformerXLBlock(
            p.num_heads, p.intermediate_dim, p.memory_length, dropout=p.dropout, name=f"layer_{i}"
        )(x, memory)
        new_memories.append(memory)
    logits = embedding(Dropout(p.dropout)(x), reverse=True)
    return keras.Model([tokens, *memories], [logits, *new_memories], name="transformer_xl")


def cross_entropy(logits, labels, smoothing):
    """Mean over the real labels (not PAD) of the label-smoothed cross-entropy, in float32."""
    from keras import ops

    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    picked = ops.take_along_axis(log_probs, ops.expand_dims(labels, -1), axis=-1)[..., 0]
    per_token = -(1 - smoothing) * picked - smoothing * ops.mean(log_probs, axis=-1)
    real = ops.cast(ops.not_equal(labels, PAD), "float32")
    return ops.sum(per_token * real) / ops.maximum(ops.sum(real), 1.0)


def forward_and_loss(model, loss):
    """(trainable, non-trainable, batch) -> (loss, (extras, non-trainable)): the training forward pass of a
    stateless Keras call and `loss(outputs, batch)`, which returns (loss, extras)."""

    def loss_of(trainable, non_trainable, batch):
        outputs, non_trainable = model.stateless_call(trainable, non_trainable, batch["inputs"], training=True)
        value, extras = loss(outputs, batch)
        return value, (extras, non_trainable)

    return loss_of


def training_step(model, optimizer, loss):
    """step(state, batch) -> (loss, extras, state): one training step, to compile. `loss(outputs, batch)`
    returns (loss, extras); `state` is (trainable, non-trainable, optimizer variables)."""
    import jax

    gradient = jax.value_and_grad(forward_and_loss(model, loss), has_aux=True)

    def step(state, batch):
        trainable, non_trainable, optimizer_variables = state
        (value, (extras, non_trainable)), grads = gradient(trainable, non_trainable, batch)
        trainable, optimizer_variables = optimizer.stateless_apply(optimizer_variables, grads, trainable)
        return value, extras, (trainable, non_trainable, optimizer_variables)

    return step


def step_breakdown(model, optimizer, loss, state, batch, repeats=10):
    """Milliseconds one step of `batch`'s shape spends in the forward pass and loss, the backward pass
    and the optimizer: three programs compiled apart (the loss; the loss's gradients; the whole step),
    none donating `state`, each called `repeats` times after a first call; the parts are differences."""
    import jax

    loss_of = forward_and_loss(model, loss)
    programs = {
        "forward": jax.jit(lambda state, batch: loss_of(state[0], state[1], batch)[0]),
        "gradient": jax.jit(lambda state, batch: jax.grad(loss_of, has_aux=True)(state[0], state[1], batch)[0]),
        "step": jax.jit(training_step(model, optimizer, loss)),
    }
    seconds = {}
    for name, program in programs.items():
        jax.block_until_ready(program(state, batch))  # compiles and warms up
        began = time.perf_counter()
        for _ in range(repeats):
            outputs = program(state, batch)
        jax.block_until_ready(outputs)
        seconds[name] = (time.perf_counter() - began) / repeats
    return {"shape": list(batch["labels"].shape), "step_ms": seconds["step"] * 1e3,
            "forward_ms": seconds["forward"] * 1e3, "backward_ms": (seconds["gradient"] - seconds["forward"]) * 1e3,
            "optimizer_ms": (seconds["step"] - seconds["gradient"]) * 1e3}


def compile_programs(step, state, batches):
    """`step` compiled for each batch's shapes, its state donated: ([program per batch], seconds, whether
    the programs call cuDNN's fused attention). Tracing runs in turn; XLA compiles them side by side."""
    import jax

    began = time.perf_counter()
    lowered = [jax.jit(step, donate_argnums=0).lower(state, batch) for batch in batches]
    with concurrent.futures.ThreadPoolExecutor(len(lowered)) as pool:
        programs = list(pool.map(lambda program: program.compile(), lowered))
    fused = all("fmha" in program.as_text() for program in programs)
    return programs, time.perf_counter() - began, fused


def initial_state(model, optimizer):
    optimizer.build(model.trainable_variables)
    return tuple([v.value for v in variables] for variables in (
        model.trainable_variables, model.non_trainable_variables, optimizer.variables))


def adam(p):
    """Adam as in the paper (betas 0.9, 0.98, epsilon 1e-9), warmed up linearly over 4,000 steps to
    hidden_dim**-0.5 * 4000**-0.5, the paper's peak."""
    import keras

    peak = p.hidden_dim**-0.5 * 4000**-0.5
    schedule = keras.optimizers.schedules.CosineDecay(0.0, 100_000, warmup_target=peak, warmup_steps=4000)
    return keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)


def translation_batches(p, rng):
    """Synthetic copy-task batches, one round's worth, shuffled: each a dict of source ids, decoder input ids
    (BOS then the sentence but its last token) and labels (the sentence), (pairs, bucket width) int32, PAD
    beyond each sentence; and each batch's sentence lengths. A bucket's last, partial batch is left out."""
    import numpy as np

    lengths = rng.integers(p.min_length, p.max_length + 1, size=p.pairs)
    widths = -(-lengths // 8) * 8  # buckets of lengths rounded up to a multiple of 8
    batches = []
    for width in sorted(set(widths.tolist())):
        members = lengths[widths == width]
        pairs = p.tokens_per_batch // width
        for start in range(0, len(members) - pairs + 1, pairs):
            chunk = members[start : start + pairs]
            real = np.arange(width)[None, :] < chunk[:, None]
            sentences = np.where(real, rng.integers(BOS + 1, p.vocab_size, size=(pairs, width)), PAD)
            decoder_input = np.where(real, np.concatenate([np.full((pairs, 1), BOS), sentences[:, :-1]], 1), PAD)
            arrays = [a.astype("int32") for a in (sentences, decoder_input, sentences)]
            batches.append(({"inputs": arrays[:2], "labels": arrays[2]}, chunk))
    order = rng.permutation(len(batches))
    return [batches[i] for i in order]


def train_translator(p, rounds, breakdown=False, profile=False):
    """Trains base on the synthetic batches: the figures of its timed rounds (and, with `breakdown`, of
    `step_breakdown` on its commonest batch shape; with `profile`, `device_trace.summary` of 5 of its steps)."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    batches = translation_batches(p, rng)
    model, optimizer = build_translator(p), adam(p)
    state = initial_state(model, optimizer)
    loss = lambda logits, batch: (cross_entropy(logits, batch["labels"], 0.1), ())  # noqa: E731
    examples = {batch["labels"].shape: batch for batch, _ in reversed(batches)}  # one batch per bucket
    compiled, compile_seconds, fused = compile_programs(training_step(model, optimizer, loss), state,
                                                        list(examples.values()))
    programs = dict(zip(examples, compiled))
    for shape, batch in examples.items():  # the warm-up: each program runs once
        value, _, state = programs[shape](state, batch)
    batches = [(jax.device_put(batch), lengths) for batch, lengths in batches]
    config = types.SimpleNamespace(hidden_dim=p.hidden_dim, intermediate_dim=p.intermediate_dim,
                                   num_encoder_layers=p.num_layers, num_decoder_layers=p.num_layers)
    multiply_adds = sum(costs.seq2seq_multiply_adds(config, n, n, p.vocab_size) for _, ls in batches for n in ls)
    tokens = sum(2 * int(ls.sum()) for _, ls in batches)  # each pair's source tokens and decoder positions
    padded = sum(2 * batch["labels"].size for batch, _ in batches)
    times, losses = [], [float(value)]
    for _ in range(rounds):
        began = time.perf_counter()
        for batch, _ in batches:
            value, _, state = programs[batch["labels"].shape](state, batch)
        losses.append(float(value))  # waits for the round's last step
        times.append(time.perf_counter() - began)
    extra = {}
    commonest = collections.Counter(batch["labels"].shape for batch, _ in batches).most_common(1)[0][0]
    if profile:
        import tempfile

        from benchmarks.common import device_trace

        with tempfile.TemporaryDirectory() as directory:
            state, wall = device_trace.traced_steps(programs[commonest], state, examples[commonest], 5, directory)
            try:  # reading the trace back is no reason to lose the figures above
                extra["profile"] = device_trace.summary(directory, 5, wall)
            except Exception as error:  # noqa: BLE001
                extra["profile"] = {"error": f"reading the trace failed: {type(error).__name__}: {error}"}
        print(device_trace.render(extra["profile"]), flush=True)
    if breakdown:
        extra["breakdown"] = step_breakdown(model, optimizer, loss, state, examples[commonest])
    return figures(times, tokens, costs.training_flops(multiply_adds), losses, compile_seconds, fused,
                   steps=len(batches), shapes=len(programs), real_share=tokens / padded, **extra)


def train_transformer_xl(p, rounds):
    """Trains txl on a synthetic stream (a random sequence of 600 tokens repeated, so the memory can help),
    its memory carried across steps: the figures of its timed rounds."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    period = rng.integers(BOS + 1, p.vocab_size, size=600)
    offsets = rng.integers(0, 600, size=p.batch_size)
    steps = p.txl_steps
    positions = np.arange(steps * p.segment_length + 1)
    stream = period[(positions[None, :] + offsets[:, None]) % 600].astype("int32")  # (batch, steps * segment + 1)
    segments = [jax.device_put((stream[:, i * p.segment_length : (i + 1) * p.segment_length],
                                stream[:, i * p.segment_length + 1 : (i + 1) * p.segment_length + 1]))
                for i in range(steps)]
    model, optimizer = build_transformer_xl(p), adam(p)
    state = initial_state(model, optimizer)
    memories = [jax.numpy.zeros((p.batch_size, p.memory_length, p.hidden_dim), "bfloat16")] * p.num_layers

    def loss(outputs, batch):
        logits, *new_memories = outputs
        return cross_entropy(logits, batch["labels"], 0.0), new_memories

    batch = lambda segment, memories: {"inputs": [segment[0], *memories], "labels": segment[1]}  # noqa: E731
    (program,), compile_seconds, fused = compile_programs(
        training_step(model, optimizer, loss), state, [batch(segments[0], memories)]
    )
    value, memories, state = program(state, batch(segments[0], memories))
    times, losses = [], [float(value)]
    for _ in range(rounds):
        began = time.perf_counter()
        for segment in segments:
            value, memories, state = program(state, batch(segment, memories))
        losses.append(float(value))
        times.append(time.perf_counter() - began)
    keys = p.segment_length + p.memory_length
    multiply_adds = costs.multiply_adds(p, p.segment_length, keys, p.segment_length, p.vocab_size)
    tokens = p.batch_size * p.segment_length * steps
    return figures(times, tokens, costs.training_flops(multiply_adds) * p.batch_size * steps, losses,
                   compile_seconds, fused, steps=steps, shapes=1, real_share=1.0)


def figures(times, tokens, flops, losses, compile_seconds, fused, **extra):
    """A model's figures from its rounds' seconds (median), each round's real tokens and counted FLOPs."""
    seconds = median(times)
    return {"tokens_per_second": tokens / seconds, "flops_per_second": flops / seconds, "round_seconds": times,
            "tokens_per_round": tokens, "flops_per_token": flops / tokens, "losses": losses,
            "compile_seconds": compile_seconds, "cudnn_attention": fused, **extra}


def section(results, command):
    """BENCHMARKS.md's section: the device, the command, a table and, for base, whether it reached 40% of
    the peak."""
    peak = results["peak_flops"]
    rows = ["| model | tokens/s | TFLOP/s counted | share of peak | round (s) | steps | compile (s) | "
            "cuDNN attention | loss, first → last step |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results["models"].items():
        rows.append(f"| {name} | {r['tokens_per_second']:,.0f} | {r['flops_per_second'] / 1e12:.3g} | "
                    f"{r['flops_per_second'] / peak:.1%} | {median(r['round_seconds']):.2f} | {r['steps']} | "
                    f"{r['compile_seconds']:.0f} | {'yes' if r['cudnn_attention'] else 'no'} | "
                    f"{r['losses'][0]:.2f} → {r['losses'][-1]:.2f} |")
    lines = [f"Device: **{results['device']}** (JAX {results['jax']}, Keras {results['keras']}, preset "
             f"`{results['preset']}`). Command: `{command}`.", "",
             f"bfloat16 matmul peak measured by this program: {peak / 1e12:.3g} TFLOP/s ({results['matmul_size']}³ "
             f"products). Flash-attention check: {results['flash_check']}.", "", *rows]
    if "breakdown" in results["models"].get("base", {}):
        b = results["models"]["base"]["breakdown"]
        pairs, width = b["shape"]
        lines += ["", f"base's step in parts ({pairs:,} pairs of width {width}; programs compiled apart): "
                  f"{b['step_ms']:.1f} ms a step, forward and loss {b['forward_ms']:.1f} ms, backward "
                  f"{b['backward_ms']:.1f} ms, optimizer {b['optimizer_ms']:.1f} ms."]
    if "base" in results["models"] and results["preset"] == "base":
        share = results["models"]["base"]["flops_per_second"] / peak
        lines += ["", f"Target for base, at least 40% of the peak: {'met' if share >= 0.4 else 'not met'} "
                  f"({share:.1%})."]
    return "\n".join(lines)


def with_fields(preset, assignments):
    """`preset` with the --set NAME=VALUE fields replaced (each converted to the field's type)."""
    fields = {f.name: f.type for f in dataclasses.fields(preset)}
    changes = {}
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if name not in fields or not value:
            raise SystemExit(f"--set={assignment}: give NAME=VALUE with NAME one of {sorted(fields)}.")
        changes[name] = fields[name](value)
    return dataclasses.replace(preset, **changes)


def median(values):
    return sorted(values)[len(values) // 2]


def main(argv):
    del argv
    import keras

    if keras.backend.backend() != "jax":
        raise SystemExit(f"benchmarks.gpu runs on Keras's JAX backend, not {keras.backend.backend()!r}: "
                         "run it as KERAS_BACKEND=jax python -m benchmarks.gpu.")
    import jax

    device = jax.devices()[0]
    accelerated = device.platform != "cpu"
    preset = FLAGS.preset or ("base" if accelerated else "tiny")
    unknown = set(FLAGS.models) - {"base", "txl"}
    if preset not in PRESETS or unknown:
        raise SystemExit(f"--preset={preset} --models={','.join(FLAGS.models)}: the presets are {sorted(PRESETS)}, "
                         "the models base and txl.")
    p = with_fields(PRESETS[preset], FLAGS.set)
    if not FLAGS.flash_attention:
        flash, reason = False, "turned off (--noflash_attention)"
    else:
        flash, reason = flash_attention_trains() if device.platform == "gpu" else (False, "not a GPU")
    if not flash:
        keras.config.disable_flash_attention()  # the XLA attention, set before any layer reads the setting
    print(f"{device.device_kind}: preset {preset}; flash attention: {flash} ({reason})", flush=True)
    results = {"device": device.device_kind, "jax": jax.__version__, "keras": keras.__version__, "preset": preset,
               "changed": FLAGS.set, "flash_min_keys": FLAGS.flash_min_keys, "xla_flags": os.environ.get("XLA_FLAGS"),
               "matmul_size": p.matmul_size, "flash_check": reason, "models": {}}
    results["peak_flops"] = matmul_peak(p.matmul_size, FLAGS.peak_seconds)
    print(f"bfloat16 matmul peak: {results['peak_flops'] / 1e12:.3g} TFLOP/s", flush=True)
    keras.config.set_dtype_policy("mixed_bfloat16")
    if FLAGS.flash_min_keys is not None:
        from layers import multi_head_attention

        multi_head_attention.FLASH_MIN_KEYS = FLAGS.flash_min_keys
    train = {"base": lambda p, rounds: train_translator(p, rounds, FLAGS.breakdown, FLAGS.profile),
             "txl": train_transformer_xl}
    for name in FLAGS.models:
        keras.utils.set_random_seed(0)
        try:
            results["models"][name] = r = train[name](p, FLAGS.rounds)
        except Exception as error:  # cuDNN refusing these shapes, which the small check did not show
            if not flash:
                raise
            flash, why = False, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            print(f"{name} failed with flash attention ({why}); again with XLA's attention", flush=True)
            results["flash_check"] += f"; {name} failed with it ({why}) and ran with XLA's attention"
            keras.config.disable_flash_attention()
            keras.utils.set_random_seed(0)
            results["models"][name] = r = train[name](p, FLAGS.rounds)
        print(f"{name}: {r['tokens_per_second']:,.0f} tokens/s, {r['flops_per_second'] / results['peak_flops']:.1%} "
              f"of the peak; compiled in {r['compile_seconds']:.0f} s; losses {r['losses']}", flush=True)
        if FLAGS.json:  # after each model, so that a run cut short keeps what it measured
            with open(FLAGS.json, "w") as f:
                json.dump(results, f, indent=1)
    xla_flags = f"XLA_FLAGS={os.environ['XLA_FLAGS']} " if os.environ.get("XLA_FLAGS") else ""
    body = section(results, f"{xla_flags}KERAS_BACKEND=jax {command_line()}")
    print(body, flush=True)
    if accelerated if FLAGS.write is None else FLAGS.write:
        write_section("GPU (JAX backend)", body)


if __name__ == "__main__":
    app.run(main)
