"""Position-wise feed-forward network: Dense -> activation -> Dense."""

import keras

from layers.dropout import Dropout
from layers.flat_dense import FlatDense

# The activations taken by name: Keras's that act on each value alone. keras.activations also names glu, softmax,
# log_softmax and sparsemax, which mix a position's values (glu halves them), and threshold, which needs arguments.
ACTIVATIONS = ("relu", "gelu", "silu", "swish", "mish", "elu", "selu", "celu", "leaky_relu", "relu6", "tanh",
               "sigmoid", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "hard_shrink", "soft_shrink",
               "tanh_shrink", "log_sigmoid", "softplus", "softsign", "sparse_plus", "sparse_sigmoid", "squareplus",
               "exponential", "linear")


@keras.saving.register_keras_serializable(package="zoo")
class FeedForward(keras.layers.Layer):
    """FFN(x) = W_2 activation(W_1 x + b_1) + b_2, applied at every position.

    The output size equals the input size (hidden_dim, taken from the input).

    Args:
        intermediate_dim: width of the inner layer (the paper's d_ff).
        activation: activation between the two layers ("relu" in the paper): a name of
            ACTIVATIONS or a callable.
        dropout: dropout rate on the inner activations.

    Call arguments:
        inputs: (batch, seq, hidden_dim).
        training: whether dropout is active.

    Returns:
        (batch, seq, hidden_dim).

    Example:
    >>> FeedForward(intermediate_dim=64)(keras.random.normal((2, 5, 16))).shape  # (2, 5, 16)

    Reference: Vaswani et al., "Attention Is All You Need", 2017, section 3.3.
    """

    def __init__(self, intermediate_dim, activation="relu", dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(intermediate_dim, int) or intermediate_dim <= 0:
            raise ValueError(f"intermediate_dim={intermediate_dim!r} must be a positive integer.")
        if isinstance(activation, str) and activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is not one of {', '.join(ACTIVATIONS)}.")
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.intermediate_dense = FlatDense(
            intermediate_dim, activation=activation, dtype=self.dtype_policy, name="intermediate_dense"
        )
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)
        self.output_dense = None

    def build(self, inputs_shape):
        self.output_dense = FlatDense(inputs_shape[-1], dtype=self.dtype_policy, name="output_dense")
        self.intermediate_dense.build(inputs_shape)
        self.output_dense.build((*inputs_shape[:-1], self.intermediate_dim))
        self.built = True

    def call(self, inputs, training=None):
        hidden = self.dropout_layer(self.intermediate_dense(inputs), training=training)
        return self.output_dense(hidden)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            intermediate_dim=self.intermediate_dim,
            activation=keras.activations.serialize(keras.activations.get(self.activation)),
            dropout=self.dropout,
        )
        return config
