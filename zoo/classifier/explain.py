"""Pictures of what a model attends to and of the positional encoding, and each token's share of an answer."""

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from layers import sinusoidal_encoding  # noqa: E402


def plot_attention(scores, tokens, path, title):
    """One PNG with a heatmap per head. scores: (heads, q, k)."""
    heads = scores.shape[0]
    columns = min(heads, 4)
    rows = (heads + columns - 1) // columns
    size = max(3.0, 0.25 * len(tokens))
    figure, axes = plt.subplots(rows, columns, figsize=(size * columns, size * rows), squeeze=False)
    for head, axis in enumerate(axes.flat):
        if head >= heads:
            axis.axis("off")
            continue
        axis.imshow(scores[head], cmap="viridis", vmin=0.0)
        axis.set_title(f"head {head}")
        axis.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        axis.set_yticks(range(len(tokens)), tokens, fontsize=7)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def plot_positional_encoding(length, hidden_dim, path):
    """The sinusoidal table as a heatmap (positions x dimensions), as in the seed notes."""
    table = np.asarray(sinusoidal_encoding(length, hidden_dim))
    figure, axis = plt.subplots(figsize=(10, 5))
    image = axis.pcolormesh(table, cmap="RdBu", vmin=-1, vmax=1)
    axis.set_xlabel("dimension")
    axis.set_ylabel("position")
    axis.set_title(f"Sinusoidal positional encoding ({length} positions, hidden_dim={hidden_dim})")
    figure.colorbar(image)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def save_attention_maps(layer_scores, tokens, directory):
    """layer_scores: list over layers of (heads, q, k) arrays. Returns the PNG paths."""
    os.makedirs(directory, exist_ok=True)
    return [plot_attention(np.asarray(scores), tokens, os.path.join(directory, f"attention_layer{i}.png"), f"layer {i}")
            for i, scores in enumerate(layer_scores)]


def leave_one_out(value, token_ids, tokens, explained, directory):
    """Each token's share of an answer by erasure (Li et al., 2016, "Understanding Neural Networks through
    Representation Erasure"): `value` (ids (rows, seq) -> (rows,) numbers) of the whole text less its value with
    that token left out; the start token, which the head reads, is kept (share 0). Written to
    `directory`/attribution.json with the tokens, the value and what it is (`explained`); returns the path."""
    ids = np.asarray(token_ids)[0]
    whole = float(value(ids[None])[0])
    shares = [0.0]
    if len(ids) > 1:
        erased = np.stack([np.delete(ids, i) for i in range(1, len(ids))])
        shares += [whole - float(v) for v in value(erased)]
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "attribution.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"explained": explained, "value": whole, "tokens": tokens, "shares": shares}, f, ensure_ascii=False,
                  indent=1)
    return path
