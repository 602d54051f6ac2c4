"""The contract every public layer keeps (keras-hub's layer test, for our layers).

Config round trip with every constructor argument public and in the config,
eager and symbolic calls, an exact `.keras` save/load round trip, a finite
mixed_bfloat16 call, gradients reaching every trainable weight, and a
docstring with Args, Call arguments, Example and Reference. Backend-neutral:
`.ci/run` runs it on JAX too.
"""

import inspect
import os
import sys

import keras
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import layers  # noqa: E402
from _backend import gradients  # noqa: E402

RNG = np.random.default_rng(0)


def floats(*shape):
    return RNG.normal(size=shape).astype("float32")


def token_ids(*shape, vocab_size=50):
    return RNG.integers(1, vocab_size, size=shape).astype("int32")


def real_tokens(batch, length, lengths):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


# name -> (layer class, constructor kwargs, positional inputs, keyword inputs)
CASES = {
    "positional_encoding": (layers.PositionalEncoding, {}, [floats(2, 5, 8)], {}),
    "token_and_position_embedding": (
        layers.TokenAndPositionEmbedding,
        {"vocab_size": 50, "hidden_dim": 8, "max_length": 10, "dropout": 0.1},
        [token_ids(2, 5)],
        {},
    ),
    "token_and_learned_position_embedding": (
        layers.TokenAndPositionEmbedding,
        {"vocab_size": 50, "hidden_dim": 8, "max_length": 10, "position": "learned"},
        [token_ids(2, 5)],
        {},
    ),
    "token_embedding_bert": (
        layers.TokenAndPositionEmbedding,
        {"vocab_size": 50, "hidden_dim": 8, "max_length": 10, "position": "learned", "dropout": 0.1,
         "scale_tokens": False, "layer_norm_epsilon": 1e-12},
        [token_ids(2, 5)],
        {},
    ),
    "token_embedding_bert_segments": (
        layers.TokenAndPositionEmbedding,
        {"vocab_size": 50, "hidden_dim": 8, "max_length": 10, "position": "learned", "scale_tokens": False,
         "layer_norm_epsilon": 1e-12, "num_segments": 2},
        [token_ids(2, 5)],
        {"segment_ids": np.array([[0, 0, 1, 1, 1], [0, 1, 1, 0, 0]], "int32")},
    ),
    "multi_head_attention": (
        layers.MultiHeadAttention,
        {"num_heads": 2, "key_dim": 4, "dropout": 0.1},
        [floats(2, 5, 8), floats(2, 6, 8)],
        {"attention_mask": np.ones((2, 5, 6), bool)},
    ),
    "add_norm": (layers.AddNorm, {"dropout": 0.1}, [floats(2, 5, 8), floats(2, 5, 8)], {}),
    "add_norm_first": (layers.AddNorm, {"norm_first": True}, [floats(2, 5, 8), floats(2, 5, 8)], {}),
    "feed_forward": (layers.FeedForward, {"intermediate_dim": 16, "activation": "gelu"}, [floats(2, 5, 8)], {}),
    "encoder_block": (
        layers.EncoderBlock,
        {"num_heads": 2, "intermediate_dim": 16},
        [floats(2, 5, 8)],
        {"padding_mask": real_tokens(2, 5, [5, 3])},
    ),
    "encoder_block_norm_first": (
        layers.EncoderBlock,
        {"num_heads": 2, "intermediate_dim": 16, "norm_first": True, "activation": "gelu"},
        [floats(2, 5, 8)],
        {},
    ),
    "decoder_block": (
        layers.DecoderBlock,
        {"num_heads": 2, "intermediate_dim": 16},
        [floats(2, 4, 8), floats(2, 6, 8)],
        {"padding_mask": real_tokens(2, 4, [4, 2]), "encoder_padding_mask": real_tokens(2, 6, [6, 3])},
    ),
    "decoder_block_norm_first": (
        layers.DecoderBlock,
        {"num_heads": 2, "intermediate_dim": 16, "norm_first": True},
        [floats(2, 4, 8), floats(2, 6, 8)],
        {},
    ),
    "relative_multi_head_attention": (
        layers.RelativeMultiHeadAttention,
        {"num_heads": 2, "key_dim": 4, "clamp_length": 3},
        [floats(2, 4, 8), floats(2, 3, 8)],
        {},
    ),
    "transformer_xl_block": (
        layers.TransformerXLBlock,
        {"num_heads": 2, "intermediate_dim": 16, "memory_length": 3, "clamp_length": 5},
        [floats(2, 4, 8), floats(2, 3, 8)],
        {},
    ),
    "transformer_xl_block_norm_first": (
        layers.TransformerXLBlock,
        {"num_heads": 2, "intermediate_dim": 16, "memory_length": 3, "norm_first": True},
        [floats(2, 4, 8), floats(2, 3, 8)],
        {},
    ),
}


def outputs_of(result):
    return [np.asarray(keras.ops.convert_to_numpy(t)) for t in keras.tree.flatten(result)]


