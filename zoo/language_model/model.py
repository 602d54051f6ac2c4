"""Transformer-XL language model: relative attention and segment-level memory.

Each layer keeps the last `memory_length` of its inputs as memory (under stop-gradient) and the next segment attends
over [memory; segment]. The memory has a fixed size, with a boolean `valid` mask over its positions (False after a
reset or before a short prompt), so shapes stay static for tf.function, XLA and the training loop. Evaluation and
generation carry the same state instead of recomputing the context.

This module holds the config, presets, model and loss; the text to ids rules are in
`zoo.language_model.preprocessor`, evaluation, scoring and generation in `zoo.language_model.inference`, the TF
Serving module in `zoo.language_model.server`."""

import dataclasses
import math

import keras
import keras_hub
import tensorflow as tf

from layers import TransformerXLBlock, look_ahead_mask
from layers.dropout import Dropout
from layers.feed_forward import ACTIVATIONS
from zoo.core import checks
from zoo.training.losses import smoothed_cross_entropy


@dataclasses.dataclass(frozen=True)
class LMConfig:
    vocab_size: int = 10000  # token ids; a run sets it to its vocabulary's size (see data.vocab_size)
    hidden_dim: int = 256  # width of every hidden state and embedding (model dimension)
    num_heads: int = 4  # attention heads per layer; must divide hidden_dim
    intermediate_dim: int = 1024  # inner width of each block's feed-forward network
    num_layers: int = 4  # Transformer-XL blocks, each with its own memory
    segment_length: int = 64  # tokens per training segment
    memory_length: int = 64  # cached positions per layer
    clamp_length: int | None = None  # relative distances beyond this share one encoding
    same_length: bool = False  # every query sees the same number of keys (memory_length + 1)
    dropout: float = 0.1  # rate on embeddings, feed-forward activations, sub-layer outputs and final states
    attention_dropout: float | None = None  # on attention probabilities (Dai et al.'s dropatt); None: dropout
    tie_embeddings: bool = True  # the output projection is the token embedding matrix
    norm_first: bool = False  # pre-norm (LayerNorm before each sub-layer, and a final one); False: post-norm
    activation: str = "relu"  # the feed-forward's: relu, gelu, silu ... (layers.feed_forward.ACTIVATIONS)
    embedding_dim: int | None = None  # the token embedding's width (None: hidden_dim); projected to and from it
    # Word vectors (docs/word_vectors.md), at data.level=word: the vocabulary's rows start from this file.
    word_vectors: str | None = None  # a GloVe, word2vec or fastText .vec file (plain or .gz); sets embedding_dim
    freeze_word_vectors: bool = False  # keep the token embedding (tied: the output's too) as the vectors give it
    min_vector_coverage: float = 0.2  # refuse vectors covering less than this share of the training tokens

    def __post_init__(self):
        checks.positive(self, "vocab_size", "hidden_dim", "num_heads", "intermediate_dim", "num_layers",
                        "segment_length", "clamp_length", "embedding_dim")
        checks.non_negative(self, "memory_length")
        checks.rates(self, "dropout", "attention_dropout")
        checks.divisible(self)
        checks.one_of(self, "activation", ACTIVATIONS)
        checks.word_vectors(self, "word_vectors")

    def with_words(self, plan):
        """This config with a word plan's (zoo.data.word_embedding.WordPlan) vectors' width as embedding_dim
        (projected to hidden_dim when they differ)."""
        return dataclasses.replace(self, embedding_dim=plan.embedding_dim(
            self.embedding_dim, "model.embedding_dim", f"model.hidden_dim={self.hidden_dim}"))


PRESETS = {
    "tiny": LMConfig(hidden_dim=64, num_heads=2, intermediate_dim=128, num_layers=2, segment_length=16,
                     memory_length=16),
    "small": LMConfig(),
    # Twice small's width, for word-level PTB with dropout and weight decay (BENCHMARKS.md's PTB section).
    "medium": LMConfig(hidden_dim=512, num_heads=8, intermediate_dim=2048),
    # Dai et al.'s base models: enwik8 (12 layers) and WikiText-103 (16 layers, 410 hidden).
    "base": LMConfig(hidden_dim=512, num_heads=8, intermediate_dim=2048, num_layers=12, segment_length=512,
                     memory_length=512, clamp_length=None),
    "base_wt103": LMConfig(hidden_dim=410, num_heads=10, intermediate_dim=2100, num_layers=16, segment_length=150,
                           memory_length=150),
}


