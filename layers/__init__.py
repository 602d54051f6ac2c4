"""Reusable, serializable Transformer layers for Keras 3, on the TensorFlow and JAX backends.

Every public layer lives in its own module, named after it; pure helpers
(masks, encodings, `rel_shift`) are module-level functions. Importing the
package sets no environment variable and leaves Keras's backend as the
caller chose it (`KERAS_BACKEND`, ~/.keras/keras.json, else Keras's default,
TensorFlow); the `zoo` package is the one that insists on TensorFlow.
"""

from layers.add_norm import AddNorm
from layers.decoder_block import DecoderBlock
from layers.encoder_block import EncoderBlock
from layers.feed_forward import FeedForward
from layers.masks import attention_mask, look_ahead_mask, padding_mask
from layers.multi_head_attention import MultiHeadAttention
from layers.positional_encoding import (
    PositionalEncoding,
    sinusoid,
    sinusoidal_encoding,
)
from layers.relative_multi_head_attention import (
    RelativeMultiHeadAttention,
    rel_shift,
)
from layers.token_and_position_embedding import TokenAndPositionEmbedding
from layers.transformer_xl_block import TransformerXLBlock

__all__ = [
    "AddNorm",
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "MultiHeadAttention",
    "PositionalEncoding",
    "RelativeMultiHeadAttention",
    "TokenAndPositionEmbedding",
    "TransformerXLBlock",
    "attention_mask",
    "look_ahead_mask",
    "padding_mask",
    "rel_shift",
    "sinusoid",
    "sinusoidal_encoding",
]
