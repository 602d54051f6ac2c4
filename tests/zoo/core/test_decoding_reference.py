"""Independent reference tests for zoo.core.decoding, written from its specification.

Every expected value is computed here in NumPy (float64) from the same tables the
step functions read, without looking at the implementation.
"""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from zoo.core import decoding

END = 3
PAD_LOGIT = -1e4  # token 0 (padding) is never a sensible choice


# ---------------------------------------------------------------------------
# Models: tables, TensorFlow step functions and their NumPy twins.
# ---------------------------------------------------------------------------


def _log_softmax(x):
    x = np.asarray(x, np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def _markov_table(v, seed):
    """Random (unnormalized) logits T[token] -> next-token logits; padding unreachable."""
    table = np.random.default_rng(seed).normal(0.0, 1.5, size=(v, v)).astype(np.float32)
    table[:, 0] = PAD_LOGIT
    return table


class Markov:
    """First-order chain: logits = T[token]; the state is an unused dummy (N, 1)."""

    def __init__(self, v=6, seed=0):
        self.v = v
        self.table = _markov_table(v, seed)
        self._t = tf.constant(self.table)

    def initial_state(self, batch):
        return tf.zeros([batch, 1], tf.float32)

    def step_fn(self, token_ids, index, state):
        logits = tf.gather(self._t, token_ids)
        return logits, state

    # NumPy twin: log-probs of the token after `seq` (seq starts with the start token).
    def next_logp(self, row, seq):
        return _log_softmax(self.table[seq[-1]])


class SecondOrder:
    """A chain whose state genuinely matters.

    state = {"prev": int32 (N, 1) the token before the current one,
             "aux": [float32 (N, 1) parity that flips every step]}
    logits = T3[parity, prev, token] + U[index]
    new state: prev <- token, parity <- 1 - parity.
    Wrong reordering / tiling of the state between beams changes the logits.
    """

    def __init__(self, v=5, max_steps=4, seed=1):
        rng = np.random.default_rng(seed)
        self.v = v
        self.t3 = rng.normal(0.0, 1.5, size=(2, v, v, v)).astype(np.float32)
        self.t3[..., 0] = PAD_LOGIT
        self.u = rng.normal(0.0, 0.7, size=(max_steps, v)).astype(np.float32)
        self.u[:, 0] = 0.0
        self._t3 = tf.constant(self.t3)
        self._u = tf.constant(self.u)

    def initial_state(self, prev0, parity0):
        return {
            "prev": tf.constant(np.asarray(prev0, np.int32)[:, None]),
            "aux": [tf.constant(np.asarray(parity0, np.float32)[:, None])],
        }

    def step_fn(self, token_ids, index, state):
        token_ids = tf.cast(token_ids, tf.int32)
        prev = state["prev"][:, 0]
        parity = tf.cast(tf.round(state["aux"][0][:, 0]), tf.int32)
        logits = tf.gather_nd(self._t3, tf.stack([parity, prev, token_ids], axis=1))
        logits = logits + tf.gather(self._u, index)[None, :]
        new_state = {"prev": token_ids[:, None], "aux": [1.0 - state["aux"][0]]}
        return logits, new_state

    def numpy_twin(self, prev0, parity0):
        prev0 = list(prev0)
        parity0 = list(parity0)
        t3, u = self.t3, self.u

        def next_logp(row, seq):
            t = len(seq) - 1  # index of seq[-1]
            prev = prev0[row] if len(seq) == 1 else seq[-2]
            parity = (parity0[row] + t) % 2
            return _log_softmax(t3[parity, prev, seq[-1]].astype(np.float64) + u[t])

        return next_logp


class ByIndex:
    """Ignores tokens and state: logits = L[index], broadcast over the rows."""

    def __init__(self, table):
        self.table = np.asarray(table, np.float32)
        self._t = tf.constant(self.table)

    def step_fn(self, token_ids, index, state):
        n = tf.shape(token_ids)[0]
        return tf.tile(tf.gather(self._t, index)[None, :], [n, 1]), state


class Constant:
    """Same logits for every row and step."""

    def __init__(self, logits):
        self.logits = np.asarray(logits, np.float32)
        self._l = tf.constant(self.logits)

    def step_fn(self, token_ids, index, state):
        n = tf.shape(token_ids)[0]
        return tf.tile(self._l[None, :], [n, 1]), state


# ---------------------------------------------------------------------------
# NumPy references.
# ---------------------------------------------------------------------------


def ref_greedy(next_logp, starts, max_steps, end_id=END):
    tokens = np.zeros((len(starts), max_steps), np.int32)
    scores = np.zeros(len(starts), np.float64)
    for row, start in enumerate(starts):
        seq = [int(start)]
        for t in range(max_steps):
            lp = next_logp(row, seq)
            tok = int(np.argmax(lp))
            tokens[row, t] = tok
            scores[row] += lp[tok]
            seq.append(tok)
            if tok == end_id:
                break
    return tokens, scores


def gnmt(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def ref_exhaustive(next_logp, row, start, v, max_steps, alpha, end_id=END):
    """All sequences over tokens 1..v-1 that end at end_id or reach max_steps, GNMT-scored, best first."""
    out = []

    def rec(seq, logp):
        lp = next_logp(row, seq)
        for tok in range(1, v):
            new_seq, new_logp = seq + [tok], logp + lp[tok]
            length = len(new_seq) - 1
            if tok == end_id or length == max_steps:
                gen = np.zeros(max_steps, np.int32)
                gen[:length] = new_seq[1:]
                out.append((new_logp / gnmt(length, alpha), gen))
            else:
                rec(new_seq, new_logp)

    rec([int(start)], 0.0)
    out.sort(key=lambda item: -item[0])
    return out


def seq_logp(next_logp, row, start, gen, end_id=END):
    """Sum of model log-probs of the generated tokens up to and including the end token."""
    seq, total = [int(start)], 0.0
    for tok in gen:
        tok = int(tok)
        total += next_logp(row, seq)[tok]
        seq.append(tok)
        if tok == end_id:
            break
    return total


def allowed_set(logits, top_k, top_p, temperature):
    """Support of softmax(logits / temperature) restricted to top_k and to the top_p nucleus."""
    probs = np.exp(_log_softmax(np.asarray(logits, np.float64) / temperature))
    order = np.argsort(-probs, kind="stable")
    keep = np.zeros(len(probs), bool)
    if top_k > 0:
        keep[order[:top_k]] = True
    else:
        keep[:] = True
    if top_p < 1.0:
        cum = np.cumsum(probs[order])
        n = int(np.searchsorted(cum, top_p) + 1)  # smallest prefix whose mass reaches top_p
        nucleus = np.zeros(len(probs), bool)
        nucleus[order[:n]] = True
        keep &= nucleus
    return keep, probs


def filtered_distribution(logits, top_k, top_p, temperature):
    keep, probs = allowed_set(logits, top_k, top_p, temperature)
    p = np.where(keep, probs, 0.0)
    return p / p.sum()


def _np(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


# ---------------------------------------------------------------------------
# tile_beams
# ---------------------------------------------------------------------------


def test_tile_beams_repeats_rows_consecutively():
    x = np.arange(3 * 2 * 4, dtype=np.float32).reshape(3, 2, 4)
    got = _np(decoding.tile_beams(tf.constant(x), 3))
    np.testing.assert_array_equal(got, np.repeat(x, 3, axis=0))
    y = np.array([[1], [2]], np.int32)
    np.testing.assert_array_equal(_np(decoding.tile_beams(tf.constant(y), 4)), np.repeat(y, 4, axis=0))


def test_tile_beams_in_tf_function():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    fn = tf.function(lambda t: decoding.tile_beams(t, 2))
    np.testing.assert_array_equal(_np(fn(tf.constant(x))), np.repeat(x, 2, axis=0))


# ---------------------------------------------------------------------------
# greedy
# ---------------------------------------------------------------------------


def test_greedy_matches_numpy_argmax_chain():
    model = Markov(v=6, seed=0)
    starts = np.array([1, 2, 3, 4, 5], np.int32)
    max_steps = 7
    tokens, scores = decoding.greedy(model.step_fn, model.initial_state(5), tf.constant(starts), max_steps, END)
    ref_tokens, ref_scores = ref_greedy(model.next_logp, starts, max_steps)
    assert _np(tokens).dtype == np.int32
    assert _np(scores).dtype == np.float32
    assert _np(tokens).shape == (5, max_steps)
    np.testing.assert_array_equal(_np(tokens), ref_tokens)
    np.testing.assert_allclose(_np(scores), ref_scores, rtol=1e-5, atol=1e-4)


def test_greedy_ends_rows_and_pads_with_zero():
    # The chain ends within max_steps for some rows; check the explicit layout on a crafted table.
    v = 6
    table = np.full((v, v), -2.0, np.float32)
    table[:, 0] = PAD_LOGIT
    table[1, 2] = 3.0  # 1 -> 2
    table[2, END] = 3.0  # 2 -> END
    table[4, 5] = 3.0  # 4 -> 5
    table[5, 4] = 3.0  # 5 -> 4 (never ends)
    table[END, 1] = 3.0  # after END the model would continue with 1 if allowed
    table[0, 1] = 3.0
    model = Markov(v=v)
    model.table, model._t = table, tf.constant(table)
    starts = np.array([1, 4, 2], np.int32)
    tokens, scores = decoding.greedy(model.step_fn, model.initial_state(3), tf.constant(starts), 5, END)
    expected = np.array([[2, END, 0, 0, 0], [5, 4, 5, 4, 5], [END, 0, 0, 0, 0]], np.int32)
    np.testing.assert_array_equal(_np(tokens), expected)
    _, ref_scores = ref_greedy(model.next_logp, starts, 5)
    np.testing.assert_allclose(_np(scores), ref_scores, rtol=1e-5, atol=1e-4)


def test_greedy_index_starts_at_zero_for_the_start_token():
    rng = np.random.default_rng(3)
    max_steps, v = 5, 7
    table = rng.normal(size=(max_steps + 2, v)).astype(np.float32)
    table[:, 0] = PAD_LOGIT
    table[:, END] = -5.0  # never end
    model = ByIndex(table)
    tokens, scores = decoding.greedy(model.step_fn, tf.zeros([2, 1]), tf.constant([1, 2], tf.int32), max_steps, END)
    expected = np.argmax(table[:max_steps], axis=1)
    np.testing.assert_array_equal(_np(tokens), np.stack([expected, expected]))
    ref = sum(_log_softmax(table[t])[expected[t]] for t in range(max_steps))
    np.testing.assert_allclose(_np(scores), [ref, ref], rtol=1e-5, atol=1e-4)


def test_greedy_second_order_state_matters():
    model = SecondOrder(v=5, max_steps=6, seed=4)
    starts = np.array([1, 2, 4, 1], np.int32)
    prev0, parity0 = [2, 1, 4, 4], [0, 1, 0, 1]
    tokens, scores = decoding.greedy(model.step_fn, model.initial_state(prev0, parity0), tf.constant(starts), 6, END)
    ref_tokens, ref_scores = ref_greedy(model.numpy_twin(prev0, parity0), starts, 6)
    np.testing.assert_array_equal(_np(tokens), ref_tokens)
    np.testing.assert_allclose(_np(scores), ref_scores, rtol=1e-5, atol=1e-4)


def test_greedy_rows_are_independent():
    model = SecondOrder(v=5, max_steps=6, seed=5)
    starts, prev0, parity0 = [1, 2, 4, 2], [2, 1, 4, 3], [0, 1, 0, 1]
    tokens, scores = decoding.greedy(
        model.step_fn, model.initial_state(prev0, parity0), tf.constant(starts, tf.int32), 6, END
    )
    for i in range(4):
        t1, s1 = decoding.greedy(
            model.step_fn, model.initial_state([prev0[i]], [parity0[i]]), tf.constant([starts[i]], tf.int32), 6, END
        )
        np.testing.assert_array_equal(_np(tokens)[i], _np(t1)[0])
        np.testing.assert_allclose(_np(scores)[i], _np(s1)[0], rtol=1e-6, atol=1e-5)


def test_greedy_in_tf_function_equals_eager():
    model = SecondOrder(v=5, max_steps=6, seed=4)
    starts = tf.constant([1, 2, 4], tf.int32)
    state = model.initial_state([2, 1, 4], [0, 1, 1])
    eager = decoding.greedy(model.step_fn, state, starts, 6, END)
    graph = tf.function(lambda s, st: decoding.greedy(model.step_fn, st, s, 6, END))(starts, state)
    np.testing.assert_array_equal(_np(graph[0]), _np(eager[0]))
    np.testing.assert_allclose(_np(graph[1]), _np(eager[1]), rtol=1e-6, atol=1e-5)


# ---------------------------------------------------------------------------
# beam_search
# ---------------------------------------------------------------------------

# With V=5 (4 real tokens, 3 of them not END) and max_steps=4 there are at most
# 1+3+9+27*4 = 121 hypotheses, and at most 1+3+9*4 = 40 candidates at any step
# before the last: beam_size=40 keeps every hypothesis alive, whatever the design
# (finished hypotheses kept apart or sharing the beam), so the search is exact.
EXACT_V, EXACT_STEPS, EXACT_BEAM = 5, 4, 40


def _check_exhaustive(tokens, scores, next_logp, starts, alpha, num_return):
    """Top num_return scores equal the exhaustive ones; each returned hypothesis is a distinct
    valid sequence whose own GNMT score is the score at its rank (exact ties, which a
    first-order chain produces by reordering transitions, may come in any order)."""
    tokens, scores = _np(tokens), _np(scores)
    assert tokens.shape == (len(starts), num_return, EXACT_STEPS)
    assert scores.shape == (len(starts), num_return)
    assert tokens.dtype == np.int32 and scores.dtype == np.float32
    for row, start in enumerate(starts):
        ref = ref_exhaustive(next_logp, row, start, EXACT_V, EXACT_STEPS, alpha)
        by_tokens = {tuple(g): s for s, g in ref}
        ref_scores = np.array([s for s, _ in ref[: num_return + 1]])
        # Sanity on the reference: scores are either exactly tied or well apart.
        gaps = -np.diff(ref_scores)
        assert np.all((gaps < 1e-9) | (gaps > 1e-3)), ref_scores
        np.testing.assert_allclose(scores[row], ref_scores[:num_return], rtol=1e-5, atol=1e-4, err_msg=f"sentence {row}")
        for r in range(num_return):
            hyp = tuple(int(x) for x in tokens[row, r])
            assert hyp in by_tokens, f"sentence {row} rank {r}: {hyp} is not a valid hypothesis"
            np.testing.assert_allclose(
                by_tokens[hyp], ref_scores[r], rtol=1e-9, atol=1e-9,
                err_msg=f"sentence {row} rank {r}: {hyp}; best by reference: {[tuple(g) for _, g in ref[:num_return]]}",
            )
        assert len({tuple(h) for h in tokens[row]}) == num_return, "duplicate hypotheses"
        assert np.all(np.diff(scores[row]) <= 0), "scores not best first"


@pytest.mark.parametrize("alpha", [0.6, 0.0, 1.0])
def test_beam_search_large_beam_equals_exhaustive_markov(alpha):
    model = Markov(v=EXACT_V, seed=7)
    starts = np.array([1, 2, 4], np.int32)
    num_return = 5
    tokens, scores = decoding.beam_search(
        model.step_fn,
        model.initial_state(3),
        tf.constant(starts),
        EXACT_STEPS,
        END,
        EXACT_BEAM,
        length_penalty=alpha,
        num_return=num_return,
    )
    _check_exhaustive(tokens, scores, model.next_logp, starts, alpha, num_return)


@pytest.mark.parametrize("alpha", [0.6, 0.0])
def test_beam_search_large_beam_equals_exhaustive_second_order(alpha):
    model = SecondOrder(v=EXACT_V, max_steps=EXACT_STEPS, seed=11)
    starts, prev0, parity0 = np.array([1, 2, 4], np.int32), [4, 1, 2], [1, 0, 1]
    num_return = 6
    tokens, scores = decoding.beam_search(
        model.step_fn,
        model.initial_state(prev0, parity0),
        tf.constant(starts),
        EXACT_STEPS,
        END,
        EXACT_BEAM,
        length_penalty=alpha,
        num_return=num_return,
    )
    _check_exhaustive(tokens, scores, model.numpy_twin(prev0, parity0), starts, alpha, num_return)


def test_beam_search_default_length_penalty_is_0_6_and_num_return_1():
    model = Markov(v=EXACT_V, seed=7)
    starts = np.array([1, 2], np.int32)
    tokens, scores = decoding.beam_search(
        model.step_fn, model.initial_state(2), tf.constant(starts), EXACT_STEPS, END, EXACT_BEAM
    )
    _check_exhaustive(tokens, scores, model.next_logp, starts, 0.6, 1)


def test_beam_search_hypotheses_padded_after_end_and_scores_consistent():
    # Score of every returned hypothesis = its own sum of log-probs / GNMT(length).
    model = SecondOrder(v=6, max_steps=6, seed=13)
    starts, prev0, parity0 = [1, 5, 2], [3, 2, 1], [0, 0, 1]
    next_logp = model.numpy_twin(prev0, parity0)
    tokens, scores = decoding.beam_search(
        model.step_fn, model.initial_state(prev0, parity0), tf.constant(starts, tf.int32), 6, END, 4, num_return=3
    )
    tokens, scores = _np(tokens), _np(scores)
    for b in range(3):
        for r in range(3):
            gen = tokens[b, r]
            ends = np.flatnonzero(gen == END)
            length = ends[0] + 1 if len(ends) else 6
            assert np.all(gen[length:] == 0), gen
            assert np.all(gen[:length] > 0), gen
            expected = seq_logp(next_logp, b, starts[b], gen) / gnmt(length, 0.6)
            np.testing.assert_allclose(scores[b, r], expected, rtol=1e-5, atol=1e-4)
        assert np.all(np.diff(scores[b]) <= 0)
        assert len({tuple(g) for g in tokens[b]}) == 3, "duplicate hypotheses returned"


@pytest.mark.parametrize("alpha", [0.6, 0.0])
def test_beam_search_beam_size_one_equals_greedy(alpha):
    """As the brief asks: beam_size=1 returns greedy's tokens, on a random chain. Only true for a
    beam search whose finished hypotheses share the beam's slots; see the design-independent
    variant below."""
    model = SecondOrder(v=6, max_steps=6, seed=17)
    starts, prev0, parity0 = [1, 2, 4, 5, 3], [2, 1, 4, 3, 5], [0, 1, 0, 1, 0]
    state = model.initial_state(prev0, parity0)
    g_tokens, g_scores = decoding.greedy(model.step_fn, state, tf.constant(starts, tf.int32), 6, END)
    b_tokens, b_scores = decoding.beam_search(
        model.step_fn, state, tf.constant(starts, tf.int32), 6, END, 1, length_penalty=alpha
    )
    g_tokens, g_scores = _np(g_tokens), _np(g_scores)
    b_tokens, b_scores = _np(b_tokens), _np(b_scores)
    assert b_tokens.shape == (5, 1, 6)
    np.testing.assert_array_equal(b_tokens[:, 0], g_tokens)
    lengths = np.array([(np.flatnonzero(t == END)[0] + 1) if END in t else 6 for t in g_tokens])
    np.testing.assert_allclose(b_scores[:, 0], g_scores / gnmt(lengths, alpha), rtol=1e-5, atol=1e-4)


def _end_only_as_argmax(model, margin=4.0):
    """Makes END, in every context, either the clear argmax or impossible."""
    t3 = model.t3.copy()
    model.u[:, END] = 0.0
    spread = np.ptp(model.u[:, 1:]) + margin
    is_max = t3[..., END] >= t3[..., 1:].max(axis=-1)
    t3[..., END] = np.where(is_max, t3[..., END] + spread, PAD_LOGIT)
    model.t3, model._t3, model._u = t3, tf.constant(t3), tf.constant(model.u)
    return model


@pytest.mark.parametrize("end_possible", [True, False])
def test_beam_search_beam_size_one_equals_greedy_design_independent(end_possible):
    """beam_size=1 must be greedy whatever the beam design (finished hypotheses kept apart or not)
    when every alternative is worse: END is either the clear argmax or impossible and there is no
    length penalty, or END is never possible (every hypothesis has length max_steps)."""
    model = SecondOrder(v=6, max_steps=6, seed=17)
    if end_possible:
        _end_only_as_argmax(model)
        alpha = 0.0
    else:
        model.t3[..., END] = PAD_LOGIT
        model._t3 = tf.constant(model.t3)
        alpha = 0.6
    starts, prev0, parity0 = [1, 2, 4, 5, 3], [2, 1, 4, 3, 5], [0, 1, 0, 1, 0]
    state = model.initial_state(prev0, parity0)
    ref_tokens, ref_scores = ref_greedy(model.numpy_twin(prev0, parity0), starts, 6)
    if end_possible:
        assert (ref_tokens == END).any() and not (ref_tokens == END).any(axis=1).all()
    b_tokens, b_scores = decoding.beam_search(
        model.step_fn, state, tf.constant(starts, tf.int32), 6, END, 1, length_penalty=alpha
    )
    np.testing.assert_array_equal(_np(b_tokens)[:, 0], ref_tokens)
    lengths = np.array([(np.flatnonzero(t == END)[0] + 1) if END in t else 6 for t in ref_tokens])
    np.testing.assert_allclose(_np(b_scores)[:, 0], ref_scores / gnmt(lengths, alpha), rtol=1e-5, atol=1e-4)


def test_beam_search_sentences_are_independent():
    model = SecondOrder(v=6, max_steps=5, seed=19)
    starts, prev0, parity0 = [1, 2, 4], [2, 5, 4], [0, 1, 1]
    tokens, scores = decoding.beam_search(
        model.step_fn, model.initial_state(prev0, parity0), tf.constant(starts, tf.int32), 5, END, 3, num_return=2
    )
    for i in range(3):
        t1, s1 = decoding.beam_search(
            model.step_fn,
            model.initial_state([prev0[i]], [parity0[i]]),
            tf.constant([starts[i]], tf.int32),
            5,
            END,
            3,
            num_return=2,
        )
        np.testing.assert_array_equal(_np(tokens)[i], _np(t1)[0])
        np.testing.assert_allclose(_np(scores)[i], _np(s1)[0], rtol=1e-6, atol=1e-5)


def test_beam_search_in_tf_function_equals_eager_and_reference():
    model = SecondOrder(v=EXACT_V, max_steps=EXACT_STEPS, seed=11)
    starts, prev0, parity0 = np.array([1, 2, 4], np.int32), [4, 1, 2], [1, 0, 1]
    state = model.initial_state(prev0, parity0)

    @tf.function
    def run(s, st):
        return decoding.beam_search(model.step_fn, st, s, EXACT_STEPS, END, EXACT_BEAM, num_return=3)

    graph = run(tf.constant(starts), state)
    eager = decoding.beam_search(model.step_fn, state, tf.constant(starts), EXACT_STEPS, END, EXACT_BEAM, num_return=3)
    np.testing.assert_array_equal(_np(graph[0]), _np(eager[0]))
    np.testing.assert_allclose(_np(graph[1]), _np(eager[1]), rtol=1e-6, atol=1e-5)
    _check_exhaustive(graph[0], graph[1], model.numpy_twin(prev0, parity0), starts, 0.6, 3)


# ---------------------------------------------------------------------------
# sample
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_sample_top_k_1_equals_greedy(temperature):
    model = SecondOrder(v=6, max_steps=6, seed=23)
    starts, prev0, parity0 = [1, 2, 4, 5], [2, 1, 4, 3], [0, 1, 0, 1]
    state = model.initial_state(prev0, parity0)
    g_tokens, g_scores = decoding.greedy(model.step_fn, state, tf.constant(starts, tf.int32), 6, END)
    s_tokens, s_scores = decoding.sample(
        model.step_fn, state, tf.constant(starts, tf.int32), 6, END, top_k=1, temperature=temperature, seed=(3, 4)
    )
    np.testing.assert_array_equal(_np(s_tokens), _np(g_tokens))
    # Scores are under the unmodified model, whatever the temperature.
    np.testing.assert_allclose(_np(s_scores), _np(g_scores), rtol=1e-5, atol=1e-4)


def test_sample_same_seed_same_output_and_seed_matters():
    model = Markov(v=7, seed=29)
    starts = tf.constant(np.random.default_rng(0).integers(1, 7, size=64), tf.int32)
    state = model.initial_state(64)
    a = decoding.sample(model.step_fn, state, starts, 6, END, seed=(5, 6))
    b = decoding.sample(model.step_fn, state, starts, 6, END, seed=(5, 6))
    c = decoding.sample(model.step_fn, state, starts, 6, END, seed=(7, 8))
    np.testing.assert_array_equal(_np(a[0]), _np(b[0]))
    np.testing.assert_array_equal(_np(a[1]), _np(b[1]))
    # Not stated explicitly by the spec, but a seed that is ignored would be a bug.
    assert not np.array_equal(_np(a[0]), _np(c[0]))


@pytest.mark.parametrize(
    "top_k,top_p,temperature",
    [(0, 1.0, 1.0), (3, 1.0, 1.0), (0, 0.8, 0.8), (3, 0.9, 0.7)],
)
def test_sample_tokens_stay_in_filtered_support_and_scores_use_unmodified_model(top_k, top_p, temperature):
    model = SecondOrder(v=7, max_steps=6, seed=31)
    n = 200
    rng = np.random.default_rng(1)
    starts = rng.integers(1, 7, size=n)
    prev0 = rng.integers(1, 7, size=n)
    parity0 = rng.integers(0, 2, size=n)
    next_logp = model.numpy_twin(prev0, parity0)
    tokens, scores = decoding.sample(
        model.step_fn,
        model.initial_state(prev0, parity0),
        tf.constant(starts, tf.int32),
        6,
        END,
        top_k=top_k,
        top_p=top_p,
        temperature=temperature,
        seed=(11, 12),
    )
    tokens, scores = _np(tokens), _np(scores)
    assert tokens.shape == (n, 6) and tokens.dtype == np.int32 and scores.dtype == np.float32
    for row in range(n):
        seq, total, ended = [int(starts[row])], 0.0, False
        for t in range(6):
            tok = int(tokens[row, t])
            if ended:
                assert tok == 0, (row, tokens[row])
                continue
            lp = next_logp(row, seq)
            # The filtered support is computed on log-probs; log_softmax shifts don't change it.
            keep, _ = allowed_set(lp, top_k, top_p, temperature)
            assert keep[tok], (row, t, tok, np.flatnonzero(keep))
            total += lp[tok]
            seq.append(tok)
            ended = tok == END
        np.testing.assert_allclose(scores[row], total, rtol=1e-5, atol=1e-4, err_msg=f"row {row}")


BASE_LOGITS = np.array([PAD_LOGIT, 1.0, 0.35, -0.2, 0.75, -1.0, 0.05], np.float32)


@pytest.mark.parametrize(
    "top_k,top_p,temperature",
    [
        (0, 1.0, 1.0),
        (0, 1.0, 0.5),
        (0, 1.0, 2.0),
        (3, 1.0, 1.0),
        (0, 0.7, 1.0),
        (0, 0.8, 0.6),
        (2, 0.75, 1.5),
    ],
)
def test_sample_first_token_distribution(top_k, top_p, temperature):
    n = 4000
    model = Constant(BASE_LOGITS)
    expected = filtered_distribution(BASE_LOGITS, top_k, top_p, temperature)
    if top_k > 0 and top_p < 1.0:
        # Parameters chosen so that "nucleus of the temperature-scaled distribution, intersected
        # with top_k" and "nucleus of the renormalized top_k distribution" agree.
        renorm = filtered_distribution(np.log(np.maximum(filtered_distribution(BASE_LOGITS, top_k, 1.0, temperature), 1e-30)), 0, top_p, 1.0)
        np.testing.assert_array_equal(renorm > 0, expected > 0)
    # Nucleus boundaries well away from top_p (no ambiguity about "reaches").
    if top_p < 1.0:
        _, probs = allowed_set(BASE_LOGITS, 0, 1.0, temperature)
        assert np.min(np.abs(np.cumsum(np.sort(probs)[::-1]) - top_p)) > 0.03
    tokens, scores = decoding.sample(
        model.step_fn,
        tf.zeros([n, 1]),
        tf.ones([n], tf.int32),
        1,
        END,
        top_k=top_k,
        top_p=top_p,
        temperature=temperature,
        seed=(1, 2),
    )
    tokens, scores = _np(tokens), _np(scores)
    assert tokens.shape == (n, 1)
    counts = np.bincount(tokens[:, 0], minlength=len(BASE_LOGITS)) / n
    assert np.all(counts[expected == 0] == 0), (counts, expected)
    np.testing.assert_allclose(counts, expected, atol=0.03)
    np.testing.assert_allclose(scores, _log_softmax(BASE_LOGITS)[tokens[:, 0]], rtol=1e-5, atol=1e-4)


def test_sample_in_tf_function():
    model = SecondOrder(v=6, max_steps=6, seed=23)
    starts, prev0, parity0 = [1, 2, 4, 5], [2, 1, 4, 3], [0, 1, 0, 1]
    state = model.initial_state(prev0, parity0)
    starts_t = tf.constant(starts, tf.int32)

    @tf.function
    def run_k1(s, st):
        return decoding.sample(model.step_fn, st, s, 6, END, top_k=1, temperature=0.7, seed=(3, 4))

    @tf.function
    def run(s, st):
        return decoding.sample(model.step_fn, st, s, 6, END, top_k=3, top_p=0.9, seed=(3, 4))

    g_tokens, g_scores = decoding.greedy(model.step_fn, state, starts_t, 6, END)
    k1 = run_k1(starts_t, state)
    np.testing.assert_array_equal(_np(k1[0]), _np(g_tokens))
    np.testing.assert_allclose(_np(k1[1]), _np(g_scores), rtol=1e-5, atol=1e-4)
    a, b = run(starts_t, state), run(starts_t, state)
    np.testing.assert_array_equal(_np(a[0]), _np(b[0]))
    np.testing.assert_array_equal(_np(a[1]), _np(b[1]))


def test_sample_tf_function_same_seed_matches_eager():
    # Beyond the letter of the spec ("same seed -> same output"): graph and eager agree.
    model = Markov(v=7, seed=29)
    starts = tf.constant(np.random.default_rng(0).integers(1, 7, size=32), tf.int32)
    state = model.initial_state(32)
    eager = decoding.sample(model.step_fn, state, starts, 5, END, top_p=0.9, seed=(5, 6))
    graph = tf.function(lambda s, st: decoding.sample(model.step_fn, st, s, 5, END, top_p=0.9, seed=(5, 6)))(
        starts, state
    )
    np.testing.assert_array_equal(_np(graph[0]), _np(eager[0]))
    np.testing.assert_allclose(_np(graph[1]), _np(eager[1]), rtol=1e-6, atol=1e-5)
