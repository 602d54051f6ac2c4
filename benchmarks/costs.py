"""Analytic compute counts that the benchmarks set beside their timings (importable without
the recipes and their flags)."""


def multiply_adds(config, positions, keys, scored, vocab_size):
    """Multiply-adds of one forward pass: `positions` new positions, each attending over
    `keys` keys, `scored` of them projected onto the vocabulary (projections of the new
    positions, attention's content and position scores and its weighted values, the
    feed-forward network, the output layer)."""
    d, f = config["hidden_dim"], config["intermediate_dim"]
    per_position = config["num_layers"] * (4 * d * d + 2 * d * f + 3 * keys * d)
    return positions * per_position + scored * vocab_size * d
