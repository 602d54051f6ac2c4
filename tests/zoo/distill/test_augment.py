"""zoo.distill.augment: each method against expectations written from the seeded stream's raw draws, and the
copies reproducible from (seed, row, copy) alone."""

import collections

import numpy as np
import pytest

from zoo.distill import augment
from zoo.classifier.distill_config import AugmentConfig

TOKENS = "the film was a joy , from start to end".split()


def test_words_split_punctuation_and_keep_contractions():
    assert augment.words("It's great, isn't it?") == ["It's", "great", ",", "isn't", "it", "?"]


def test_mask_masks_the_words_whose_draw_is_under_the_rate():
    draws = np.random.default_rng(0).random(len(TOKENS))
    expected = [augment.MASK if d < 0.3 else t for t, d in zip(TOKENS, draws)]
    assert augment.mask(TOKENS, 0.3, np.random.default_rng(0), {}) == expected
    # Written out by hand from those draws (0.637, 0.270, 0.041, 0.017, 0.813 ...): words 1-3 masked.
    assert expected == ["the", "[MASK]", "[MASK]", "[MASK]", "joy", ",", "from", "start", "to", "end"]


def test_rates_zero_and_one():
    rng = np.random.default_rng(3)
    assert augment.mask(TOKENS, 0.0, rng, {}) == TOKENS
    assert augment.mask(TOKENS, 1.0, rng, {}) == [augment.MASK] * len(TOKENS)
    assert augment.delete(TOKENS, 0.0, rng, {}) == TOKENS
    assert augment.swap(TOKENS, 0.0, rng, {}) == TOKENS
    assert augment.ngram(TOKENS, 0.0, rng, {}) == TOKENS
    assert augment.replace_by_neighbours(TOKENS, 0.0, rng, {"film": ("movie",)}) == TOKENS


def test_delete_keeps_one_word_when_it_would_delete_all():
    kept = augment.delete(TOKENS, 1.0, np.random.default_rng(0), {})
    assert len(kept) == 1 and kept[0] in TOKENS


def test_delete_deletes_the_words_whose_draw_is_under_the_rate():
    draws = np.random.default_rng(5).random(len(TOKENS))
    assert augment.delete(TOKENS, 0.5, np.random.default_rng(5), {}) == [t for t, d in zip(TOKENS, draws) if d >= 0.5]


def test_swap_keeps_the_words_and_swaps_round_rate_times_length():
    rng, reference = np.random.default_rng(1), list(TOKENS)
    draws = np.random.default_rng(1)
    for _ in range(3):  # round(0.3 * 10)
        i, j = draws.choice(10, 2, replace=False)
        reference[i], reference[j] = reference[j], reference[i]
    swapped = augment.swap(TOKENS, 0.3, rng, {})
    assert swapped == reference and collections.Counter(swapped) == collections.Counter(TOKENS)
    assert augment.swap(["one"], 1.0, rng, {}) == ["one"]


def test_ngram_is_a_contiguous_piece_of_one_to_five_words():
    for seed in range(30):
        piece = augment.ngram(TOKENS, 1.0, np.random.default_rng(seed), {})
        assert 1 <= len(piece) <= 5
        assert any(TOKENS[i:i + len(piece)] == piece for i in range(len(TOKENS)))


def test_neighbours_replace_known_words_and_keep_capitals():
    table = {"film": ("movie",), "joy": ("delight",)}
    out = augment.replace_by_neighbours(["The", "Film", "was", "a", "joy"], 1.0, np.random.default_rng(0), table)
    assert out == ["The", "Movie", "was", "a", "delight"]


def test_copies_are_seeded_by_row_and_copy_alone():
    config = AugmentConfig(methods=("mask:0.2", "ngram:0.5"), copies=3)
    one, again = augment.Augmenter(config, seed=1), augment.Augmenter(config, seed=1)
    text = "The film was a joy, from start to end."
    assert one.copies(text, 7) == again.copies(text, 7)
    assert one.copies(text, 7) != one.copies(text, 8)
    assert augment.Augmenter(config, seed=2).copies(text, 7) != one.copies(text, 7)
    # Fixed seed, fixed answer (written down from the first run; a change of the stream's use shows here).
    assert one.copies(text, 7) == ["The film was a joy , from [MASK] to end .", "The film was [MASK]", "was a"]
    pairs = one.copies(("A man sings.", "Someone sings."), 0)
    assert len(pairs) == 3 and all(isinstance(pair, tuple) and len(pair) == 2 for pair in pairs)


def test_neighbour_table_from_a_vectors_file(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("good 1 0 0\ngreat 0.9 0.1 0\nbad -1 0 0\nawful -0.9 -0.1 0\nfilm 0 0.5 1\n")
    table = augment.neighbour_table(["Good film , great film", "bad awful"], str(path), 1)
    assert table == {"good": ("great",), "great": ("good",), "bad": ("awful",), "awful": ("bad",),
                     "film": ("great",)}


@pytest.mark.parametrize("methods, copies, vectors, words", [
    (("shuffle:0.1",), 1, None, "unknown augmentation method 'shuffle': use one of"),
    (("mask:1.5",), 1, None, "must be in [0, 1]"),
    (("mask:-0.1",), 1, None, "must be in [0, 1]"),
    (("mask",), 1, None, "give the method's rate after a colon"),
    ((), 2, None, "no method is given"),
    (("mask:0.1",), 0, None, "copies=0 makes none"),
    (("neighbours:0.1",), 1, None, "give vectors"),
    (("mask:0.1",), 1, "glove.txt", "read by the neighbours method alone"),
])
def test_bad_configs_are_refused_by_name(methods, copies, vectors, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("(", r"\(")):
        AugmentConfig(methods=methods, copies=copies, vectors=vectors)
