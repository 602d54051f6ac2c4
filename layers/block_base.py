"""What the encoder, decoder and Transformer-XL blocks share: their arguments,
the feed-forward sub-layer, Add & Norm wrappers and the config."""

import keras

from layers.add_norm import AddNorm
from layers.feed_forward import FeedForward


def head_dim(hidden_dim, num_heads):
    """hidden_dim // num_heads, or a ValueError naming both."""
    if hidden_dim % num_heads:
        raise ValueError(
            f"hidden_dim={hidden_dim} (the inputs' last dimension) is not divisible by num_heads={num_heads}."
        )
    return hidden_dim // num_heads


def check_skip_padding(skip_padding, padding_mask):
    """The blocks' `skip_padding` needs to know which tokens are real."""
    if skip_padding and padding_mask is None:
        raise ValueError("skip_padding=True needs `padding_mask`: it says which tokens are real.")


class BlockBase(keras.layers.Layer):
    """Base of the Transformer blocks; not used on its own.

    Args:
        num_heads: number of attention heads.
        intermediate_dim: inner width of the feed-forward network.
        dropout: dropout on attention probabilities, the FFN's inner
            activations and each sub-layer's output.
        activation: the FFN's activation.
        norm_first: pre-norm instead of the paper's post-norm.
        epsilon: LayerNorm's epsilon.
        attention_dropout: dropout on the attention probabilities alone;
            None: `dropout`.
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        activation="relu",
        norm_first=False,
        epsilon=1e-5,
        attention_dropout=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(num_heads, int) or num_heads <= 0:
            raise ValueError(f"num_heads={num_heads!r} must be a positive integer.")
        if attention_dropout is not None and not 0 <= attention_dropout < 1:
            raise ValueError(f"attention_dropout={attention_dropout!r} must be in [0, 1) or None.")
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.activation = activation
        self.norm_first = norm_first
        self.epsilon = epsilon
        self.attention_dropout = attention_dropout
        self.feed_forward = FeedForward(
            intermediate_dim, activation, dropout, dtype=self.dtype_policy, name="feed_forward"
        )
        self.feed_forward_add_norm = self.add_norm("feed_forward_add_norm")

    def add_norm(self, name):
        return AddNorm(self.dropout, self.epsilon, self.norm_first, dtype=self.dtype_policy, name=name)

    def attention_rate(self):
        """The attention probabilities' dropout rate: `attention_dropout`, or `dropout` when None."""
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    def build_feed_forward(self, inputs_shape):
        self.feed_forward.build(inputs_shape)
        self.feed_forward_add_norm.build(inputs_shape)

    def feed_forward_sublayer(self, x, training=None):
        """AddNorm(x, FFN(x)), the last sub-layer of every block."""
        y = self.feed_forward(self.feed_forward_add_norm.normalize(x), training=training)
        return self.feed_forward_add_norm(x, y, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            intermediate_dim=self.intermediate_dim,
            dropout=self.dropout,
            activation=keras.activations.serialize(keras.activations.get(self.activation)),
            norm_first=self.norm_first,
            epsilon=self.epsilon,
            attention_dropout=self.attention_dropout,
        )
        return config
