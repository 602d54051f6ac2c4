"""Transformer encoder classifier, BERT-style: a start token (<s>, or BERT's [CLS]) heads every text and its final
hidden state is classified; BERT's vocabularies also end each text with [SEP].

The backbone (`build_encoder`) and the head (`build_classifier`); the config is config.py's, the presets
presets.py's, the losses losses.py's and the export's modules server.py's (keras-hub's split of a model by role).
The config's and presets' names that callers read as `classifier.NAME` are imported here too."""

import keras

from layers import EncoderBlock, TokenAndPositionEmbedding, padding_mask
from layers.dropout import Dropout
from zoo.classifier.config import ACTIVATIONS, MULTI_LABEL, REGRESSION, SINGLE_LABEL, ClassifierConfig  # noqa: F401
from zoo.classifier.presets import PRESETS  # noqa: F401


def build_encoder(config, embedding=None, prefix="encoder", name="encoder"):
    """token_ids (batch, seq) int32, 0 = padding -> hidden states (batch, seq, hidden_dim); with
    config.num_segments, {"token_ids", "segment_ids"} (batch, seq) each (text pairs) -> the same.

    The classifier's body, and what pretraining trains (`zoo.pretraining.model`). Layers are named "embedding",
    "<prefix>_<i>" and "<prefix>_final_norm" (pre-norm only). `embedding`: a TokenAndPositionEmbedding to share
    (ELECTRA's generator shares the discriminator's); when its width differs from config.hidden_dim, a Dense
    "<prefix>_projection" maps it."""
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    segment_ids = keras.Input((None,), dtype="int32", name="segment_ids") if config.num_segments else None
    if embedding is None:
        normalized = config.embedding == "normalized"
        embedding = TokenAndPositionEmbedding(
            config.vocab_size, config.embedding_dim or config.hidden_dim, config.max_length, config.position,
            config.dropout, scale_tokens=not normalized, layer_norm_epsilon=config.epsilon if normalized else None,
            num_segments=config.num_segments, name="embedding")
        embedding.token_embedding.trainable = not config.freeze_word_vectors
    x = embedding(token_ids, segment_ids=segment_ids)
    if embedding.hidden_dim != config.hidden_dim:
        x = keras.layers.Dense(config.hidden_dim, name=f"{prefix}_projection")(x)
    is_token = padding_mask(token_ids)
    for i in range(config.num_layers):
        x = EncoderBlock(config.num_heads, config.intermediate_dim, config.dropout,
                         ACTIVATIONS.get(config.activation, config.activation), config.norm_first, config.epsilon,
                         name=f"{prefix}_{i}")(x, padding_mask=is_token)
    if config.norm_first:
        x = keras.layers.LayerNormalization(epsilon=config.epsilon, name=f"{prefix}_final_norm")(x)
    inputs = token_ids if segment_ids is None else {"token_ids": token_ids, "segment_ids": segment_ids}
    return keras.Model(inputs, x, name=name)


def build_classifier(config):
    """token_ids (batch, seq) int32, 0 = padding (and segment_ids for text pairs, `build_encoder`) -> logits
    (batch, num_classes) float32: a head on the <s> token's final state. The encoder's layers keep their names, so
    `zoo.pretraining.pretrained` copies a pretrained encoder's weights in by name."""
    encoder = build_encoder(config)
    head = Dropout(config.dropout)(encoder.output[:, 0])  # the <s> token's state
    logits = keras.layers.Dense(config.num_classes, dtype="float32", name="logits")(head)
    return keras.Model(encoder.input, logits, name="classifier")


def token_table(model):
    """The token embedding's table of a classifier or an encoder (`build_encoder`'s layer "embedding"): what word
    vectors start."""
    return model.get_layer("embedding").token_embedding.embeddings


def layer_depths(model):
    """Each trainable variable's depth below the head, for layer-wise learning-rate decay: the head 0, the last
    encoder block (and pre-norm's final norm) 1, ..., the first block num_layers, the embedding (and its projection)
    num_layers + 1 (Sun et al., 2019; ULMFiT's discriminative rates)."""
    blocks = {block.name: i for i, block in enumerate(encoder_blocks(model))}
    top = len(blocks)
    depths = []
    for variable in model.trainable_variables:
        layer = variable.path.split("/")[0]
        if layer == "embedding" or layer.endswith("_projection"):
            depths.append(top + 1)
        elif layer in blocks:
            depths.append(top - blocks[layer])
        else:
            depths.append(1 if layer.endswith("final_norm") else 0)
    return depths


def model_inputs(batch):
    """What the classifier takes from a batch: its token ids, and its segment ids where it has them (text pairs)."""
    if "segment_ids" in batch:
        return {"token_ids": batch["token_ids"], "segment_ids": batch["segment_ids"]}
    return batch["token_ids"]


def encoder_blocks(model):
    return [layer for layer in model.layers if isinstance(layer, EncoderBlock)]


def attention_scores(model, inputs):
    """Each encoder layer's attention probabilities (batch, heads, seq, seq) for the model's `inputs` (token ids,
    or a pair model's {"token_ids", "segment_ids"})."""
    pair = isinstance(inputs, dict)
    token_ids, segment_ids = (inputs["token_ids"], inputs["segment_ids"]) if pair else (inputs, None)
    is_token = padding_mask(token_ids)
    x = model.get_layer("embedding")(token_ids, segment_ids=segment_ids)
    for layer in model.layers:
        if layer.name.endswith("_projection"):  # a narrower embedding's (ELECTRA's)
            x = layer(x)
    scores = []
    for block in encoder_blocks(model):
        x, layer_scores = block(x, padding_mask=is_token, return_attention_scores=True)
        scores.append(layer_scores.numpy())
    return scores
