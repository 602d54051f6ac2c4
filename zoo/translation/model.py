"""Encoder-decoder Transformer for translation: config, presets, the model and its loss.

Sources end with </s>; the decoder reads <s> + target and predicts target + </s> (right-shifted targets, section 3
of the paper). The text to ids rule is in `zoo.translation.preprocessor`, the searches in `zoo.translation.search`,
the TF Serving module in `zoo.translation.server`."""

import dataclasses
import os

import keras
import tensorflow as tf

from layers import DecoderBlock, EncoderBlock, TokenAndPositionEmbedding, padding_mask
from layers.feed_forward import ACTIVATIONS
from layers.token_and_position_embedding import POSITIONS
from zoo.core import checks
from zoo.training.losses import smoothed_cross_entropy
from zoo.data.tokenizer import PAD_ID


@dataclasses.dataclass(frozen=True)
class TranslatorConfig:
    source_vocab_size: int = 8000  # source token ids (the shared tokenizer's pieces when shared_vocabulary); at least 6
    target_vocab_size: int = 8000  # target token ids; follows source_vocab_size unless set; at least 6
    shared_vocabulary: bool = True  # one tokenizer and one embedding matrix for both languages
    tie_embeddings: bool = True  # the output projection is the target embedding matrix
    hidden_dim: int = 256  # width of every hidden state and embedding (model dimension)
    num_heads: int = 4  # attention heads per layer; must divide hidden_dim
    intermediate_dim: int = 1024  # inner width of each block's feed-forward network
    num_encoder_layers: int = 3  # encoder blocks
    num_decoder_layers: int = 3  # decoder blocks
    dropout: float = 0.1  # rate on embeddings, attention probabilities and sub-layer outputs, in [0, 1)
    max_length: int = 128  # tokens per source (with </s>) and per target (with <s>); at least 2
    position: str = "sinusoidal"  # "sinusoidal" (fixed, the paper's) or "learned" position embeddings
    norm_first: bool = False  # pre-norm (LayerNorm before each sub-layer, and a final one); False: post-norm
    activation: str = "relu"  # the feed-forward's: relu, gelu, silu ... (layers.feed_forward.ACTIVATIONS)
    source_embedding_dim: int | None = None  # the source token embedding's width (None: hidden_dim), projected to it
    target_embedding_dim: int | None = None  # the target's; tied, hidden_dim is projected back to it for the logits
    # Word vectors (docs/word_vectors.md): a side given a file gets a word vocabulary, its embedding from the file.
    source_vectors: str | None = None  # a GloVe, word2vec or fastText .vec file (plain or .gz) of the source language
    target_vectors: str | None = None  # the target language's; a shared vocabulary takes either (both: the same file)
    freeze_word_vectors: bool = False  # keep the embeddings the vectors start as they give them (not trained)
    min_vector_coverage: float = 0.2  # refuse vectors covering less than this share of their side's training tokens

    def __post_init__(self):
        checks.positive(self, "source_vocab_size", "target_vocab_size", "hidden_dim", "num_heads", "intermediate_dim",
                        "num_encoder_layers", "num_decoder_layers", "max_length", "source_embedding_dim",
                        "target_embedding_dim")
        checks.rates(self, "dropout")
        checks.divisible(self)
        checks.word_vectors(self, "source_vectors", "target_vectors")
        if self.shared_vocabulary:
            for name in ("vocab_size", "embedding_dim"):
                source, target = getattr(self, f"source_{name}"), getattr(self, f"target_{name}")
                if source != target:
                    raise ValueError(f"source_{name}={source} and target_{name}={target} differ: a shared vocabulary "
                                     "(shared_vocabulary=True) has one embedding, of one size.")
            if self.source_vectors and self.target_vectors and not same_file(self.source_vectors, self.target_vectors):
                raise ValueError(f"source_vectors={self.source_vectors!r} and target_vectors={self.target_vectors!r} "
                                 "are two files, but a shared vocabulary (shared_vocabulary=True) has one embedding: "
                                 "give one of them, or shared_vocabulary=False for an embedding a language.")
        if self.max_length < 2:
            raise ValueError(f"max_length={self.max_length} leaves no room for text beside a source's </s> and a "
                             "target's <s>: use at least 2.")
        checks.one_of(self, "position", POSITIONS)
        checks.one_of(self, "activation", ACTIVATIONS)

    def vectors(self, side):
        """The word vectors file that starts `side`'s ("source", "target") embedding: its own, or under a shared
        vocabulary the one given for either side; None: the side's tokens are SentencePiece pieces."""
        own = getattr(self, f"{side}_vectors")
        return own or (self.source_vectors or self.target_vectors if self.shared_vocabulary else None)

    @property
    def words(self):
        """(source, target): whether each side's tokens are words (zoo.data.word_tokenizer), given word vectors."""
        return tuple(self.vectors(side) is not None for side in SIDES)

    def with_words(self, plans):
        """This config sized to each word side's plan ({side: zoo.data.word_embedding.WordPlan}): its vocabulary's
        size, and the vectors' width as its embedding_dim (projected to hidden_dim when they differ)."""
        changes = {}
        for side, plan in plans.items():
            dim = plan.embedding_dim(getattr(self, f"{side}_embedding_dim"), f"model.{side}_embedding_dim",
                                     f"model.hidden_dim={self.hidden_dim}")
            changes.update({f"{side}_vocab_size": len(plan.words), f"{side}_embedding_dim": dim})
        return dataclasses.replace(self, **changes)


