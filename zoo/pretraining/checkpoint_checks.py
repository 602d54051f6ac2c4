"""A published checkpoint checked whole when zoo.pretraining.published reads it, before anything is made
from it: its vocabulary, config.json against the weights' shapes and layer count, every value finite."""

import re

import numpy as np

from zoo.data import tokenizer
from zoo.pretraining.checkpoint_format import BUFFERS, ENCODER_PARTS, HEAD_PREFIX, PublishedCheckpointError, find


def check_checkpoint(checkpoint):
    """Refuses (PublishedCheckpointError, naming the file or tensor and what to do) a checkpoint the zoo could not
    load whole: its vocabulary, layers and tensors as the checks below say, and a NaN or an infinity in any tensor."""
    _check_vocabulary(checkpoint)
    _check_layers(checkpoint)
    _check_tensors(checkpoint)
    for name, value in checkpoint.weights.items():
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            bad = int(np.size(value) - np.isfinite(value).sum())
            raise PublishedCheckpointError(
                f"{checkpoint.source}: {bad} of the {np.size(value)} values of the tensor {name} are not finite (NaN "
                "or infinity): the weights are damaged; download the checkpoint again.")


def _check_vocabulary(checkpoint):
    """The tokenizer takes the vocabulary, and its size is config.json's vocab_size."""
    problem = tokenizer.wordpiece_problem(checkpoint.vocabulary)
    if problem:
        raise PublishedCheckpointError(f"{checkpoint.vocabulary_source} cannot be used: {problem}. Use the "
                                       "vocabulary published with these weights (download it again).")
    if len(checkpoint.vocabulary) != checkpoint.config.vocab_size:
        raise PublishedCheckpointError(
            f"{checkpoint.vocabulary_source} holds {len(checkpoint.vocabulary)} pieces, but config.json's "
            f"vocab_size is {checkpoint.config.vocab_size}: use the vocabulary published with these weights.")


def _check_layers(checkpoint):
    """The weights hold layers 0 .. num_hidden_layers - 1, no more, no fewer."""
    held = {}  # layer index -> its first tensor's name
    for name in sorted(checkpoint.weights):
        match = re.match(r"encoder\.layer\.(\d+)\.", name)
        if match:
            held.setdefault(int(match.group(1)), name)
    count = checkpoint.config.num_layers
    extra = sorted(i for i in held if i >= count)
    if extra:
        raise PublishedCheckpointError(
            f"{checkpoint.source}: config.json's num_hidden_layers is {count}, but the weights hold layer {extra[0]} "
            f"too ({held[extra[0]]}), {len(held)} layers in all: use the config.json published with these weights.")
    missing = [i for i in range(count) if i not in held]
    if missing:
        raise PublishedCheckpointError(
            f"{checkpoint.source}: config.json's num_hidden_layers is {count}, but the weights hold no layer "
            f"{missing[0]} (no encoder.layer.{missing[0]}.* tensor), {len(held)} layers in all: use the config.json "
            "published with these weights.")


def _check_tensors(checkpoint):
    """Each tensor of the encoder (and of BERT's masked-LM head, where there is one) is there with the shape
    config.json gives it; the encoder holds no tensor besides them."""
    config, weights, source = checkpoint.config, checkpoint.weights, checkpoint.source
    sizes = {"vocab_size": config.vocab_size, "hidden_size": config.hidden_dim,
             "intermediate_size": config.intermediate_dim, "max_position_embeddings": config.max_length,
             "embedding_size": config.embedding_dim, None: None}
    expected = _tensor_shapes(config, head=f"{HEAD_PREFIX}transform.dense.weight" in weights)
    for name, fields in expected.items():
        found = find(weights, name)
        if found is None:
            raise PublishedCheckpointError(f"{source} lacks the tensor {name}: it is not a complete "
                                           f"{checkpoint.model_type} checkpoint; download it again.")
        shape, needed = tuple(weights[found].shape), tuple(sizes[field] for field in fields)
        wrong = [f"{field}={sizes[field]}" for field, size, given in zip(fields, needed, shape)
                 if size is not None and size != given]
        if len(shape) != len(needed) or wrong:
            said = f"config.json ({', '.join(wrong)}) gives" if wrong else "the zoo needs"
            raise PublishedCheckpointError(
                f"{source}: the tensor {found} has shape {shape}, but {said} {tuple(n or '*' for n in needed)}: "
                "config.json and the weights disagree; use the config.json published with these weights.")
    known = {find(weights, name) for name in expected} | set(BUFFERS)
    unknown = sorted(name for name in weights if name.startswith(ENCODER_PARTS) and name not in known)
    if unknown:
        raise PublishedCheckpointError(
            f"{source} holds {', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''} in its encoder, which "
            f"the zoo's {checkpoint.model_type} encoder has no place for: it would compute without "
            f"{'them' if len(unknown) > 1 else 'it'}. The zoo loads plain BERT and ELECTRA encoders.")


def _tensor_shapes(config, head):
    """{Hugging Face tensor name: its shape as config.json's fields (None: any size)} of the encoder that
    `config` (a ClassifierConfig) describes, and of BERT's masked-LM head with `head`."""
    width = "embedding_size" if config.embedding_dim else "hidden_size"  # the embedding's
    hidden, inner = "hidden_size", "intermediate_size"

    def linear(name, out_dim, in_dim):  # PyTorch's Linear: weight (out, in)
        return {f"{name}.weight": (out_dim, in_dim), f"{name}.bias": (out_dim,)}

    def norm(name, dim):
        return {f"{name}.weight": (dim,), f"{name}.bias": (dim,)}

    shapes = {"embeddings.word_embeddings.weight": ("vocab_size", width),
              "embeddings.position_embeddings.weight": ("max_position_embeddings", width),
              "embeddings.token_type_embeddings.weight": (None, width), **norm("embeddings.LayerNorm", width)}
    if config.embedding_dim:
        shapes.update(linear("embeddings_project", hidden, width))
    for i in range(config.num_layers):
        layer = f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            shapes.update(linear(f"{layer}.attention.self.{part}", hidden, hidden))
        shapes.update({**linear(f"{layer}.attention.output.dense", hidden, hidden),
                       **norm(f"{layer}.attention.output.LayerNorm", hidden),
                       **linear(f"{layer}.intermediate.dense", inner, hidden),
                       **linear(f"{layer}.output.dense", hidden, inner), **norm(f"{layer}.output.LayerNorm", hidden)})
    if head:
        shapes.update({**linear(f"{HEAD_PREFIX}transform.dense", width, hidden),
                       **norm(f"{HEAD_PREFIX}transform.LayerNorm", width), f"{HEAD_PREFIX}bias": ("vocab_size",)})
    return shapes
