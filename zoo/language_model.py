"""Transformer-XL language model: relative attention and segment-level memory.

Each layer keeps the last `memory_length` of its inputs as memory (under
stop-gradient) and the next segment attends over [memory; segment]. The
memory has a fixed size, with a boolean `valid` mask over its positions
(False after a reset or before a short prompt), so shapes stay static for
tf.function, XLA and the training loop. Evaluation and generation carry the
same state instead of recomputing the context.
"""

import dataclasses
import math
import weakref

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from layers import TransformerXLBlock, look_ahead_mask
from layers.dropout import Dropout
from zoo import checks, decoding
from zoo.optimization import smoothed_cross_entropy


@dataclasses.dataclass(frozen=True)
class LMConfig:
    vocab_size: int = 10000
    hidden_dim: int = 256
    num_heads: int = 4
    intermediate_dim: int = 1024
    num_layers: int = 4
    segment_length: int = 64  # tokens per training segment
    memory_length: int = 64  # cached positions per layer
    clamp_length: int | None = None  # relative distances beyond this share one encoding
    same_length: bool = False  # every query sees the same number of keys (memory_length + 1)
    dropout: float = 0.1
    attention_dropout: float | None = None  # on attention probabilities (Dai et al.'s dropatt); None: dropout
    tie_embeddings: bool = True
    norm_first: bool = False
    activation: str = "relu"

    def __post_init__(self):
        checks.positive(self, "vocab_size", "hidden_dim", "num_heads", "intermediate_dim", "num_layers",
                        "segment_length", "clamp_length")
        checks.non_negative(self, "memory_length")
        checks.rates(self, "dropout", "attention_dropout")
        checks.divisible(self)


PRESETS = {
    "tiny": LMConfig(hidden_dim=64, num_heads=2, intermediate_dim=128, num_layers=2, segment_length=16, memory_length=16),
    "small": LMConfig(),
    # Twice small's width, for word-level PTB with dropout and weight decay (BENCHMARKS.md's PTB section).
    "medium": LMConfig(hidden_dim=512, num_heads=8, intermediate_dim=2048),
    # Dai et al.'s base models: enwik8 (12 layers) and WikiText-103 (16 layers, 410 hidden).
    "base": LMConfig(
        hidden_dim=512,
        num_heads=8,
        intermediate_dim=2048,
        num_layers=12,
        segment_length=512,
        memory_length=512,
        clamp_length=None,
    ),
    "base_wt103": LMConfig(
        hidden_dim=410,
        num_heads=10,
        intermediate_dim=2100,
        num_layers=16,
        segment_length=150,
        memory_length=150,
    ),
}


