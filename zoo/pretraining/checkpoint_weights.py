"""A published checkpoint's weights for the zoo's layers: the encoder's (BERT's token-type embedding as the
segment embedding of a text-pair model, else its type 0 folded into the positions), the masked-LM head's, the
special ids, and the parts the zoo does not use."""

import re

import numpy as np

from zoo.classifier import model as classifier
from zoo.pretraining.checkpoint_format import ENCODER_PARTS, HEAD_PREFIX, PublishedCheckpointError, find


def unused_parts(checkpoint, head=False):
    """The checkpoint's parts outside the encoder (pooler, masked-LM or detection head), by name; with `head`
    (BERT's masked-LM head is loaded: `mlm_head_weights`, its output tied to the embedding), less that head."""
    used = ENCODER_PARTS + ((HEAD_PREFIX,) if head else ())
    return sorted({".".join(name.split(".")[:2]) for name in checkpoint.weights if not name.startswith(used)})


def encoder_weights(checkpoint, model):
    """{layer name: [NumPy arrays, in layer.weights order]} for the encoder layers of `model` (an encoder or a
    classifier built from `encoder_config(checkpoint)`), as `zoo.pretraining.pretrained.copy_encoder_weights` takes
    them; raises PublishedCheckpointError on missing or misshapen weights."""
    w, source = checkpoint.weights, checkpoint.source

    def get(name):
        found = find(w, name)  # older BERT checkpoints name LayerNorm's scale and offset gamma and beta
        if found is None:
            raise PublishedCheckpointError(f"{source} lacks the weight {name!r}: it is not a complete "
                                           f"{checkpoint.model_type} encoder checkpoint; download it again.")
        return np.asarray(w[found], np.float32)

    values = {}  # id(variable) -> array

    def put(variable, array):
        if tuple(variable.shape) != array.shape:
            raise PublishedCheckpointError(
                f"{source}: {variable.path} needs shape {tuple(variable.shape)}, the checkpoint gives {array.shape}: "
                "config.json and the weights disagree; download the checkpoint again.")
        values[id(variable)] = array

    def put_norm(layer_norm, name):
        put(layer_norm.gamma, get(f"{name}.weight"))
        put(layer_norm.beta, get(f"{name}.bias"))

    def put_dense(dense, name, per_head=False):
        """PyTorch's Linear (weight (out, in)) into a Keras Dense, or (per_head) into attention's EinsumDense,
        whose kernel and bias are laid out per head."""
        kernel = get(f"{name}.weight").T
        put(dense.kernel, kernel.reshape(dense.kernel.shape) if per_head else kernel)
        bias = get(f"{name}.bias")
        put(dense.bias, bias.reshape(dense.bias.shape) if per_head else bias)

    embedding = model.get_layer("embedding")
    put(embedding.token_embedding.embeddings, get("embeddings.word_embeddings.weight"))
    positions = get("embeddings.position_embeddings.weight")[: embedding.max_length]
    token_types = get("embeddings.token_type_embeddings.weight")
    if embedding.segment_embedding is None:  # one text: every token is of type 0, a constant added to each position
        put(embedding.position_embedding.position_embeddings, positions + token_types[0])
    else:  # text pairs: the checkpoint's own token types, 0 for the first text and 1 for the second
        if len(token_types) < embedding.num_segments:
            raise PublishedCheckpointError(f"{source} has {len(token_types)} token type(s): text pairs need "
                                           f"{embedding.num_segments}. Train on single texts, or use another "
                                           "checkpoint.")
        put(embedding.position_embedding.position_embeddings, positions)
        put(embedding.segment_embedding.embeddings, token_types[: embedding.num_segments])
    put_norm(embedding.layer_norm, "embeddings.LayerNorm")
    layers = {layer.name: layer for layer in model.layers}
    if "encoder_projection" in layers:
        put_dense(layers["encoder_projection"], "embeddings_project")
    for block in classifier.encoder_blocks(model):
        prefix = f"encoder.layer.{block.name.rsplit('_', 1)[1]}."
        attention = block.self_attention
        for name in ("query", "key", "value"):
            put_dense(getattr(attention, f"_{name}_dense"), f"{prefix}attention.self.{name}", per_head=True)
        put_dense(attention._output_dense, f"{prefix}attention.output.dense", per_head=True)
        put_norm(block.attention_add_norm.layer_norm, f"{prefix}attention.output.LayerNorm")
        put_dense(block.feed_forward.intermediate_dense, f"{prefix}intermediate.dense")
        put_dense(block.feed_forward.output_dense, f"{prefix}output.dense")
        put_norm(block.feed_forward_add_norm.layer_norm, f"{prefix}output.LayerNorm")
    encoder_layers = [layer for layer in model.layers if layer.weights and layer.name != "logits"]
    missing = [v.path for layer in encoder_layers for v in layer.weights if id(v) not in values]
    if missing:
        raise PublishedCheckpointError(f"{source} leaves {missing} without a value: the zoo cannot load it.")
    return {layer.name: [values[id(v)] for v in layer.weights] for layer in encoder_layers}


def special_ids(checkpoint):
    """The PretrainConfig fields of the checkpoint's WordPiece vocabulary: [MASK], the first id after
    every bracketed special piece ([PAD], [unused...], [UNK], [CLS], [SEP], [MASK]), [CLS] and [SEP]."""
    vocabulary = checkpoint.vocabulary  # holds [CLS], [SEP] and [MASK] (`check_checkpoint`)
    special = [i for i, piece in enumerate(vocabulary) if re.fullmatch(r"\[[^\[\]]+\]", piece)]
    first_regular = max(special) + 1
    if first_regular >= len(vocabulary):
        raise PublishedCheckpointError(f"{checkpoint.source}'s vocabulary ends with a special piece "
                                       f"({vocabulary[-1]}): the zoo needs its special pieces first.")
    return {"mask_id": vocabulary.index("[MASK]"), "first_regular_id": first_regular,
            "start_id": vocabulary.index("[CLS]"), "separator_id": vocabulary.index("[SEP]")}


def mlm_head_weights(checkpoint):
    """BERT's masked-LM head as `zoo.pretraining.model.MaskedLMHead`'s weights: {"dense": [kernel, bias],
    "norm": [gamma, beta], "bias": [vocabulary bias]} (its output matrix is the token embedding, tied);
    None when the checkpoint has no such head (ELECTRA's discriminator, sentence-transformers models)."""
    w, prefix = checkpoint.weights, HEAD_PREFIX
    if f"{prefix}transform.dense.weight" not in w:
        return None
    norm = [w[find(w, f"{prefix}transform.LayerNorm.{part}")] for part in ("weight", "bias")]
    dense = [np.asarray(w[f"{prefix}transform.dense.weight"]).T, np.asarray(w[f"{prefix}transform.dense.bias"])]
    return {"dense": dense, "norm": [np.asarray(v) for v in norm], "bias": [np.asarray(w[f"{prefix}bias"])]}