SIDES = ("source", "target")


def same_file(a, b):
    """Whether two paths name one file (the same path, or one file by two names)."""
    return a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b))


PRESETS = {
    "tiny": TranslatorConfig(hidden_dim=64, num_heads=4, intermediate_dim=128, num_encoder_layers=2,
                             num_decoder_layers=2, max_length=64),
    # Four heads, three layers each side: on a CPU the attention softmax of many heads costs more than it gives.
    "small": TranslatorConfig(),
    # The paper's base and big models (Table 3).
    "base": TranslatorConfig(hidden_dim=512, num_heads=8, intermediate_dim=2048, num_encoder_layers=6,
                             num_decoder_layers=6, max_length=256),
    "big": TranslatorConfig(hidden_dim=1024, num_heads=16, intermediate_dim=4096, num_encoder_layers=6,
                            num_decoder_layers=6, dropout=0.3, max_length=256),
}


class Translator(keras.Model):
    """source_ids (batch, S), target_ids (batch, T) -> logits (batch, T, target_vocab) float32. Id 0 is padding on
    both sides. `encode`, `decode` and `decode_step` are the pieces that training, cached and uncached decoding put
    together."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = c = config

        def embedding(side, vocab_size, width):
            layer = TokenAndPositionEmbedding(vocab_size, width, c.max_length, c.position, c.dropout,
                                              name=f"{side}_embedding")
            layer.token_embedding.trainable = not (c.freeze_word_vectors and c.vectors(side))
            # Word vectors narrower or wider than hidden_dim: tokens -> width -> Dense -> hidden_dim (ALBERT's).
            projection = None if width == c.hidden_dim else keras.layers.Dense(c.hidden_dim, name=f"{side}_projection")
            return layer, projection

        target_width = c.target_embedding_dim or c.hidden_dim
        self.source_embedding, self.source_projection = embedding(
            "source", c.source_vocab_size, c.source_embedding_dim or c.hidden_dim)
        self.target_embedding, self.target_projection = (
            (self.source_embedding, self.source_projection) if c.shared_vocabulary
            else embedding("target", c.target_vocab_size, target_width))
        block = dict(num_heads=c.num_heads, intermediate_dim=c.intermediate_dim, dropout=c.dropout,
                     activation=c.activation, norm_first=c.norm_first)
        self.encoder_blocks = [EncoderBlock(**block, name=f"encoder_{i}") for i in range(c.num_encoder_layers)]
        self.decoder_blocks = [DecoderBlock(**block, name=f"decoder_{i}") for i in range(c.num_decoder_layers)]
        # tf.train.Checkpoint does not see layers inside Keras-tracked lists: name each block.
        for layer in [*self.encoder_blocks, *self.decoder_blocks]:
            setattr(self, layer.name, layer)
        # Pre-norm stacks end with a LayerNorm (post-norm blocks already end normalized).
        norm = lambda name: keras.layers.LayerNormalization(epsilon=1e-5, name=name)  # noqa: E731
        self.encoder_norm = norm("encoder_norm") if c.norm_first else None
        self.decoder_norm = norm("decoder_norm") if c.norm_first else None
        self.output_projection = (
            None if c.tie_embeddings else keras.layers.Dense(c.target_vocab_size, name="output_projection"))
        # Tied to a target embedding of another width: hidden_dim -> Dense -> its width -> the reversed table.
        self.reverse_projection = (keras.layers.Dense(target_width, name="reverse_projection")
                                   if c.tie_embeddings and target_width != c.hidden_dim else None)

    def embed(self, side, token_ids, training=False, start_index=0):
        """(batch, T) ids of `side` ("source", "target") -> (batch, T, hidden_dim): tokens and positions, projected
        to hidden_dim from a word-vector width."""
        embedding, projection = getattr(self, f"{side}_embedding"), getattr(self, f"{side}_projection")
        x = embedding(token_ids, start_index=start_index, training=training)
        return x if projection is None else projection(x)

    def encode(self, source_ids, training=False, skip_padding=False):
        """(encoder_output (batch, S, hidden), source_mask (batch, S) bool). `skip_padding`: the blocks' projections,
        Add & Norm and feed-forward networks run at real tokens only (the blocks' argument of that name; not under
        XLA)."""
        source_mask = padding_mask(source_ids)
        x = self.embed("source", source_ids, training=training)
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
            if self.reverse_projection is not None:
                hidden = self.reverse_projection(hidden)
            logits = self.target_embedding.token_embedding(hidden, reverse=True)
        else:
            logits = self.output_projection(hidden)
        return tf.cast(logits, tf.float32)

    def decoder_states(self, target_ids, encoder_output, source_mask, training=False, skip_padding=False):
        """The last decoder block's outputs (batch, T, hidden) for decoder inputs `target_ids`."""
        target_mask = padding_mask(target_ids)
        x = self.embed("target", target_ids, training=training)
        for block in self.decoder_blocks:
            x = block(x, encoder_output, padding_mask=target_mask, encoder_padding_mask=source_mask,
                      training=training, skip_padding=skip_padding)
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
        x = self.embed("target", token_ids[:, None], start_index=index)
        new_caches = []
        for block, cache, cross in zip(self.decoder_blocks, caches, cross_caches):
            x, cache = block(x, encoder_padding_mask=source_mask, cache=cache, cache_update_index=index,
                             cross_attention_cache=cross)
            new_caches.append(cache)
        return self.project(x)[:, 0], new_caches

    def get_config(self):
        return {"config": dataclasses.asdict(self.config), "name": self.name}