class TransformerXL(keras.Model):
    """token_ids (batch, T), state -> (logits (batch, T, vocab) float32, new state).

    `state` is (memories, valid): one (batch, memory_length, hidden) memory
    per layer and a bool (batch, memory_length) mask of the positions that
    hold real tokens; `initial_state(batch)` is the empty state.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = c = config
        self.embedding = keras_hub.layers.ReversibleEmbedding(
            c.vocab_size,
            c.hidden_dim,
            tie_weights=c.tie_embeddings,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=c.hidden_dim**-0.5),
            name="embedding",
        )
        self.embedding_dropout = Dropout(c.dropout)
        self.blocks = [
            TransformerXLBlock(
                c.num_heads,
                c.intermediate_dim,
                c.memory_length,
                dropout=c.dropout,
                attention_dropout=c.attention_dropout,
                activation=c.activation,
                norm_first=c.norm_first,
                clamp_length=c.clamp_length,
                name=f"layer_{i}",
            )
            for i in range(c.num_layers)
        ]
        for layer in self.blocks:  # tf.train.Checkpoint does not see layers inside Keras-tracked lists
            setattr(self, layer.name, layer)
        self.final_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="final_norm") if c.norm_first else None
        self.output_dropout = Dropout(c.dropout)

    def initial_state(self, batch):
        c = self.config
        memories = [tf.zeros([batch, c.memory_length, c.hidden_dim], self.compute_dtype) for _ in self.blocks]
        return memories, tf.zeros([batch, c.memory_length], tf.bool)

    def position_keys(self, length):
        """Each layer's projected relative encodings for segments of `length` tokens (the key
        length is memory_length + length): computed once, passed to many calls of that length."""
        c = self.config
        return [block.attention.position_keys(c.memory_length + length, c.hidden_dim) for block in self.blocks]

    def call(self, token_ids, state=None, real=None, training=None, position_keys=None, logits_to_keep=None):
        """`real`: optional bool (batch, T), False on (left) padding of the input.
        `position_keys`: optional `self.position_keys(T)`.
        `logits_to_keep`: optional int; logits of the last this many positions only (a scorer
        that needs a few positions skips the vocabulary projection of the others)."""
        c = self.config
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        memories, valid = self.initial_state(batch) if state is None else state
        real = tf.ones([batch, length], tf.bool) if real is None else real
        keys, mask = self._keys_and_mask(valid, real, length)
        x = self.embedding(token_ids) * tf.cast(math.sqrt(c.hidden_dim), self.compute_dtype)
        x = self.embedding_dropout(x, training=training)
        new_memories = []
        position_keys = position_keys or [None] * len(self.blocks)
        for block, memory, position in zip(self.blocks, memories, position_keys):
            x, memory = block(x, memory, attention_mask=mask, training=training, position_keys=position)
            new_memories.append(memory)
        if self.final_norm is not None:
            x = self.final_norm(x)
        x = self.output_dropout(x, training=training)
        if logits_to_keep is not None:
            x = x[:, -logits_to_keep:]
        logits = tf.cast(self.embedding(x, reverse=True), tf.float32)
        # Static shapes, so the state can be a loop variable in graph mode.
        new_memories = [tf.ensure_shape(m, [None, c.memory_length, c.hidden_dim]) for m in new_memories]
        valid = tf.ensure_shape(keys[:, tf.shape(keys)[1] - c.memory_length :], [None, c.memory_length])
        return logits, (new_memories, valid)

    def _keys_and_mask(self, valid, real, length):
        """Which of the M + T keys hold real tokens (batch, M + T), and the attention mask."""
        c = self.config
        keys = tf.concat([valid, real], axis=1)
        mask = keys[:, None, :]
        if c.same_length and c.memory_length:  # without memory every query keeps its whole past
            mask = tf.logical_and(mask, look_ahead_mask(length, c.memory_length, window=c.memory_length + 1)[None])
        return keys, mask

    def keys_values_state(self, state):
        """The state for `step`: each layer's memory as its attention's keys and values."""
        memories, valid = state
        return [block.memory_keys_values(m) for block, m in zip(self.blocks, memories)], valid

    def step(self, token_ids, state, position_keys=None):
        """`call` (inference) over a `keys_values_state`: each layer projects only the new
        positions instead of its whole memory. Returns (logits, the next such state)."""
        c = self.config
        keys_values, valid = state
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        keys, mask = self._keys_and_mask(valid, tf.ones([batch, length], tf.bool), length)
        x = self.embedding(token_ids) * tf.cast(math.sqrt(c.hidden_dim), self.compute_dtype)
        position_keys = position_keys or [None] * len(self.blocks)
        new_keys_values = []
        shape = [None, c.num_heads, c.memory_length, c.hidden_dim // c.num_heads]  # head-major
        for block, cache, position in zip(self.blocks, keys_values, position_keys):
            x, cache = block.step(x, cache, attention_mask=mask, position_keys=position)
            new_keys_values.append(tuple(tf.ensure_shape(t, shape) for t in cache))
        if self.final_norm is not None:
            x = self.final_norm(x)
        logits = tf.cast(self.embedding(x, reverse=True), tf.float32)
        valid = tf.ensure_shape(keys[:, tf.shape(keys)[1] - c.memory_length :], [None, c.memory_length])
        return logits, (new_keys_values, valid)

    def get_config(self):
        return {"config": dataclasses.asdict(self.config), "name": self.name}


def build_language_model(config):
    model = TransformerXL(config, name="transformer_xl")
    model(tf.ones([1, config.segment_length], tf.int32))
    return model


def with_memory_length(config, memory_length):
    """The same model (same weights) keeping a different number of positions in memory."""
    return dataclasses.replace(config, memory_length=memory_length)


# --- streams ------------------------------------------------------------------------------------------


def stream_layout(ids, num_streams):
    """The corpus as `num_streams` contiguous rows (the tail that does not fill a row is dropped):
    (num_streams, n) int32. Row r continues where row r - 1's text ends."""
    ids = np.asarray(ids, np.int32)
    per_stream = len(ids) // num_streams
    if per_stream < 2:
        raise ValueError(f"{len(ids)} tokens are too few for {num_streams} streams: use a smaller --batch_size.")
    return ids[: per_stream * num_streams].reshape(num_streams, per_stream)


