"""Encoder-decoder Transformer for translation, with cached decoding.

Sources end with </s>; the decoder reads <s> + target and predicts target +
</s> (right-shifted targets, section 3 of the paper). Decoding starts from
<s> and runs one token per step with each decoder layer's key/value cache;
the encoder output and its cross-attention keys/values are computed once per
sentence and shared by all its beams.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from layers import DecoderBlock, EncoderBlock, TokenAndPositionEmbedding, padding_mask
from zoo import checks, decoding
from zoo.optimization import smoothed_cross_entropy
from zoo.tokenizer import END_ID, PAD_ID, START_ID, UNK_ID


@dataclasses.dataclass(frozen=True)
class TranslatorConfig:
    source_vocab_size: int = 8000
    target_vocab_size: int = 8000
    shared_vocabulary: bool = True  # one tokenizer and one embedding matrix for both languages
    tie_embeddings: bool = True  # the output projection is the target embedding matrix
    hidden_dim: int = 256
    num_heads: int = 4
    intermediate_dim: int = 1024
    num_encoder_layers: int = 3
    num_decoder_layers: int = 3
    dropout: float = 0.1
    max_length: int = 128  # tokens per source (with </s>) and per target (with <s>)
    position: str = "sinusoidal"
    norm_first: bool = False
    activation: str = "relu"

    def __post_init__(self):
        checks.positive(self, "source_vocab_size", "target_vocab_size", "hidden_dim", "num_heads", "intermediate_dim",
                        "num_encoder_layers", "num_decoder_layers", "max_length")
        checks.rates(self, "dropout")
        checks.divisible(self)
        if self.shared_vocabulary and self.source_vocab_size != self.target_vocab_size:
            raise ValueError("A shared vocabulary needs source_vocab_size == target_vocab_size.")


PRESETS = {
    "tiny": TranslatorConfig(
        hidden_dim=64, num_heads=4, intermediate_dim=128, num_encoder_layers=2, num_decoder_layers=2, max_length=64
    ),
    # Four heads, three layers each side: on a CPU the attention softmax of many heads costs more than it gives.
    "small": TranslatorConfig(),
    # The paper's base and big models (Table 3).
    "base": TranslatorConfig(
        hidden_dim=512, num_heads=8, intermediate_dim=2048, num_encoder_layers=6, num_decoder_layers=6, max_length=256
    ),
    "big": TranslatorConfig(
        hidden_dim=1024,
        num_heads=16,
        intermediate_dim=4096,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dropout=0.3,
        max_length=256,
    ),
}


class Translator(keras.Model):
    """source_ids (batch, S), target_ids (batch, T) -> logits (batch, T, target_vocab) float32.

    Id 0 is padding on both sides. `encode`, `decode` and `decode_step` are
    the pieces that training, cached and uncached decoding put together.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        c = config

        def embedding(vocab_size, name):
            return TokenAndPositionEmbedding(vocab_size, c.hidden_dim, c.max_length, c.position, c.dropout, name=name)

        self.source_embedding = embedding(c.source_vocab_size, "source_embedding")
        self.target_embedding = (
            self.source_embedding if c.shared_vocabulary else embedding(c.target_vocab_size, "target_embedding")
        )
        block = dict(
            num_heads=c.num_heads,
            intermediate_dim=c.intermediate_dim,
            dropout=c.dropout,
            activation=c.activation,
            norm_first=c.norm_first,
        )
        self.encoder_blocks = [EncoderBlock(**block, name=f"encoder_{i}") for i in range(c.num_encoder_layers)]
        self.decoder_blocks = [DecoderBlock(**block, name=f"decoder_{i}") for i in range(c.num_decoder_layers)]
        # tf.train.Checkpoint does not see layers inside Keras-tracked lists: name each block.
        for blocks in (self.encoder_blocks, self.decoder_blocks):
            for layer in blocks:
                setattr(self, layer.name, layer)
        # Pre-norm stacks end with a LayerNorm (post-norm blocks already end normalized).
        norm = lambda name: keras.layers.LayerNormalization(epsilon=1e-5, name=name)  # noqa: E731
        self.encoder_norm = norm("encoder_norm") if c.norm_first else None
        self.decoder_norm = norm("decoder_norm") if c.norm_first else None
        self.output_projection = (
            None if c.tie_embeddings else keras.layers.Dense(c.target_vocab_size, name="output_projection")
        )

    def encode(self, source_ids, training=False, skip_padding=False):
        """(encoder_output (batch, S, hidden), source_mask (batch, S) bool).

        `skip_padding`: the blocks' projections, Add & Norm and feed-forward networks run at
        real tokens only (the blocks' argument of that name; not under XLA)."""
        source_mask = padding_mask(source_ids)
        x = self.source_embedding(source_ids, training=training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=source_mask, training=training, skip_padding=skip_padding)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, source_mask

    def project(self, hidden):
        """Decoder states -> float32 vocabulary logits."""
        if self.decoder_norm is not None:
            hidden = self.decoder_norm(hidden)
        if self.output_projection is None:
            logits = self.target_embedding.token_embedding(hidden, reverse=True)
        else:
            logits = self.output_projection(hidden)
        return tf.cast(logits, tf.float32)

    def decoder_states(self, target_ids, encoder_output, source_mask, training=False, skip_padding=False):
        """The last decoder block's outputs (batch, T, hidden) for decoder inputs `target_ids`."""
        target_mask = padding_mask(target_ids)
        x = self.target_embedding(target_ids, training=training)
        for block in self.decoder_blocks:
            x = block(
                x,
                encoder_output,
                padding_mask=target_mask,
                encoder_padding_mask=source_mask,
                training=training,
                skip_padding=skip_padding,
            )
        return x

    def decode(self, target_ids, encoder_output, source_mask, training=False):
        """Teacher-forced logits (batch, T, vocab) for decoder inputs `target_ids` (<s> + target)."""
        return self.project(self.decoder_states(target_ids, encoder_output, source_mask, training))

    def call(self, inputs, training=None):
        encoder_output, source_mask = self.encode(inputs["source"], training=training)
        return self.decode(inputs["target"], encoder_output, source_mask, training=training)

    def cross_attention_caches(self, encoder_output):
        return [block.compute_cross_attention_cache(encoder_output) for block in self.decoder_blocks]

    def empty_caches(self, batch, length):
        """Zeroed self-attention caches, one (batch, 2, length, heads, head_dim) per decoder layer."""
        c = self.config
        shape = [batch, 2, length, c.num_heads, c.hidden_dim // c.num_heads]
        return [tf.zeros(shape, self.compute_dtype) for _ in self.decoder_blocks]

    def decode_step(self, token_ids, index, caches, cross_caches, source_mask):
        """One decoder position for (N,) tokens at `index`: (logits (N, vocab), new caches)."""
        x = self.target_embedding(token_ids[:, None], start_index=index)
        new_caches = []
        for block, cache, cross in zip(self.decoder_blocks, caches, cross_caches):
            x, cache = block(
                x, encoder_padding_mask=source_mask, cache=cache, cache_update_index=index, cross_attention_cache=cross
            )
            new_caches.append(cache)
        return self.project(x)[:, 0], new_caches

    def get_config(self):
        return {"config": dataclasses.asdict(self.config), "name": self.name}


def build_translator(config):
    """A built Translator (its variables exist, so optimizers and checkpoints see them)."""
    model = Translator(config, name="translator")
    model({"source": tf.ones([1, 8], tf.int32), "target": tf.ones([1, 8], tf.int32)})
    return model


# --- data ---------------------------------------------------------------------------------------------


def source_rows(rows, max_length):
    """Source token rows truncated to max_length - 1, then </s>."""
    return [np.append(row[: max_length - 1], END_ID).astype(np.int32) for row in rows]


def target_rows(rows, max_length):
    """<s> + target + </s>, the target truncated to max_length - 1 tokens (decoder input and labels
    are this row without its last and without its first token)."""
    return [np.concatenate([[START_ID], row[: max_length - 1], [END_ID]]).astype(np.int32) for row in rows]


@tf.function
def source_ids_from_text(tokenizer, texts, max_length):
    """In-graph `source_rows` on raw strings: (batch, S) int32, an over-long text truncated."""
    ragged = tokenizer.tokenize(texts)[:, : max_length - 1]
    end = tf.fill([tf.shape(texts)[0], 1], tf.constant(END_ID, ragged.dtype))
    return tf.cast(tf.concat([ragged, end], axis=1).to_tensor(0), tf.int32)


@tf.function
def text_from_ids(tokenizer, token_ids):
    """Detokenized strings of generated ids (batch, T): special ids and padding dropped.

    A tf.function so that it also runs eagerly (keras-hub tokenizers return lists there)."""
    token_ids = tf.cast(token_ids, tf.int32)
    keep = tf.logical_or(token_ids > END_ID, tf.equal(token_ids, UNK_ID))
    return tokenizer.detokenize(tf.ragged.boolean_mask(token_ids, keep))


# --- training and evaluation --------------------------------------------------------------------------


def translation_loss(label_smoothing, skip_padding=False):
    """The Task.loss of a translator: smoothed cross-entropy summed over the real target tokens.

    `skip_padding`: the blocks' projections, Add & Norm and feed-forward networks, the output
    projection and the loss run at real tokens only (a quarter of the positions of a Multi30k
    batch are padding). It needs dynamic shapes: not under XLA (jit_compile, TPUs)."""

    def loss(model, batch, training):
        source, target = batch["source"], batch["target"]
        encoder_output, source_mask = model.encode(source, training=training, skip_padding=skip_padding)
        states = model.decoder_states(target[:, :-1], encoder_output, source_mask, training, skip_padding)
        labels = target[:, 1:]
        real = labels != PAD_ID
        if skip_padding:
            logits = model.project(tf.boolean_mask(states, real))  # (real tokens, vocab)
            losses = smoothed_cross_entropy(tf.boolean_mask(labels, real), logits, label_smoothing)
        else:
            losses = smoothed_cross_entropy(labels, model.project(states), label_smoothing) * tf.cast(real, tf.float32)
        # Real input tokens: the source's, and the decoder's (<s> + target: one per real label).
        tokens = tf.reduce_sum(tf.cast(source != PAD_ID, tf.int64)) + tf.reduce_sum(tf.cast(real, tf.int64))
        return tf.reduce_sum(losses), tf.reduce_sum(tf.cast(real, tf.float32)), tokens

    return loss


def translation_metrics(model):
    """Per-batch sums for `zoo.evaluation.evaluate`: teacher-forced loss over target tokens."""
    loss = translation_loss(0.0, skip_padding=True)

    def metrics(batch):
        loss_sum, weight, _ = loss(model, batch, False)
        return {"loss": loss_sum, "tokens": weight}

    return metrics


# --- decoding -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DecodeConfig:
    """How to search: beam_size 1 is greedy; top_k > 0 or top_p < 1 samples instead."""

    beam_size: int = 5
    length_penalty: float = 0.6
    num_return: int = 1
    top_k: int = 0
    top_p: float = 1.0
    temperature: float = 1.0
    seed: int = 0
    max_extra_length: int = 50  # a translation has at most source length + this many tokens

    def __post_init__(self):
        checks.non_negative(self, "max_extra_length")
        if self.beam_size < 1:
            raise ValueError(f"beam_size={self.beam_size}: it must be at least 1 (1 = greedy search).")
        if not 1 <= self.num_return <= self.beam_size:
            raise ValueError(f"num_return={self.num_return} must be between 1 and beam_size={self.beam_size}.")
        if self.top_k < 0 or not 0.0 < self.top_p <= 1.0 or self.temperature <= 0:
            raise ValueError("top_k must be >= 0, top_p in (0, 1] and temperature > 0.")
        if self.sampling and self.beam_size > 1:
            raise ValueError(
                "Sampling (top_k / top_p / temperature) draws one translation per sentence: use beam_size=1."
            )

    @property
    def sampling(self):
        return self.top_k > 0 or self.top_p < 1.0 or self.temperature != 1.0


def _never_generate(logits):
    """Padding and <s> are never a next token."""
    banned = tf.one_hot([PAD_ID, START_ID], tf.shape(logits)[-1], on_value=True, off_value=False)
    return tf.where(tf.reduce_any(banned, axis=0), decoding.NEG_INF, logits)


def translate_ids(model, source_ids, decode_config, cached=True, always_beam=False):
    """Translations of a padded batch of source ids, in graph.

    Returns (tokens (batch, num_return, steps) int32, scores (batch, num_return)
    float32): summed log-probabilities (divided by the length penalty for beam search).
    `cached=False` recomputes the decoder over the whole prefix at every step
    (what decoders without a cache do; for comparison). Beam size 1 runs the
    greedy loop unless `always_beam` (the same result, checked by the tests).
    """
    c = decode_config
    batch = tf.shape(source_ids)[0]
    steps = tf.minimum(model.config.max_length, tf.shape(source_ids)[1] + c.max_extra_length)
    beams = 1 if c.sampling else c.beam_size
    use_beam = beams > 1 or always_beam
    encoder_output, source_mask = model.encode(source_ids)
    # Once per sentence, then shared by its beams.
    cross_caches = model.cross_attention_caches(encoder_output) if cached else None
    if use_beam:
        encoder_output, source_mask = decoding.tile_beams((encoder_output, source_mask), beams)
        cross_caches = None if cross_caches is None else decoding.tile_beams(cross_caches, beams)
    if cached:

        def step(token_ids, index, caches):
            logits, caches = model.decode_step(token_ids, index, caches, cross_caches, source_mask)
            return _never_generate(logits), caches

        state = model.empty_caches(batch, steps)
    else:

        def step(token_ids, index, prefix):
            prefix = tf.where(tf.equal(tf.range(steps), index)[None, :], token_ids[:, None], prefix)
            logits = model.decode(prefix, encoder_output, source_mask)
            return _never_generate(tf.gather(logits, index, axis=1)), prefix

        state = tf.zeros([batch, steps], tf.int32)
    start = tf.fill([batch], START_ID)
    if use_beam:
        return decoding.beam_search(step, state, start, steps, END_ID, beams, c.length_penalty, c.num_return)
    if c.sampling:
        seed = (c.seed, 0)
        tokens, scores = decoding.sample(step, state, start, steps, END_ID, c.top_k, c.top_p, c.temperature, seed)
    else:
        tokens, scores = decoding.greedy(step, state, start, steps, END_ID)
    return tokens[:, None], scores[:, None]


class TranslatorServer(tf.Module):
    """Source sentences in, translations out, tokenization and search inside the graph."""

    def __init__(self, model, source_tokenizer, target_tokenizer, decode_config, jit_compile=False):
        super().__init__()
        self.model = model
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.decode_config = decode_config
        self._search = tf.function(lambda ids: translate_ids(model, ids, decode_config), jit_compile=jit_compile)

    def translate_n_best(self, text):
        """(translations (batch, num_return) strings, scores (batch, num_return)); '' for empty input."""
        ids = source_ids_from_text(self.source_tokenizer, text, self.model.config.max_length)
        tokens, scores = self._search(ids)
        shape = tf.shape(tokens)
        flat = text_from_ids(self.target_tokenizer, tf.reshape(tokens, [-1, shape[2]]))
        translations = tf.reshape(flat, shape[:2])
        empty = tf.equal(tf.strings.strip(text), "")[:, None]
        return tf.where(empty, "", translations), tf.where(empty, 0.0, scores)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        translations, scores = self.translate_n_best(text)
        return {"translation": translations[:, 0], "score": scores[:, 0]}
