"""The paper's "Add & Norm" around a sub-layer, post-norm or pre-norm."""

import keras

from layers.dropout import Dropout


@keras.saving.register_keras_serializable(package="zoo")
class AddNorm(keras.layers.Layer):
    """Residual connection with dropout and LayerNorm around a sub-layer.

    Post-norm (the paper's, `norm_first=False`):
        y = LayerNorm(x + Dropout(Sublayer(x)))
    Pre-norm (`norm_first=True`, more stable for deep stacks):
        y = x + Dropout(Sublayer(LayerNorm(x)))
    A block calls `normalize(x)` to get the sub-layer's input (LayerNorm(x)
    for pre-norm, x itself for post-norm), runs the sub-layer, then calls
    this layer on (x, sublayer_output).

    Args:
        dropout: dropout rate applied to the sub-layer's output.
        epsilon: LayerNorm's epsilon.
        norm_first: pre-norm instead of the paper's post-norm.

    Call arguments:
        inputs: the residual x, (batch, seq, hidden_dim).
        sublayer_output: the sub-layer's output, same shape.
        training: whether dropout is active.

    Returns:
        (batch, seq, hidden_dim).

    Example:
    >>> x = keras.random.normal((2, 5, 16))
    >>> add_norm = AddNorm(dropout=0.1)
    >>> y = add_norm(x, keras.layers.Dense(16)(add_norm.normalize(x)))

    Reference: Vaswani et al., "Attention Is All You Need", 2017, section 5.4;
    Xiong et al., "On Layer Normalization in the Transformer Architecture", 2020.
    """

    def __init__(self, dropout=0.0, epsilon=1e-5, norm_first=False, **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.epsilon = epsilon
        self.norm_first = norm_first
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=epsilon, dtype=self.dtype_policy)

    def build(self, inputs_shape, sublayer_output_shape=None):
        self.layer_norm.build(inputs_shape)
        self.built = True

    def normalize(self, inputs):
        """The sub-layer's input: LayerNorm(inputs) for pre-norm, else inputs."""
        return self.layer_norm(inputs) if self.norm_first else inputs

    def call(self, inputs, sublayer_output, training=None):
        residual = inputs + self.dropout_layer(sublayer_output, training=training)
        return residual if self.norm_first else self.layer_norm(residual)

    def compute_output_shape(self, inputs_shape, sublayer_output_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(dropout=self.dropout, epsilon=self.epsilon, norm_first=self.norm_first)
        return config
