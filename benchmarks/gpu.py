r"""Training throughput of Transformers built from `layers/` alone, on Keras's JAX backend: tokens/s, and
the counted work per second as a share of the chip's bfloat16 matmul peak, measured in this program.

  KERAS_BACKEND=jax python -m benchmarks.gpu                      # base and txl on a GPU; tiny on a CPU
  KERAS_BACKEND=jax python -m benchmarks.gpu --preset=tiny --models=base --rounds=1   # a smoke run
  KERAS_BACKEND=jax python -m benchmarks.gpu --quick   # the same, its section in the quick report
  KERAS_BACKEND=jax python -m benchmarks.gpu --models=base --breakdown   # and base's step in parts
  KERAS_BACKEND=jax python -m benchmarks.gpu --models=base --steps_per_call=32 --layer_norm=fused   # changes to try

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

The loss is the dense form of the label-smoothed cross-entropy (logsumexp minus the logits weighted by the smoothed
target: no gather of the labels' log-probabilities, whose gradient scatters into a float32 tensor of the logits'
size); it trained base 1.08x faster on an H100 on 2026-11-27, with the same losses to 4 digits (BENCHMARKS.md's
GPU notes). --cross_entropy=gather is the plain form it replaced. Changes to try, each off by default
(benchmarks/gpu_variants.sh runs them one at a time): --steps_per_call (several steps in one program, so the host
launches one program for them; 1.01x there), --layer_norm=fused (benchmarks/common/fused_layer_norm.py; 1.00x
there). --check_attention compiles layers.MultiHeadAttention alone at several key lengths and says which attention
each calls, against what FLASH_MIN_KEYS asks.
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

from benchmarks.common import costs, quick
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
flags.DEFINE_integer("steps_per_call", 1, "Training steps in one compiled program (lax.scan over a stack of "
                     "batches of one shape; Transformer-XL's memory carried inside), so the host launches one "
                     "program per that many steps. 1: one step a program.")
flags.DEFINE_enum("cross_entropy", "dense", ["dense", "gather"], "The loss's form: dense (logsumexp minus a "
                  "weighted sum of the logits: no gather, so no scatter in its gradient; the default since "
                  "2026-11-27) or gather (the labels' log-probabilities taken from float32 log-softmax, the form "
                  "before). The same value.")
flags.DEFINE_enum("layer_norm", "keras", ["keras", "fused"], "keras: Keras's LayerNormalization; fused: "
                  "benchmarks/common/fused_layer_norm.py's (one pass for the statistics each way).")
flags.DEFINE_bool("check_attention", False, "Before training, compile layers.MultiHeadAttention's gradient alone "
                  "at base's longest sentences and around FLASH_MIN_KEYS and say which attention each calls.")
flags.DEFINE_bool("write", None, "Write the figures into BENCHMARKS.md (default: on a GPU or TPU, not on a CPU).")
FLAGS = flags.FLAGS

PAD, BOS = 0, 1  # token ids; the others are drawn from [2, vocab_size)


@dataclasses.dataclass(frozen=True)
class Options:
    """How the training step is built (the changes to try): see the flags of the same names."""

    steps_per_call: int = 1
    cross_entropy: str = "dense"
    layer_norm: str = "keras"


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


def attention_choices(p, flash):
    """Which attention layers.MultiHeadAttention's compiled gradient calls (cuDNN's fused attention or XLA's), in
    the current dtype policy with a padding mask as the blocks pass it, at base's longest sentences and around
    FLASH_MIN_KEYS: {keys: {"found": ..., "expected": ...}}. Expected: cuDNN's from FLASH_MIN_KEYS keys on, where
    `flash` (the flash check) says it trains here, XLA's below."""
    import jax
    import numpy as np

    from layers import MultiHeadAttention, multi_head_attention

    threshold = multi_head_attention.FLASH_MIN_KEYS
    longest = -(-p.max_length // 8) * 8  # base's widest batches
    choices = {}
    for keys in sorted(k for k in {longest, threshold - 1, threshold, 200} if k > 0):  # 200: long sentences
        mha = MultiHeadAttention(p.num_heads, p.hidden_dim // p.num_heads)
        mha.build((2, keys, p.hidden_dim), (2, keys, p.hidden_dim))
        x = jax.random.normal(jax.random.key(0), (2, keys, p.hidden_dim), mha.compute_dtype)
        mask = np.ones((2, 1, keys), bool)
        mask[1, :, keys // 2:] = False  # the second sentence ends halfway: padding after
        loss = lambda x: mha(x, x, attention_mask=mask, training=True).astype("float32").sum()  # noqa: E731
        try:
            found = "cuDNN" if "fmha" in jax.jit(jax.grad(loss)).lower(x).compile().as_text() else "XLA"
        except Exception as error:  # noqa: BLE001  a failed check is a finding, not a reason to stop
            found = f"failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        choices[keys] = {"found": found, "expected": "cuDNN" if flash and keys >= threshold else "XLA"}
    return choices


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


def cross_entropy(logits, labels, smoothing, form="dense"):
    """Mean over the real labels (not PAD) of the label-smoothed cross-entropy, in float32. `form`: dense (the
    default: logsumexp(logits) minus the logits weighted by the smoothed target, (1 - smoothing) on the label plus
    smoothing / vocab everywhere; its gradient is elementwise, softmax minus those weights) or gather (the same
    value from the labels' log-probabilities picked from log-softmax, whose gradient scatters into zeros of the
    logits' size)."""
    from keras import ops

    logits = ops.cast(logits, "float32")
    if form == "dense":
        vocab = logits.shape[-1]
        target = (1 - smoothing) * ops.one_hot(labels, vocab, dtype="float32") + smoothing / vocab
        per_token = ops.logsumexp(logits, axis=-1) - ops.sum(logits * target, axis=-1)
    else:
        log_probs = ops.log_softmax(logits, axis=-1)
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


def steps_in_one_call(step, carried=0):
    """`step` run over a stack of batches in one program (`lax.scan`), so the host launches one program for them
    all: every array of the batch has a leading axis of steps but the last `carried` inputs, which the first step
    takes, each later step taking the extras of the step before (Transformer-XL's memories). Returns
    steps(state, batch) -> (the last step's loss, its extras (carried) or (), state)."""
    import jax

    def steps(state, batch):
        split = len(batch["inputs"]) - carried
        stacked = {"inputs": list(batch["inputs"][:split]), "labels": batch["labels"]}

        def one(carry, step_batch):
            state, held = carry
            value, extras, state = step(state, {"inputs": [*step_batch["inputs"], *held],
                                                "labels": step_batch["labels"]})
            if carried:  # the carry keeps its types: the memories as they came in
                held = [e.astype(h.dtype) for e, h in zip(extras, held)]
            return (state, held), value

        (state, held), values = jax.lax.scan(one, (state, list(batch["inputs"][split:])), stacked)
        return values[-1], held if carried else (), state

    return steps


def in_calls(items, k, shape):
    """`items` grouped into calls of up to `k` whose `shape(item)` agree, in the order of each call's first item."""
    open_calls, calls = {}, []
    for item in items:
        call = open_calls.get(shape(item))
        if call is None or len(call) == k:
            call = open_calls[shape(item)] = []
            calls.append(call)
        call.append(item)
    return calls


def stacked(batches):
    """Batches (dicts of arrays and lists of arrays, one structure) as one, each array with a leading axis."""
    import jax
    import numpy as np

    return jax.tree.map(lambda *arrays: np.stack(arrays), *batches)


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


def prepared(model, options):
    """`model` with `options.layer_norm` applied: fused layer norms in place of Keras's."""
    if options.layer_norm == "fused":
        from benchmarks.common.fused_layer_norm import use_fused_layer_norm

        use_fused_layer_norm(model)
    return model


def program_step(model, optimizer, loss, options, carried=0):
    """The step `compile_programs` compiles: one training step, or `steps_in_one_call` of them."""
    step = training_step(model, optimizer, loss)
    return step if options.steps_per_call == 1 else steps_in_one_call(step, carried)


def profiled(program, state, batch, steps_per_call):
    """`device_trace.summary` of about 5 steps of `program` on `batch` (`steps_per_call` steps a call), printed:
    (state, summary)."""
    import tempfile

    from benchmarks.common import device_trace

    calls = max(1, round(5 / steps_per_call))
    with tempfile.TemporaryDirectory() as directory:
        state, wall, untraced = device_trace.traced_steps(program, state, batch, calls, directory)
        try:  # reading the trace back is no reason to lose the figures measured before
            summary = device_trace.summary(directory, calls * steps_per_call, wall / steps_per_call,
                                           untraced / steps_per_call)
        except Exception as error:  # noqa: BLE001
            summary = {"error": f"reading the trace failed: {type(error).__name__}: {error}"}
    print(device_trace.render(summary), flush=True)
    return state, summary


def train_translator(p, rounds, options=Options(), breakdown=False, profile=False):
    """Trains base on the synthetic batches: the figures of its timed rounds (and, with `breakdown`, of
    `step_breakdown` on its commonest batch shape; with `profile`, `device_trace.summary` of about 5 of its
    steps). With `options.steps_per_call` k, each program runs up to k batches of one shape."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    batches = translation_batches(p, rng)
    model, optimizer = prepared(build_translator(p), options), adam(p)
    state = initial_state(model, optimizer)
    loss = lambda logits, batch: (cross_entropy(logits, batch["labels"], 0.1, options.cross_entropy), ())  # noqa: E731
    singles = {batch["labels"].shape: batch for batch, _ in reversed(batches)}  # one batch per bucket
    groups = in_calls(batches, options.steps_per_call, lambda item: item[0]["labels"].shape)
    calls = [stacked([batch for batch, _ in group]) if options.steps_per_call > 1 else group[0][0] for group in groups]
    examples = {call["labels"].shape: call for call in reversed(calls)}  # one call per program
    compiled, compile_seconds, fused = compile_programs(program_step(model, optimizer, loss, options), state,
                                                        list(examples.values()))
    programs = dict(zip(examples, compiled))
    for shape, call in examples.items():  # the warm-up: each program runs once
        value, _, state = programs[shape](state, call)
    calls = [jax.device_put(call) for call in calls]
    config = types.SimpleNamespace(hidden_dim=p.hidden_dim, intermediate_dim=p.intermediate_dim,
                                   num_encoder_layers=p.num_layers, num_decoder_layers=p.num_layers)
    multiply_adds = sum(costs.seq2seq_multiply_adds(config, n, n, p.vocab_size) for _, ls in batches for n in ls)
    tokens = sum(2 * int(ls.sum()) for _, ls in batches)  # each pair's source tokens and decoder positions
    padded = sum(2 * batch["labels"].size for batch, _ in batches)
    times, losses = [], [float(value)]
    for _ in range(rounds):
        began = time.perf_counter()
        for call in calls:
            value, _, state = programs[call["labels"].shape](state, call)
        losses.append(float(value))  # waits for the round's last step
        times.append(time.perf_counter() - began)
    extra = {}
    commonest = collections.Counter(batch["labels"].shape for batch, _ in batches).most_common(1)[0][0]
    if profile:
        key = max(examples, key=lambda shape: (shape[-1] == commonest[-1], shape))  # the commonest width's call
        per_call = key[0] if options.steps_per_call > 1 else 1
        state, extra["profile"] = profiled(programs[key], state, jax.device_put(examples[key]), per_call)
    if breakdown:
        extra["breakdown"] = step_breakdown(model, optimizer, loss, state, singles[commonest])
    return figures(times, tokens, costs.training_flops(multiply_adds), losses, compile_seconds, fused,
                   steps=len(batches), calls=len(calls), shapes=len(programs), real_share=tokens / padded, **extra)


def train_transformer_xl(p, rounds, options=Options()):
    """Trains txl on a synthetic stream (a random sequence of 600 tokens repeated, so the memory can help),
    its memory carried across steps: the figures of its timed rounds. With `options.steps_per_call` k, each
    program runs up to k segments, the memory carried inside."""
    import jax
    import numpy as np

    rng = np.random.default_rng(0)
    period = rng.integers(BOS + 1, p.vocab_size, size=600)
    offsets = rng.integers(0, 600, size=p.batch_size)
    steps = p.txl_steps
    positions = np.arange(steps * p.segment_length + 1)
    stream = period[(positions[None, :] + offsets[:, None]) % 600].astype("int32")  # (batch, steps * segment + 1)
    segments = [(stream[:, i * p.segment_length : (i + 1) * p.segment_length],
                 stream[:, i * p.segment_length + 1 : (i + 1) * p.segment_length + 1]) for i in range(steps)]
    if options.steps_per_call > 1:  # (tokens, labels), each (segments, batch, segment_length)
        segments = [tuple(np.stack(side) for side in zip(*call))
                    for call in in_calls(segments, options.steps_per_call, lambda segment: ())]
    segments = [jax.device_put(segment) for segment in segments]
    model, optimizer = prepared(build_transformer_xl(p), options), adam(p)
    state = initial_state(model, optimizer)
    memories = [jax.numpy.zeros((p.batch_size, p.memory_length, p.hidden_dim), "bfloat16")] * p.num_layers

    def loss(outputs, batch):
        logits, *new_memories = outputs
        return cross_entropy(logits, batch["labels"], 0.0, options.cross_entropy), new_memories

    batch = lambda segment, memories: {"inputs": [segment[0], *memories], "labels": segment[1]}  # noqa: E731
    examples = {segment[0].shape: batch(segment, memories) for segment in reversed(segments)}
    compiled, compile_seconds, fused = compile_programs(
        program_step(model, optimizer, loss, options, carried=p.num_layers), state, list(examples.values())
    )
    programs = dict(zip(examples, compiled))
    for shape, example in examples.items():  # the warm-up: each program runs once
        value, memories, state = programs[shape](state, example)
    times, losses = [], [float(value)]
    for _ in range(rounds):
        began = time.perf_counter()
        for segment in segments:
            value, memories, state = programs[segment[0].shape](state, batch(segment, memories))
        losses.append(float(value))
        times.append(time.perf_counter() - began)
    keys = p.segment_length + p.memory_length
    multiply_adds = costs.multiply_adds(p, p.segment_length, keys, p.segment_length, p.vocab_size)
    tokens = p.batch_size * p.segment_length * steps
    return figures(times, tokens, costs.training_flops(multiply_adds) * p.batch_size * steps, losses,
                   compile_seconds, fused, steps=steps, calls=len(segments), shapes=len(programs), real_share=1.0)


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
    changed = {k: v for k, v in results["options"].items() if v != getattr(Options(), k)}
    if changed:
        lines += ["", "Changes from the plain step: " + ", ".join(f"`--{k}={v}`" for k, v in changed.items()) + "."]
    if results.get("attention"):
        lines += ["", "Attention at each key length (layers.MultiHeadAttention alone, FLASH_MIN_KEYS="
                  f"{results['flash_min_keys_used']}): " + ", ".join(
                      f"{keys}: {c['found']}" + ("" if c["found"] == c["expected"] else f" (expected {c['expected']})")
                      for keys, c in results["attention"].items()) + "."]
    profile = results["models"].get("base", {}).get("profile")
    if profile and "error" not in profile:
        kinds = ", ".join(f"{k} {ms:.1f}" for k, ms in profile["kinds_ms"].items())
        lines += ["", f"base's profile (one step of its commonest width): {profile['wall_ms']:.1f} ms traced "
                  f"({profile['untraced_ms']:.1f} untraced), the device busy {profile['busy_ms']:.1f} ms over "
                  f"{profile['kernels_per_step']:.0f} kernels; idle {profile['idle_short_ms']:.1f} ms in gaps under "
                  f"20 us, {profile['idle_long_ms']:.1f} ms in longer ones; ms by kind: {kinds}."]
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


def write_json(results):
    """The figures so far into --json's file, if given."""
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump(results, f, indent=1)


def median(values):
    return sorted(values)[len(values) // 2]


def main(argv):
    del argv
    quick.shrink(preset="tiny", models=["base"], rounds=1, peak_seconds=0.2)
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
    if FLAGS.steps_per_call < 1:
        raise SystemExit(f"--steps_per_call={FLAGS.steps_per_call}: give 1 or more steps a program.")
    options = Options(FLAGS.steps_per_call, FLAGS.cross_entropy, FLAGS.layer_norm)
    if not FLAGS.flash_attention:
        flash, reason = False, "turned off (--noflash_attention)"
    else:
        flash, reason = flash_attention_trains() if device.platform == "gpu" else (False, "not a GPU")
    if not flash:
        keras.config.disable_flash_attention()  # the XLA attention, set before any layer reads the setting
    print(f"{device.device_kind}: preset {preset}; flash attention: {flash} ({reason})", flush=True)
    results = {"device": device.device_kind, "jax": jax.__version__, "keras": keras.__version__, "preset": preset,
               "changed": FLAGS.set, "flash_min_keys": FLAGS.flash_min_keys, "xla_flags": os.environ.get("XLA_FLAGS"),
               "matmul_size": p.matmul_size, "flash_check": reason, "options": dataclasses.asdict(options),
               "compilation_cache": os.environ.get("JAX_COMPILATION_CACHE_DIR"), "models": {}}
    results["peak_flops"] = matmul_peak(p.matmul_size, FLAGS.peak_seconds)
    print(f"bfloat16 matmul peak: {results['peak_flops'] / 1e12:.3g} TFLOP/s", flush=True)
    keras.config.set_dtype_policy("mixed_bfloat16")
    from layers import multi_head_attention

    if FLAGS.flash_min_keys is not None:
        multi_head_attention.FLASH_MIN_KEYS = FLAGS.flash_min_keys
    if FLAGS.check_attention:
        results["flash_min_keys_used"] = multi_head_attention.FLASH_MIN_KEYS
        results["attention"] = attention_choices(p, flash)
        for keys, choice in results["attention"].items():
            expected = choice["expected"]
            verdict = "as expected" if choice["found"] == expected else f"NOT {expected} AS EXPECTED"
            print(f"attention check: {keys} keys -> {choice['found']}, {verdict}", flush=True)
        write_json(results)
    train = {"base": lambda p, rounds: train_translator(p, rounds, options, FLAGS.breakdown, FLAGS.profile),
             "txl": lambda p, rounds: train_transformer_xl(p, rounds, options)}
    for name in FLAGS.models:
        keras.utils.set_random_seed(0)
        try:
            results["models"][name] = r = train[name](p, FLAGS.rounds)
        except Exception as error:  # cuDNN refusing these shapes, which the small check did not show
            if not flash or not any(word in str(error).lower() for word in ("cudnn", "fmha", "flash")):
                raise
            flash, why = False, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            print(f"{name} failed with flash attention ({why}); again with XLA's attention", flush=True)
            results["flash_check"] += f"; {name} failed with it ({why}) and ran with XLA's attention"
            keras.config.disable_flash_attention()
            keras.utils.set_random_seed(0)
            results["models"][name] = r = train[name](p, FLAGS.rounds)
        print(f"{name}: {r['tokens_per_second']:,.0f} tokens/s, {r['flops_per_second'] / results['peak_flops']:.1%} "
              f"of the peak; compiled in {r['compile_seconds']:.0f} s; losses {r['losses']}", flush=True)
        write_json(results)  # after each model, so that a run cut short keeps what it measured
    xla_flags = f"XLA_FLAGS={os.environ['XLA_FLAGS']} " if os.environ.get("XLA_FLAGS") else ""
    body = section(results, f"{xla_flags}KERAS_BACKEND=jax {command_line()}")
    print(body, flush=True)
    if quick.active() or (accelerated if FLAGS.write is None else FLAGS.write):
        write_section("GPU (JAX backend)", body)


if __name__ == "__main__":
    app.run(main)
