"""Reusable, serializable Transformer layers for Keras 3 (TensorFlow backend).

Every public layer lives in its own module, named after it; pure helpers
(masks, encodings, `rel_shift`) are module-level functions.
"""

import os

# The zoo runs on TensorFlow: tf.distribute, tf.data and TF Serving exports.
os.environ["KERAS_BACKEND"] = "tensorflow"

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"Keras was imported with the {keras.backend.backend()!r} backend before the "
        "zoo's `layers` package. The zoo needs the TensorFlow backend: import `layers` "
        "(or `zoo`) before keras, or set KERAS_BACKEND=tensorflow."
    )

from layers.add_norm import AddNorm  # noqa: E402
from layers.decoder_block import DecoderBlock  # noqa: E402
from layers.encoder_block import EncoderBlock  # noqa: E402
from layers.feed_forward import FeedForward  # noqa: E402
from layers.masks import attention_mask, look_ahead_mask, padding_mask  # noqa: E402
from layers.multi_head_attention import MultiHeadAttention  # noqa: E402
from layers.positional_encoding import (  # noqa: E402
    PositionalEncoding,
    sinusoid,
    sinusoidal_encoding,
)
from layers.relative_multi_head_attention import (  # noqa: E402
    RelativeMultiHeadAttention,
    rel_shift,
)
from layers.token_and_position_embedding import TokenAndPositionEmbedding  # noqa: E402
from layers.transformer_xl_block import TransformerXLBlock  # noqa: E402

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
