"""`--mode=explain` of a sentiment run: attention pictures of one text (or text pair) and each token's share of
the answer by erasure (zoo.classifier.explain draws and computes them)."""

import os

import numpy as np

from zoo.classifier import losses, model as classifier
from zoo.classifier.load import load_run as load_trained, preprocessor
from zoo.runs import run_dir


def run_explain(model_dir, text, average=1, text_pair=None):
    """Attention pictures of `text`, and each token's share of the answer by erasure (zoo.classifier.explain):
    the likeliest class's probability, a regression's score, or a multi-label's likeliest label's probability.
    `model_dir`: a path or the run's RunDir."""
    import tensorflow as tf

    from zoo.classifier import explain

    folder = run_dir.opened(model_dir)
    loaded = load_trained(folder, average)
    framing = preprocessor(loaded)
    if framing.pairs != (text_pair is not None):
        raise ValueError("This run was trained on text pairs: give the second text too, --text_pair=\"...\"."
                         if framing.pairs else "--text_pair: this run reads one text each; leave it out.")
    inputs = framing(tf.constant([text]), *([tf.constant([text_pair])] if framing.pairs else []))
    token_ids = inputs["token_ids"] if framing.pairs else inputs
    tokens = [loaded.tokenizer.id_to_token(int(i)) for i in token_ids[0].numpy()]
    scores = classifier.attention_scores(loaded.model, inputs)
    directory = os.path.join(folder.path, "explain")
    paths = explain.save_attention_maps([s[0] for s in scores], tokens, directory)
    heatmap = os.path.join(directory, "positional_encoding.png")
    config = loaded.config
    paths.append(explain.plot_positional_encoding(min(config.max_length, 128), config.hidden_dim, heatmap))
    answer, value, explained = explained_value(loaded, token_ids)
    path = explain.leave_one_out(value, token_ids.numpy(), tokens, explained, directory)
    print(f"{answer}; pictures: {', '.join(paths)}; each token's share of {explained} (erased one at a time): {path}")
    return [*paths, path]


def explained_value(loaded, token_ids):
    """The answer to `token_ids` (1, seq) as text, and what explanation attributes: a function of ids (rows, seq)
    -> (rows,) numbers, and its name: a regression's score, else the likeliest class's (or label's) probability."""
    import tensorflow as tf

    config, derived = loaded.config, loaded.record.derived

    def answers(ids):
        inputs = preprocessor(loaded).inputs_of(tf.constant(ids))  # a pair's segments read from its separator
        return losses.answers(config.problem_type, tf.cast(loaded.model(inputs, training=False), tf.float32))

    if config.problem_type == classifier.REGRESSION:
        stats = derived["targets"]
        score = lambda ids: answers(ids)["score"].numpy() * stats["std"] + stats["mean"]  # noqa: E731
        return f"score {score(token_ids)[0]:.4f}", score, "the score"
    names = derived["class_names"]
    probabilities = answers(token_ids)["probabilities"].numpy()[0]
    top = int(np.argmax(probabilities))
    if config.problem_type == classifier.SINGLE_LABEL:
        answer = f"{names[top]} ({probabilities[top]:.3f})"
    else:
        chosen = [f"{n} ({p:.3f})" for n, p in zip(names, probabilities) if p >= config.threshold]
        answer = f"labels: {', '.join(chosen) or 'none'} (threshold {config.threshold})"
    return answer, lambda ids: answers(ids)["probabilities"].numpy()[:, top], f"the probability of {names[top]!r}"