class TransformerXL(keras.Model):
    """token_ids (batch, T), state -> (logits (batch, T, vocab) float32, new state).

    `state` is (memories, valid): one (batch, memory_length, hidden) memory per layer and a bool (batch,
    memory_length) mask of the positions that hold real tokens; `initial_state(batch)` is the empty state.

    An embedding narrower or wider than hidden_dim (config.embedding_dim: word vectors' width) is factorized
    as ALBERT's and ELECTRA's are: tokens -> embedding_dim -> Dense -> hidden_dim, and before the tied output
    hidden_dim -> Dense -> embedding_dim -> the reversed embedding."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = c = config
        width = c.embedding_dim or c.hidden_dim
        self.embedding = keras_hub.layers.ReversibleEmbedding(
            c.vocab_size, width, tie_weights=c.tie_embeddings,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=width**-0.5), name="embedding")
        self.embedding_projection = self.output_projection = None
        if width != c.hidden_dim:
            self.embedding_projection = keras.layers.Dense(c.hidden_dim, name="embedding_projection")
            self.output_projection = keras.layers.Dense(width, name="output_projection")
        self.embedding_dropout = Dropout(c.dropout)
        self.blocks = [
            TransformerXLBlock(c.num_heads, c.intermediate_dim, c.memory_length, dropout=c.dropout,
                               attention_dropout=c.attention_dropout, activation=c.activation,
                               norm_first=c.norm_first, clamp_length=c.clamp_length, name=f"layer_{i}")
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

    def call(self, token_ids, state=None, is_token=None, training=None, position_keys=None, logits_to_keep=None):
        """`is_token`: optional bool (batch, T), False on (left) padding of the input. `position_keys`: optional
        `self.position_keys(T)`. `logits_to_keep`: optional int; logits of the last this many positions only (a scorer
        that needs a few positions skips the vocabulary projection of the others)."""
        c = self.config
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        memories, valid = self.initial_state(batch) if state is None else state
        is_token = tf.ones([batch, length], tf.bool) if is_token is None else is_token
        key_is_token, mask = self._keys_and_mask(valid, is_token, length)
        x = self.embedding_dropout(self.embed(token_ids), training=training)
        new_memories = []
        position_keys = position_keys or [None] * len(self.blocks)
        for block, memory, position in zip(self.blocks, memories, position_keys):
            x, memory = block(x, memory, attention_mask=mask, training=training, position_keys=position)
            new_memories.append(memory)
        x = self.output_dropout(self._final_norm(x), training=training)
        if logits_to_keep is not None:
            x = x[:, -logits_to_keep:]
        # Static shapes, so the state can be a loop variable in graph mode.
        new_memories = [tf.ensure_shape(m, [None, c.memory_length, c.hidden_dim]) for m in new_memories]
        return self.logits(x), (new_memories, self._next_valid(key_is_token))

    def embed(self, token_ids):
        """(batch, T) ids -> (batch, T, hidden_dim): the paper's scaled embedding, x sqrt(width), so rows of the
        initial std width ** -0.5 (random or rescaled word vectors) start at unit variance."""
        x = self.embedding(token_ids) * tf.cast(math.sqrt(self.embedding.output_dim), self.compute_dtype)
        return x if self.embedding_projection is None else self.embedding_projection(x)

    def logits(self, x):
        """(batch, T, hidden_dim) -> float32 (batch, T, vocab_size), through the (tied) embedding."""
        if self.output_projection is not None:
            x = self.output_projection(x)
        return tf.cast(self.embedding(x, reverse=True), tf.float32)

    def _keys_and_mask(self, valid, is_token, length):
        """Which of the M + T keys hold real tokens (batch, M + T), and the attention mask."""
        c = self.config
        key_is_token = tf.concat([valid, is_token], axis=1)
        mask = key_is_token[:, None, :]
        if c.same_length and c.memory_length:  # without memory every query keeps its whole past
            mask = tf.logical_and(mask, look_ahead_mask(length, c.memory_length, window=c.memory_length + 1)[None])
        return key_is_token, mask

    def _final_norm(self, x):
        return x if self.final_norm is None else self.final_norm(x)

    def _next_valid(self, key_is_token):
        """The last memory_length of the keys' real-token mask: the next call's `valid`."""
        m = self.config.memory_length
        return tf.ensure_shape(key_is_token[:, tf.shape(key_is_token)[1] - m :], [None, m])

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
        key_is_token, mask = self._keys_and_mask(valid, tf.ones([batch, length], tf.bool), length)
        x = self.embed(token_ids)
        position_keys = position_keys or [None] * len(self.blocks)
        new_keys_values = []
        shape = [None, c.num_heads, c.memory_length, c.hidden_dim // c.num_heads]  # head-major
        for block, cache, position in zip(self.blocks, keys_values, position_keys):
            x, cache = block.step(x, cache, attention_mask=mask, position_keys=position)
            new_keys_values.append(tuple(tf.ensure_shape(t, shape) for t in cache))
        return self.logits(self._final_norm(x)), (new_keys_values, self._next_valid(key_is_token))

    def get_config(self):
        return {"config": dataclasses.asdict(self.config), "name": self.name}


def build_language_model(config):
    model = TransformerXL(config, name="transformer_xl")
    model(tf.ones([1, config.segment_length], tf.int32))
    if config.freeze_word_vectors:  # the token embedding's variable alone: an untied output matrix still learns
        model.embedding.embeddings.trainable = False
    return model


def token_table(model):
    """A TransformerXL's token embedding table (tied: the output's too): what word vectors start."""
    return model.embedding.embeddings


def lm_loss(label_smoothing=0.0):
    """The stateful Task.loss: (model, batch, training, state) -> (loss_sum, weight, tokens, state)."""

    def loss(model, batch, training, state):
        memories, valid = state  # the memory is emptied where a pass starts
        state = memories, tf.logical_and(valid, tf.logical_not(batch["reset"]))
        logits, state = model(batch["inputs"], state, training=training)
        losses = smoothed_cross_entropy(batch["labels"], logits, label_smoothing)
        count = tf.size(losses)
        return tf.reduce_sum(losses), count, tf.cast(count, tf.int64), state

    return loss