def segments_per_pass(streams, segment_length, random_offset=False):
    """Segments of `segment_length` (plus the next token, the last label) a pass reads from each
    stream; with `random_offset`, at most one fewer, since a pass may start up to segment_length - 1 in."""
    spare = segment_length - 1 if random_offset else 0
    return (streams.shape[1] - 1 - spare) // segment_length


def pass_offset(seed, pass_index, segment_length):
    """Where in every stream pass `pass_index` starts: uniform in [0, segment_length), a function
    of (seed, pass_index) alone, so a resumed run reads the same segments."""
    seed = tf.stack([tf.cast(seed, tf.int64), tf.cast(pass_index, tf.int64)])
    return tf.random.stateless_uniform([], seed, maxval=segment_length, dtype=tf.int32)


def stream_dataset(streams, segment_length, replicas, first_replica, num_local, start_step, steps, offset_seed=None):
    """Per-replica batches for training: step s feeds segment s % per_pass of every stream.

    Replica r owns streams [r * b, (r + 1) * b) of the global batch (b = streams / replicas),
    so each replica's memory always belongs to its own streams. Elements come step-major,
    one per local replica, as `distribute_datasets_from_function` expects; `reset` is True
    on the first segment of every pass (the memory starts empty).

    With `offset_seed`, every pass starts at `pass_offset(offset_seed, pass, segment_length)`
    in all streams, so segment boundaries (and the memory each token sees) differ between
    passes: over many passes of a small corpus the model does not see the same segments again
    (the idea of AWD-LSTM's variable BPTT length). Within a pass the streams stay contiguous.
    """
    random_offset = offset_seed is not None
    per_pass = segments_per_pass(streams, segment_length, random_offset)
    if per_pass < 1:
        raise ValueError("The corpus is shorter than one segment per stream"
                         + (" and its random offset" if random_offset else "")
                         + ": lower --batch_size or --segment_length.")
    per_replica = streams.shape[0] // replicas
    table = tf.constant(streams)

    def element(i):
        step, local = i // num_local, i % num_local
        replica = first_replica + tf.cast(local, tf.int32)
        segment = tf.cast(step % per_pass, tf.int32)
        rows = table[replica * per_replica : (replica + 1) * per_replica]
        begin = segment * segment_length
        if random_offset:
            begin += pass_offset(offset_seed, step // per_pass, segment_length)
        window = tf.ensure_shape(rows[:, begin : begin + segment_length + 1], [per_replica, segment_length + 1])
        return {"inputs": window[:, :-1], "labels": window[:, 1:], "reset": tf.equal(segment, 0)}

    dataset = tf.data.Dataset.range(start_step * num_local, steps * num_local).map(element)
    return dataset.prefetch(4)


# --- training and evaluation --------------------------------------------------------------------------


def reset_state(state, reset):
    """The empty memory where a pass starts, else `state`."""
    memories, valid = state
    return memories, tf.logical_and(valid, tf.logical_not(reset))


def lm_loss(label_smoothing=0.0):
    """The stateful Task.loss: (model, batch, training, state) -> (loss_sum, weight, tokens, state)."""

    def loss(model, batch, training, state):
        logits, state = model(batch["inputs"], reset_state(state, batch["reset"]), training=training)
        losses = smoothed_cross_entropy(batch["labels"], logits, label_smoothing)
        count = tf.size(losses)
        return tf.reduce_sum(losses), count, tf.cast(count, tf.int64), state

    return loss


_COMPILED = weakref.WeakKeyDictionary()  # model -> {key: tf.function}


def compiled(model, key, function, **options):
    """`tf.function` of `function(model, *args)` over `*args`, made once per (model, key):
    evaluating or generating again with the same model does not trace again. A key names one
    function and its options (a later call with the same key gets the first one). It holds
    the model weakly, so the cache entry goes with the model."""
    functions = _COMPILED.setdefault(model, {})
    if key not in functions:
        owner = weakref.ref(model)

        def call(*args):
            if owner() is None:
                raise RuntimeError(f"The model of compiled function {key!r} no longer exists.")
            return function(owner(), *args)

        functions[key] = tf.function(call, **options)
    return functions[key]


def evaluate_streams(model, streams, segment_length, progress=None, use_memory=True):
    """Summed negative log-likelihood (nats) and token count over the stream layout, carrying
    the memory from segment to segment (or, with use_memory=False, starting each segment empty).
    The memory is kept as each layer's keys and values (`model.step`): a segment projects only
    its own positions, and the position keys are computed once."""
    step = compiled(model, "nll", _nll)
    keys = model.position_keys(segment_length)  # every segment has the same key length
    empty = model.keys_values_state(model.initial_state(streams.shape[0]))
    state = empty
    total, count = 0.0, 0
    per_pass = segments_per_pass(streams, segment_length)
    for s in range(per_pass):
        window = streams[:, s * segment_length : (s + 1) * segment_length + 1]
        if not use_memory:
            state = empty
        nll, state = step(window[:, :-1], window[:, 1:], state, keys)
        total, count = total + float(nll), count + window[:, 1:].size
        if progress:
            progress.update(s + 1)
    return total, count


def _nll(model, inputs, labels, state, position_keys):
    logits, state = model.step(inputs, state, position_keys=position_keys)
    return tf.reduce_sum(smoothed_cross_entropy(labels, logits)), state


def evaluate_sliding_window(model, streams, segment_length, context, progress=None):
    """The vanilla evaluation: each segment scored after recomputing `context` - segment_length
    earlier tokens from scratch (no memory). Same NLL bookkeeping as `evaluate_streams`.
    segment_length=1 is Al-Rfou et al.'s evaluation (one prediction per window). Give it a model
    with memory_length 0: a memory would only add masked positions to every window."""
    keys = model.position_keys(context)  # every window has the same length
    step = compiled(model, ("window_nll", segment_length), lambda *args: _window_nll(*args, segment_length))
    history = context - segment_length
    total, count = 0.0, 0
    per_pass = segments_per_pass(streams, segment_length)
    for s in range(per_pass):
        begin = s * segment_length
        first = max(0, begin - history)
        window = streams[:, first : begin + segment_length + 1]
        pad = history - (begin - first)
        inputs = np.pad(window[:, :-1], [[0, 0], [pad, 0]])
        labels = np.pad(window[:, 1:], [[0, 0], [pad, 0]])
        real = np.pad(np.ones_like(window[:, :-1], bool), [[0, 0], [pad, 0]])
        total += float(step(inputs, labels, real, keys))
        count += streams.shape[0] * segment_length
        if progress:
            progress.update(s + 1)
    return total, count


def _window_nll(model, inputs, labels, real, position_keys, segment_length):
    logits, _ = model(inputs, real=real, position_keys=position_keys, logits_to_keep=segment_length)
    losses = smoothed_cross_entropy(labels[:, -segment_length:], logits)
    return tf.reduce_sum(losses)


# --- generation -------------------------------------------------------------------------------------


def left_padded(ragged, multiple):
    """A ragged (batch, None) int tensor as dense rows aligned to the right, width a multiple of
    `multiple` (at least one); with the mask of the real positions."""
    lengths = tf.cast(ragged.row_lengths(), tf.int32)
    width = tf.maximum((tf.reduce_max(lengths) + multiple - 1) // multiple * multiple, multiple)
    dense = ragged.to_tensor(0)
    # Reverse each row's real tokens, then the whole row: the tokens end up at the right, in order.
    aligned = tf.reverse(tf.reverse_sequence(dense, lengths, seq_axis=1, batch_axis=0), axis=[1])
    tokens = tf.pad(aligned, [[0, 0], [width - tf.shape(dense)[1], 0]])
    real = tf.range(width)[None, :] >= (width - lengths)[:, None]
    return tokens, real


def read_context(model, token_ids, real):
    """Feeds left-padded context tokens (batch, n * segment_length) through the model one
    segment at a time, as in training; returns the state and every position's logits."""
    c = model.config
    batch = tf.shape(token_ids)[0]
    count = tf.shape(token_ids)[1] // c.segment_length
    logits = tf.TensorArray(tf.float32, size=count, infer_shape=False)
    keys = model.position_keys(c.segment_length)

    def body(i, state, logits):
        begin = i * c.segment_length
        segment_logits, state = model(
            token_ids[:, begin : begin + c.segment_length], state, real[:, begin : begin + c.segment_length],
            position_keys=keys,
        )
        return i + 1, state, logits.write(i, segment_logits)

    _, state, logits = tf.while_loop(
        lambda i, *_: i < count, body, (tf.constant(0), model.initial_state(batch), logits)
    )
    stacked = logits.stack()  # (count, batch, T, vocab)
    stacked = tf.transpose(stacked, [1, 0, 2, 3])
    return state, tf.reshape(stacked, [batch, count * c.segment_length, -1])


def prompt_ids(vocabulary, texts):
    """Ragged ids of prompt texts, each after a boundary token (<eos> or a newline), so an
    empty prompt starts at a sentence or line boundary."""
    ids = vocabulary.tokenize(texts)
    boundary = tf.fill([tf.shape(texts)[0], 1], tf.constant(vocabulary.boundary_id, ids.dtype))
    return tf.concat([boundary, ids], axis=1)


def generate(model, prompts, max_new_tokens, temperature=1.0, top_k=0, top_p=1.0, greedy=False, seed=(0, 0)):
    """Continuations of ragged prompt ids (batch, None), each at least one token, in graph.

    The prompt but its last token is read segment by segment into the memory; then each new
    token is one model step over the cached states. Returns int32 (batch, max_new_tokens).
    """
    last = tf.gather(prompts.values, prompts.row_limits() - 1)
    context, real = left_padded(prompts[:, :-1], model.config.segment_length)
    state, _ = read_context(model, context, real)
    # Each step attends from one token over a fixed-size memory: the position keys are computed
    # once, and the memory is kept as its keys and values (each step projects only its token).
    state = model.keys_values_state(state)
    keys = model.position_keys(1)

    def step(token_ids, index, state):
        del index  # positions are relative: the memory is all the model needs
        logits, state = model.step(token_ids[:, None], state, position_keys=keys)
        return logits[:, 0], state

    if greedy:
        tokens, _ = decoding.greedy(step, state, last, max_new_tokens, end_id=-1)
    else:
        tokens, _ = decoding.sample(step, state, last, max_new_tokens, -1, top_k, top_p, temperature, seed)
    return tokens


def generate_recomputing(model, prompt_ids, max_new_tokens):
    """Greedy continuation of one dense prompt batch that recomputes the whole context (no
    memory, no cache) for every new token: the reference `generate` is compared with."""
    ids = tf.convert_to_tensor(prompt_ids, tf.int32)
    # One graph for every length (as a compiled baseline would be), not one trace per length.
    forward = compiled(model, "forward", lambda m, x: m(x)[0], input_signature=[tf.TensorSpec([None, None], tf.int32)])
    out = []
    for _ in range(max_new_tokens):
        logits = forward(ids)
        token = tf.argmax(logits[:, -1], axis=-1, output_type=tf.int32)
        out.append(token)
        ids = tf.concat([ids, token[:, None]], axis=1)
    return tf.stack(out, axis=1)


def score_texts(model, vocabulary, texts):
    """Per-text summed log-likelihood (nats) and token count, each text read after a boundary
    token (<eos> or a newline), segment by segment with memory."""
    ids = vocabulary.tokenize(texts)
    boundary = tf.fill([tf.shape(texts)[0], 1], tf.constant(vocabulary.boundary_id, ids.dtype))
    tokens, real = left_padded(tf.concat([boundary, ids], axis=1), model.config.segment_length)
    tokens, real = tf.pad(tokens, [[0, 0], [1, 0]]), tf.pad(real, [[0, 0], [1, 0]])
    scored = tf.logical_and(real[:, :-1], real[:, 1:])  # a real token predicting a real token
    _, logits = read_context(model, tokens[:, :-1], real[:, :-1])
    log_probs = -smoothed_cross_entropy(tokens[:, 1:], logits)
    log_likelihood = tf.reduce_sum(tf.where(scored, log_probs, 0.0), axis=1)
    return log_likelihood, tf.reduce_sum(tf.cast(scored, tf.int32), axis=1)


class LanguageModelServer(tf.Module):
    """Prompt in, continuation out (`serving_default`, `generate`), and `score`; core ops only."""

    def __init__(self, model, vocabulary, max_new_tokens=100, temperature=1.0, top_k=40, limit=2048):
        super().__init__()
        self.model = model
        self.vocabulary = vocabulary
        self.table = vocabulary.lookup_table()
        self.defaults = (max_new_tokens, temperature, top_k)
        self.limit = limit

    def _generate(self, prompt, max_new_tokens, temperature, top_k, seed):
        argument_checks = [
            tf.debugging.assert_positive(max_new_tokens, message="max_new_tokens must be positive"),
            tf.debugging.assert_less_equal(max_new_tokens, self.limit, message=f"max_new_tokens must be <= {self.limit}"),
            tf.debugging.assert_positive(temperature, message="temperature must be positive"),
            tf.debugging.assert_non_negative(top_k, message="top_k must be non-negative (0 = the whole vocabulary)"),
        ]
        with tf.control_dependencies(argument_checks):  # checked before any of the search runs, on every call
            max_new_tokens = tf.identity(max_new_tokens)
        tokens = generate(
            self.model, prompt_ids(self.vocabulary, prompt), max_new_tokens, temperature, top_k, seed=tf.stack([seed, 0])
        )
        return {"continuation": self.vocabulary.detokenize(tokens)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="prompt")])
    def serve(self, prompt):
        max_new_tokens, temperature, top_k = self.defaults
        return self._generate(prompt, tf.constant(max_new_tokens), tf.constant(temperature), tf.constant(top_k), 0)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="prompt"),
            tf.TensorSpec([], tf.int32, name="max_new_tokens"),
            tf.TensorSpec([], tf.float32, name="temperature"),
            tf.TensorSpec([], tf.int32, name="top_k"),
            tf.TensorSpec([], tf.int32, name="seed"),
        ]
    )
    def generate(self, prompt, max_new_tokens, temperature, top_k, seed):
        return self._generate(prompt, max_new_tokens, temperature, top_k, seed)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def score(self, text):
        log_likelihood, count = score_texts(self.model, self.vocabulary, text)
        perplexity = tf.exp(-log_likelihood / tf.cast(tf.maximum(count, 1), tf.float32))
        return {"log_likelihood": log_likelihood, "tokens": count, "perplexity": perplexity}
