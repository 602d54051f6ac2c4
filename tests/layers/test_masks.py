import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402

import layers  # noqa: E402
from _backend import BACKEND, compiled, gradients  # noqa: E402
from _np_ref import to_np  # noqa: E402

T, F = True, False


def _b(x):
    out = to_np(x)
    assert out.dtype == np.bool_, out.dtype
    return out


def test_look_ahead_mask_4x4():
    expected = np.array(
        [
            [T, F, F, F],
            [T, T, F, F],
            [T, T, T, F],
            [T, T, T, T],
        ]
    )
    np.testing.assert_array_equal(_b(layers.look_ahead_mask(4)), expected)


def test_look_ahead_mask_1x1():
    np.testing.assert_array_equal(_b(layers.look_ahead_mask(1)), [[T]])


def test_look_ahead_mask_with_memory():
    # length 3, memory 2 -> (3, 5); key j allowed for query i iff j <= 2 + i
    expected = np.array(
        [
            [T, T, T, F, F],
            [T, T, T, T, F],
            [T, T, T, T, T],
        ]
    )
    got = _b(layers.look_ahead_mask(3, memory_length=2))
    assert got.shape == (3, 5)
    np.testing.assert_array_equal(got, expected)


def test_look_ahead_mask_with_window():
    # length 4, window 2: j <= i and j > i - 2
    expected = np.array(
        [
            [T, F, F, F],
            [T, T, F, F],
            [F, T, T, F],
            [F, F, T, T],
        ]
    )
    np.testing.assert_array_equal(_b(layers.look_ahead_mask(4, window=2)), expected)


def test_look_ahead_mask_with_memory_and_window():
    # length 3, memory 2, window 2: i < j <= 2 + i
    expected = np.array(
        [
            [F, T, T, F, F],
            [F, F, T, T, F],
            [F, F, F, T, T],
        ]
    )
    got = _b(layers.look_ahead_mask(3, memory_length=2, window=2))
    np.testing.assert_array_equal(got, expected)


def test_look_ahead_mask_window_1_is_diagonal():
    np.testing.assert_array_equal(
        _b(layers.look_ahead_mask(3, window=1)), np.eye(3, dtype=bool)
    )


def test_padding_mask():
    ids = np.array([[5, 3, 9, 0, 0], [1, 0, 2, 4, 0]], dtype="int32")
    expected = np.array([[T, T, T, F, F], [T, F, T, T, F]])
    np.testing.assert_array_equal(_b(layers.padding_mask(ids)), expected)


def test_padding_mask_custom_pad_id():
    ids = np.array([[5, 3, 9, 0, 1], [1, 1, 2, 4, 0]], dtype="int32")
    expected = np.array([[T, T, T, T, F], [F, F, T, T, T]])
    np.testing.assert_array_equal(_b(layers.padding_mask(ids, pad_id=1)), expected)


def test_attention_mask_non_causal():
    q = np.array([[T, T, F], [T, F, F]])
    k = np.array([[T, F, T, T], [T, T, T, F]])
    expected = np.array(
        [
            [
                [T, F, T, T],
                [T, F, T, T],
                [F, F, F, F],
            ],
            [
                [T, T, T, F],
                [F, F, F, F],
                [F, F, F, F],
            ],
        ]
    )
    got = _b(layers.attention_mask(q, k))
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, expected)


def test_attention_mask_causal():
    q = np.array([[T, T, T, T], [T, T, T, F]])
    k = np.array([[T, T, F, T], [T, T, T, F]])
    expected = np.array(
        [
            [
                [T, F, F, F],
                [T, T, F, F],
                [T, T, F, F],
                [T, T, F, T],
            ],
            [
                [T, F, F, F],
                [T, T, F, F],
                [T, T, T, F],
                [F, F, F, F],
            ],
        ]
    )
    np.testing.assert_array_equal(
        _b(layers.attention_mask(q, k, causal=True)), expected
    )


def test_attention_mask_from_padding_mask():
    ids = np.array([[4, 2, 0], [7, 0, 0]], dtype="int32")
    pm = layers.padding_mask(ids)
    got = _b(layers.attention_mask(pm, pm))
    expected = np.array(
        [
            [[T, T, F], [T, T, F], [F, F, F]],
            [[T, F, F], [F, F, F], [F, F, F]],
        ]
    )
    np.testing.assert_array_equal(got, expected)


def test_padding_mask_wrong_rank():
    with pytest.raises(ValueError, match="token_ids"):
        layers.padding_mask(np.zeros((2, 3, 4), "int32"))
    with pytest.raises(ValueError, match="token_ids"):
        layers.padding_mask(np.zeros((3,), "int32"))


def test_attention_mask_wrong_rank():
    good = np.ones((2, 3), bool)
    with pytest.raises(ValueError, match="query_mask"):
        layers.attention_mask(np.ones((3,), bool), good)
    with pytest.raises(ValueError, match="key_mask"):
        layers.attention_mask(good, np.ones((3,), bool))
    with pytest.raises(ValueError, match="query_mask"):
        layers.attention_mask(np.ones((2, 3, 1), bool), good)


def test_gather_tokens_keeps_the_real_rows_in_order_and_scatter_puts_them_back():
    from layers.masks import gather_tokens, scatter_tokens

    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 2, 5)).astype("float32")
    mask = np.array([[T, T, F, F], [F, F, F, F], [T, F, T, T]])
    rows = to_np(gather_tokens(x, mask))
    np.testing.assert_array_equal(rows, np.stack([x[0, 0], x[0, 1], x[2, 0], x[2, 2], x[2, 3]]))
    back = to_np(scatter_tokens(rows, mask))
    np.testing.assert_array_equal(back, np.where(mask[:, :, None, None], x, 0.0))
    # Gradients go back the same way: each row's to its token, none to the padding.
    w = rng.normal(size=(5, 2, 5)).astype("float32")
    (gradient,), _ = gradients(lambda xt: keras.ops.sum(scatter_tokens(gather_tokens(xt, mask) * w, mask)), [x])
    expected = np.zeros_like(x)
    expected[mask] = w
    np.testing.assert_array_equal(gradient, expected)


def test_gather_tokens_wants_a_batch_by_sequence_mask():
    from layers.masks import gather_tokens

    with pytest.raises(ValueError, match="padding_mask"):
        gather_tokens(np.zeros((2, 3, 4), "float32"), np.ones((2, 3, 4), bool))


@pytest.mark.skipif(BACKEND != "jax", reason="jax.jit's traced masks")
def test_gather_tokens_under_jax_jit_says_to_run_eagerly():
    from layers.masks import gather_tokens

    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ValueError, match="run the model eagerly"):
        compiled(gather_tokens)(x, np.ones((2, 3), bool))