def build_translator(config):
    """A built Translator (its variables exist, so optimizers and checkpoints see them)."""
    model = Translator(config, name="translator")
    ids = tf.ones([1, min(8, config.max_length)], tf.int32)  # within the positions the model has
    model({"source": ids, "target": ids})
    return model


def words_initializer(plans):
    """Task.initialize: each word side's plan ({side: zoo.data.word_embedding.WordPlan}) into its token embedding
    (a shared one once), before the first step."""
    def table(side):
        return lambda model: model.get_layer(f"{side}_embedding").token_embedding.embeddings

    fills = [plan.initializer(table(side)) for side, plan in plans.items()
             if side == "source" or plan is not plans.get("source")]

    def initialize(model):
        for fill in fills:
            fill(model)

    return initialize


def translation_loss(label_smoothing, skip_padding=False):
    """The Task.loss of a translator: smoothed cross-entropy summed over the real target tokens. `skip_padding`: the
    blocks' projections, Add & Norm and feed-forward networks, the output projection and the loss run at real tokens
    only (padding is skipped, not computed and masked). It needs dynamic shapes: not under XLA (jit_compile, TPUs)."""

    def loss(model, batch, training):
        source, target = batch["source"], batch["target"]
        encoder_output, source_mask = model.encode(source, training=training, skip_padding=skip_padding)
        states = model.decoder_states(target[:, :-1], encoder_output, source_mask, training, skip_padding)
        labels = target[:, 1:]
        is_label = labels != PAD_ID
        if skip_padding:
            logits = model.project(tf.boolean_mask(states, is_label))  # (real tokens, vocab)
            losses = smoothed_cross_entropy(tf.boolean_mask(labels, is_label), logits, label_smoothing)
        else:
            losses = smoothed_cross_entropy(labels, model.project(states), label_smoothing)
            losses *= tf.cast(is_label, tf.float32)
        # Real input tokens: the source's, and the decoder's (<s> + target: one per real label).
        tokens = tf.reduce_sum(tf.cast(source != PAD_ID, tf.int64)) + tf.reduce_sum(tf.cast(is_label, tf.int64))
        return tf.reduce_sum(losses), tf.reduce_sum(tf.cast(is_label, tf.float32)), tokens

    return loss


def translation_metrics(model):
    """Per-batch sums for `zoo.training.evaluation.evaluate`: teacher-forced loss over target tokens."""
    loss = translation_loss(0.0, skip_padding=True)

    def metrics(batch):
        loss_sum, weight, _ = loss(model, batch, False)
        return {"loss": loss_sum, "tokens": weight}

    return metrics