def symbolic(value):
    value = np.asarray(value)
    return keras.Input(shape=value.shape[1:], batch_size=value.shape[0], dtype=value.dtype.name)


def functional_model(layer, args, kwargs):
    sym_args = [symbolic(a) for a in args]
    sym_kwargs = {k: symbolic(v) for k, v in kwargs.items()}
    outputs = layer(*sym_args, **sym_kwargs)
    model = keras.Model(inputs=sym_args + list(sym_kwargs.values()), outputs=outputs)
    return model, list(args) + list(kwargs.values())


@pytest.fixture(params=sorted(CASES), name="case")
def case_fixture(request):
    keras.utils.set_random_seed(1)
    return CASES[request.param]


def test_config_round_trip_keeps_every_argument(case):
    cls, init_kwargs, args, kwargs = case
    layer = cls(**init_kwargs)
    config = layer.get_config()
    parameters = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "kwargs")]
    for name in parameters:
        assert name in config, f"{cls.__name__}.get_config() lacks {name!r}"
        if cls.__init__.__module__.startswith("layers."):  # Keras's own MHA keeps its arguments its way
            assert hasattr(layer, name), f"{cls.__name__} does not keep {name!r} as a public attribute"
    for name, value in init_kwargs.items():
        assert config[name] == value
    assert cls.from_config(config).get_config() == config


def test_eager_and_symbolic_calls_agree_on_shapes(case):
    cls, init_kwargs, args, kwargs = case
    layer = cls(**init_kwargs)
    eager = outputs_of(layer(*args, **kwargs))
    model, _ = functional_model(cls(**init_kwargs), args, kwargs)
    assert [tuple(t.shape) for t in keras.tree.flatten(model.outputs)] == [t.shape for t in eager]


def test_keras_file_round_trip_is_exact(case, tmp_path):
    cls, init_kwargs, args, kwargs = case
    model, inputs = functional_model(cls(**init_kwargs), args, kwargs)
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    for before, after in zip(outputs_of(model(inputs)), outputs_of(restored(inputs))):
        np.testing.assert_array_equal(before, after)


def test_mixed_bfloat16_call_is_finite(case):
    cls, init_kwargs, args, kwargs = case
    layer = cls(**init_kwargs, dtype="mixed_bfloat16")
    for output in keras.tree.flatten(layer(*args, **kwargs)):
        assert np.all(np.isfinite(keras.ops.convert_to_numpy(keras.ops.cast(output, "float32"))))


def test_gradients_reach_every_trainable_weight(case):
    cls, init_kwargs, args, kwargs = case
    layer = cls(**init_kwargs)
    layer(*args, **kwargs)
    output_weights = floats(*outputs_of(layer(*args, **kwargs))[0].shape)

    def loss():
        call_args = args
        if isinstance(layer, layers.AddNorm):  # a pre-norm AddNorm's LayerNorm acts through normalize()
            call_args = [args[0], layer.normalize(args[1])]
        output = keras.tree.flatten(layer(*call_args, **kwargs))[0]
        return keras.ops.sum(keras.ops.square(output) * output_weights)

    _, found = gradients(loss, variables=layer.trainable_weights)
    for weight, gradient in zip(layer.trainable_weights, found):
        assert gradient is not None, f"no gradient reaches {weight.path}"
        assert np.any(np.asarray(gradient) != 0), f"zero gradient at {weight.path}"


def test_docstring_documents_the_layer(case):
    cls = case[0]
    doc = inspect.getdoc(cls)
    for section in ("Call arguments:", "Returns:", "Example:", "Reference:"):
        assert section in doc, f"{cls.__name__} docstring lacks {section!r}"
    if "__init__" in cls.__dict__:
        assert "Args:" in doc


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: layers.EncoderBlock(4, 16)(floats(2, 5, 30)), "hidden_dim=30"),
        (lambda: layers.DecoderBlock(4, 16)(floats(2, 5, 30), floats(2, 5, 30)), "num_heads=4"),
        (lambda: layers.TransformerXLBlock(4, 16, 2)(floats(2, 5, 30)), "hidden_dim=30"),
        (lambda: layers.EncoderBlock(2, 16)(floats(2, 5, 8), padding_mask=np.ones((5,), bool)), "padding_mask"),
        (lambda: layers.EncoderBlock(2, 16)(floats(2, 5, 8), attention_mask=np.ones((5, 5), bool)), "attention_mask"),
        (lambda: layers.TokenAndPositionEmbedding(50, 8, 4)(token_ids(2, 5)), "max_length=4"),
        (lambda: layers.TokenAndPositionEmbedding(50, 8, 4, position="rotary"), "position='rotary'"),
        (lambda: layers.TransformerXLBlock(2, 16, memory_length=-1), "memory_length=-1"),
        (lambda: layers.RelativeMultiHeadAttention(2, 4, clamp_length=0), "clamp_length=0"),
        (lambda: layers.FeedForward(0), "intermediate_dim=0"),
    ],
)
def test_wrong_arguments_get_a_clear_value_error(build, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        build()
