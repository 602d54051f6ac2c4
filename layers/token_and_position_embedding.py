"""Token embedding (scaled by sqrt(hidden_dim), or not) plus a position encoding and, for text pairs, a
segment (token-type) embedding, optionally normalized."""

import math

import keras
import keras_hub
from keras import ops

from layers.dropout import Dropout
from layers.positional_encoding import PositionalEncoding

POSITIONS = ("sinusoidal", "learned")


@keras.saving.register_keras_serializable(package="zoo")
class TokenAndPositionEmbedding(keras.layers.Layer):
    """Embeds token ids and adds their positions, as the Transformer's input.

    The token embedding is multiplied by sqrt(hidden_dim) (section 3.4 of the
    paper) and initialised with standard deviation hidden_dim**-0.5, so the
    scaled embedding starts at unit variance, like the position encoding.
    BERT's embedding instead adds the unscaled token embedding (initialised
    with standard deviation 0.02) to learned positions and normalizes the sum
    with LayerNorm before dropout: `scale_tokens=False, layer_norm_epsilon=1e-12`.
    `token_embedding` is a keras-hub `ReversibleEmbedding`: call it with
    `reverse=True` to project hidden states back to vocabulary logits with the
    same matrix (weight tying). With `num_segments`, a segment (token-type)
    embedding of each token's segment id is added to the sum before the
    LayerNorm, as BERT does for text pairs; it starts at zero, so an encoder
    trained without segments answers as before until it learns them.

    Args:
        vocab_size: number of token ids.
        hidden_dim: size of each embedding.
        max_length: longest sequence (start_index + seq) the layer accepts.
        position: "sinusoidal" (fixed, the paper's) or "learned".
        dropout: dropout rate applied to the sum.
        scale_tokens: multiply the token embedding by sqrt(hidden_dim).
        layer_norm_epsilon: if set, LayerNorm (with this epsilon) normalizes
            the sum before dropout, as in BERT; None: no normalization.
        num_segments: segment ids embedded (BERT's type_vocab_size, 2 for
            text pairs); 0: no segment embedding, and no segment_ids taken.

    Call arguments:
        token_ids: int tensor (batch, seq).
        start_index: position of the first token (incremental decoding).
        training: whether dropout is active.
        segment_ids: int tensor (batch, seq) in [0, num_segments), given
            exactly when num_segments > 0.

    Returns:
        (batch, seq, hidden_dim) tensor.

    Example:
    >>> embed = TokenAndPositionEmbedding(8000, 256, max_length=128)
    >>> embed(keras.ops.ones((2, 10), "int32")).shape  # (2, 10, 256)

    Reference: Vaswani et al., "Attention Is All You Need", 2017, sections 3.4-3.5;
    Devlin et al., "BERT", 2019, section 3 (input representation).
    """

    def __init__(
        self,
        vocab_size,
        hidden_dim,
        max_length,
        position="sinusoidal",
        dropout=0.0,
        scale_tokens=True,
        layer_norm_epsilon=None,
        num_segments=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if position not in POSITIONS:
            raise ValueError(f"position={position!r} is not one of {POSITIONS}.")
        for name, value in (("vocab_size", vocab_size), ("hidden_dim", hidden_dim), ("max_length", max_length)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        self.vocab_size = vocab_size
        self.hidden_dim = hidden_dim
        self.max_length = max_length
        self.position = position
        self.dropout = dropout
        self.scale_tokens = scale_tokens
        self.layer_norm_epsilon = layer_norm_epsilon
        self.num_segments = num_segments
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            vocab_size,
            hidden_dim,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=hidden_dim**-0.5 if scale_tokens else 0.02),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        if position == "learned":
            self.position_embedding = keras_hub.layers.PositionEmbedding(
                max_length, dtype=self.dtype_policy, name="position_embedding"
            )
        else:
            self.position_embedding = PositionalEncoding(dtype=self.dtype_policy, name="position_encoding")
        self.layer_norm = None
        if layer_norm_epsilon is not None:
            self.layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
            )
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)
        self.segment_embedding = None
        if num_segments:
            self.segment_embedding = keras.layers.Embedding(
                num_segments, hidden_dim, embeddings_initializer="zeros", dtype=self.dtype_policy,
                name="segment_embedding"
            )

    def build(self, token_ids_shape):
        self.token_embedding.build(token_ids_shape)
        embedded_shape = (*token_ids_shape, self.hidden_dim)
        self.position_embedding.build(embedded_shape)
        if self.layer_norm is not None:
            self.layer_norm.build(embedded_shape)
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.built = True

    def call(self, token_ids, start_index=0, training=None, segment_ids=None):
        length = token_ids.shape[1]
        if length is not None and isinstance(start_index, int) and start_index + length > self.max_length:
            raise ValueError(
                f"A sequence of {length} tokens starting at position {start_index} is longer than "
                f"max_length={self.max_length}: truncate it or build the layer with a larger max_length."
            )
        embedded = self.token_embedding(token_ids)
        if self.scale_tokens:
            embedded = embedded * ops.cast(math.sqrt(self.hidden_dim), self.compute_dtype)
        if self.position == "learned":
            embedded = embedded + self.position_embedding(embedded, start_index=start_index)
        else:
            embedded = self.position_embedding(embedded, start_index=start_index)
        if (segment_ids is None) != (self.segment_embedding is None):
            raise ValueError(f"num_segments={self.num_segments}: segment_ids must be given exactly when "
                             "num_segments > 0.")
        if self.segment_embedding is not None:
            embedded = embedded + self.segment_embedding(segment_ids)
        if self.layer_norm is not None:
            embedded = self.layer_norm(embedded)
        return self.dropout_layer(embedded, training=training)

    def compute_output_shape(self, token_ids_shape):
        return (*token_ids_shape, self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_dim=self.hidden_dim,
            max_length=self.max_length,
            position=self.position,
            dropout=self.dropout,
            scale_tokens=self.scale_tokens,
            layer_norm_epsilon=self.layer_norm_epsilon,
            num_segments=self.num_segments,
        )
        return config
