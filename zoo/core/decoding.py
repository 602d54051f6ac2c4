"""Autoregressive decoding in graph: greedy, top-k / top-p sampling, beam search.

Every search drives a *step function*

    step_fn(token_ids (N,), index, state) -> (logits (N, V), new_state)

that feeds one token per sequence at position `index` (the start token is at index 0) and returns the next
token's logits. `state` is whatever the model keeps between steps (the decoder's key/value caches,
Transformer-XL's memory): a nested structure of tensors with leading dimension N. Nothing is recomputed for
earlier positions; that is the step function's job.

The loops are `tf.while_loop`s with static shapes, so they compile with XLA, and they stop as soon as every
sequence has finished. Id 0 is padding: positions after a sequence's end token are 0.
"""

import tensorflow as tf

NEG_INF = -1e9


def tile_beams(x, beam_size):
    """Each row of `x` repeated beam_size times (rows b*K .. b*K+K-1 are sentence b's)."""
    return tf.nest.map_structure(lambda t: tf.repeat(t, beam_size, axis=0), x)


def greedy(step_fn, state, start_ids, max_steps, end_id):
    """The most likely token at every step. Returns (tokens (B, max_steps) int32, scores (B,) float32: summed
    log-probabilities of the tokens)."""
    return _search(step_fn, state, start_ids, max_steps, end_id,
                   lambda logits, index: tf.argmax(logits, axis=-1, output_type=tf.int32))


def sample(step_fn, state, start_ids, max_steps, end_id, top_k=0, top_p=1.0, temperature=1.0, seed=(0, 0)):
    """Tokens drawn from softmax(logits / temperature), restricted to the top_k most likely (0: all) and to the
    smallest set reaching probability top_p (each may be a tensor: serving inputs). Returns (tokens, scores) as
    `greedy`; scores use the unmodified softmax."""
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int32)

    def choose(logits, index):
        filtered = filter_logits(logits, top_k, top_p, temperature)
        step_seed = tf.stack([seed[0], seed[1] + index])
        return tf.cast(tf.random.stateless_categorical(filtered, 1, step_seed)[:, 0], tf.int32)

    return _search(step_fn, state, start_ids, max_steps, end_id, choose)


def filter_logits(logits, top_k=0, top_p=1.0, temperature=1.0):
    """float32 logits / temperature with the tokens outside top-k and top-p set to -1e9."""
    logits = tf.cast(logits, tf.float32) / tf.cast(temperature, tf.float32)
    ordered = tf.sort(logits, axis=-1, direction="DESCENDING")
    vocabulary = tf.shape(logits)[-1]
    top_k = tf.cast(top_k, tf.int32)
    k = tf.where(top_k > 0, tf.minimum(top_k, vocabulary), vocabulary)
    kth = ordered[:, k - 1 : k]  # the k-th largest logit
    # Nucleus: keep the sorted tokens whose preceding probability mass is below top_p.
    probabilities = tf.nn.softmax(ordered, axis=-1)
    before = tf.cumsum(probabilities, axis=-1, exclusive=True)
    kept = tf.reduce_sum(tf.cast(before < tf.cast(top_p, tf.float32), tf.int32), axis=-1, keepdims=True)
    nucleus = tf.gather(ordered, tf.maximum(kept, 1) - 1, batch_dims=1)
    threshold = tf.maximum(kth, nucleus)
    return tf.where(logits >= threshold, logits, NEG_INF)


def _search(step_fn, state, start_ids, max_steps, end_id, choose):
    start_ids = tf.cast(start_ids, tf.int32)
    batch = tf.shape(start_ids)[0]
    tokens = tf.zeros([batch, max_steps], tf.int32)
    positions = tf.range(max_steps)
    scores = tf.zeros([batch], tf.float32)
    finished = tf.zeros([batch], tf.bool)

    def condition(index, last, state, tokens, scores, finished):
        return tf.logical_and(index < max_steps, tf.logical_not(tf.reduce_all(finished)))

    def body(index, last, state, tokens, scores, finished):
        logits, state = step_fn(last, index, state)
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
        chosen = tf.where(finished, 0, choose(logits, index))
        gained = tf.gather(log_probs, chosen, batch_dims=1)
        scores += tf.where(finished, 0.0, gained)
        finished = tf.logical_or(finished, tf.equal(chosen, end_id))
        tokens = tf.where(tf.equal(positions, index)[None, :], chosen[:, None], tokens)
        return index + 1, chosen, state, tokens, scores, finished

    loop = tf.while_loop(condition, body, (tf.constant(0), start_ids, state, tokens, scores, finished))
    return loop[3], loop[4]


def length_penalty_factor(length, alpha):
    """GNMT's ((5 + length) / 6) ** alpha (Wu et al., 2016)."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, tf.cast(alpha, tf.float32))


def _gather_beams(tree, beam_indices, batch):
    """Each tensor of `tree` (leading dimension batch * k) reordered by `beam_indices` (batch, k), indices into each
    sentence's beams; scalars as they are."""
    def one(t):
        shaped = tf.reshape(t, tf.concat([[batch, -1], tf.shape(t)[1:]], 0))
        return tf.reshape(tf.gather(shaped, beam_indices, batch_dims=1), tf.shape(t)) if t.shape.rank else t

    return tf.nest.map_structure(one, tree)


def _top_candidates(logits, alive_log_probs, alive_seqs, index, positions):
    """The step's 2k best continuations of the k alive hypotheses (enough to keep k unfinished): their sequences
    with the new token written at `index`, summed log-probabilities, source beams and tokens, each (B, 2k)."""
    batch, k = tf.shape(alive_log_probs)[0], alive_log_probs.shape[1]
    vocabulary = tf.shape(logits)[-1]
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    candidates = alive_log_probs[:, :, None] + tf.reshape(log_probs, [batch, k, vocabulary])
    top_log_probs, top_indices = tf.math.top_k(tf.reshape(candidates, [batch, k * vocabulary]), k=2 * k)
    top_beams, top_tokens = top_indices // vocabulary, top_indices % vocabulary
    top_seqs = tf.gather(alive_seqs, top_beams, batch_dims=1)
    top_seqs = tf.where(tf.equal(positions, index)[None, None, :], top_tokens[:, :, None], top_seqs)
    return top_seqs, top_log_probs, top_beams, top_tokens


def _sentences_done(done, finished_scores, alive_scores, index, max_steps, length_penalty):
    """Done when k hypotheses have finished and the best unfinished one, scored at its present length, does not
    beat the worst of them (Hugging Face's default): stopping at k finished alone (fairseq) can return a poor
    early end while a far better hypothesis is still alive. Or done when no unfinished hypothesis can beat the
    worst finished one at any length."""
    full = tf.reduce_all(finished_scores > NEG_INF / 2, axis=1)
    worse_now = alive_scores[:, 0] / length_penalty_factor(index + 1, length_penalty) <= finished_scores[:, -1]
    best_possible = alive_scores[:, 0] / length_penalty_factor(max_steps, length_penalty)
    # With a negative length penalty longer can score better: no bound then.
    hopeless = best_possible <= finished_scores[:, -1] if length_penalty >= 0 else tf.zeros_like(full)
    return tf.logical_or(done, tf.logical_or(tf.logical_and(full, worse_now), hopeless))


def beam_search(step_fn, state, start_ids, max_steps, end_id, beam_size, length_penalty=0.6, num_return=1):
    """Beam search with GNMT's length penalty, as in Tensor2Tensor / fairseq.

    Keeps `beam_size` unfinished hypotheses per sentence. As in fairseq, a candidate ending with `end_id` is
    finished only if it ranks among the `beam_size` best candidates of its step. A sentence is done as
    `_sentences_done` says (so beam_size=1 is exactly greedy search). A hypothesis' score is its summed
    log-probability divided by ((5 + length) / 6) ** length_penalty, its length counting the end token. `state`
    (leading dimension B) is repeated per beam and reordered with the beams; what the step function closes over
    (the encoder's keys/values) is the caller's to repeat once with `tile_beams`.

    Returns (tokens (B, num_return, max_steps) int32, scores (B, num_return) float32), best first.
    """
    if not 1 <= num_return <= beam_size:
        raise ValueError(f"num_return={num_return} must be between 1 and beam_size={beam_size}.")
    start_ids = tf.cast(start_ids, tf.int32)
    batch = tf.shape(start_ids)[0]
    k = beam_size
    state = tile_beams(state, k)
    alive_seqs = tf.zeros([batch, k, max_steps], tf.int32)
    # Only the first beam is live at the start, so the first step does not pick k copies of one token.
    alive_log_probs = tf.tile(tf.constant([[0.0] + [NEG_INF] * (k - 1)]), [batch, 1])
    finished_seqs = tf.zeros([batch, k, max_steps], tf.int32)
    finished_scores = tf.fill([batch, k], NEG_INF)
    last = tf.repeat(start_ids, k)
    positions = tf.range(max_steps)

    def condition(index, last, state, alive_seqs, alive_log_probs, finished_seqs, finished_scores, done):
        return tf.logical_and(index < max_steps, tf.logical_not(tf.reduce_all(done)))

    def body(index, last, state, alive_seqs, alive_log_probs, finished_seqs, finished_scores, done):
        logits, state = step_fn(last, index, state)
        top_seqs, top_log_probs, top_beams, top_tokens = _top_candidates(logits, alive_log_probs, alive_seqs, index,
                                                                         positions)
        ended = tf.equal(top_tokens, end_id)
        # Ended among the step's k best, or cut at max_steps; nothing more once the sentence is done.
        in_top_k = (tf.range(2 * k) < k)[None, :]
        completes = tf.logical_or(tf.logical_and(ended, in_top_k), tf.equal(index, max_steps - 1))
        completes = tf.logical_and(completes, tf.logical_not(done)[:, None])

        # Unfinished: the best k that did not end.
        alive_scores = tf.where(ended, NEG_INF, top_log_probs)
        alive_scores, keep = tf.math.top_k(alive_scores, k=k)
        alive_seqs = tf.gather(top_seqs, keep, batch_dims=1)
        beam_of_kept = tf.gather(top_beams, keep, batch_dims=1)
        last = tf.reshape(tf.gather(top_tokens, keep, batch_dims=1), [-1])
        state = _gather_beams(state, beam_of_kept, batch)

        # Finished: merge the new ones into the best k so far.
        new_scores = top_log_probs / length_penalty_factor(index + 1, length_penalty)
        new_scores = tf.where(tf.logical_and(completes, top_log_probs > NEG_INF / 2), new_scores, NEG_INF)
        merged_scores = tf.concat([finished_scores, new_scores], axis=1)
        merged_seqs = tf.concat([finished_seqs, top_seqs], axis=1)
        finished_scores, best = tf.math.top_k(merged_scores, k=k)
        finished_seqs = tf.gather(merged_seqs, best, batch_dims=1)
        done = _sentences_done(done, finished_scores, alive_scores, index, max_steps, length_penalty)
        return index + 1, last, state, alive_seqs, alive_scores, finished_seqs, finished_scores, done

    loop = tf.while_loop(condition, body, (tf.constant(0), last, state, alive_seqs, alive_log_probs, finished_seqs,
                                           finished_scores, tf.zeros([batch], tf.bool)))
    finished_seqs, finished_scores = loop[5], loop[6]
    return finished_seqs[:, :num_return], finished_scores[:, :num_return]
