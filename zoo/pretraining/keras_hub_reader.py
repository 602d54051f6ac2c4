"""Published checkpoints as KerasHub presets ("keras_hub:PRESET", or a local KerasHub preset folder): the
BERT and ELECTRA backbones' weights under Hugging Face's names, read by zoo.pretraining.published."""

import re

import numpy as np

from zoo.classifier import model as classifier
from zoo.pretraining.checkpoint_format import Checkpoint, PublishedCheckpointError, one_line


def read_keras_hub(spec, preset):
    """A KerasHub BERT or ELECTRA preset (a name, downloaded by keras-hub, or a folder) as a Checkpoint."""
    import keras
    import keras_hub

    try:
        backbone = keras_hub.models.Backbone.from_preset(preset, dtype="float32")
        preset_tokenizer = keras_hub.tokenizers.Tokenizer.from_preset(preset)
    except Exception as error:  # unknown names, no network, damaged files
        raise PublishedCheckpointError(f"keras-hub could not load {spec}: {_keras_hub_reason(error, preset)}") \
            from None
    kinds = {keras_hub.models.BertBackbone: "bert", keras_hub.models.ElectraBackbone: "electra"}
    model_type = kinds.get(type(backbone))
    if model_type is None:
        raise PublishedCheckpointError(f"{spec} is a {type(backbone).__name__}: the zoo's encoder takes KerasHub's "
                                       "BertBackbone and ElectraBackbone.")
    settings = backbone.get_config()
    hidden = settings["hidden_dim"]
    embedding_dim = settings.get("embedding_dim", hidden)
    config = classifier.ClassifierConfig(
        vocab_size=settings.get("vocabulary_size", settings.get("vocab_size")), hidden_dim=hidden, num_heads=settings["num_heads"],
        intermediate_dim=settings["intermediate_dim"], num_layers=settings["num_layers"],
        dropout=settings["dropout"], max_length=settings["max_sequence_length"], position="learned",
        activation="gelu_approximate", embedding="normalized", embedding_dim=None if embedding_dim == hidden else embedding_dim,
        epsilon=backbone.get_layer("embeddings_layer_norm").epsilon,
    )
    weights = _keras_hub_weights(backbone, settings["num_layers"], keras)
    return Checkpoint(spec, model_type, config, weights, list(preset_tokenizer.vocabulary), preset_tokenizer.lowercase,
                      preset_tokenizer.strip_accents, vocabulary_source=f"the tokenizer of {spec}")


def _keras_hub_reason(error, preset):
    """Why keras-hub could not load `preset`, in one line: its network and unknown-name errors in our words (the
    first is a long repr of a connection, the second a numbered list), any other whole."""
    message = one_line(error)
    host = re.search(r"host='([^']+)'", message)
    if host and "Connection" in type(error).__name__:
        return (f"it could not reach {host.group(1)} to download the preset ({type(error).__name__}). Check the "
                "network, or give a local preset folder (keras_hub:/path/to/folder, as save_to_preset writes it).")
    if message.startswith("Unknown preset identifier"):
        return (f"it knows no preset {preset!r}. Give a name of keras_hub.models.Backbone.presets (e.g. "
                "bert_tiny_en_uncased), a kaggle://, hf:// or modelscope:// handle, or a local preset folder.")
    return f"{type(error).__name__}: {message} Check the preset name and the network, or give a local preset folder."


def _keras_hub_weights(backbone, num_layers, keras):
    """A KerasHub BERT / ELECTRA backbone's weights under Hugging Face's names and layout."""
    layer = backbone.get_layer

    def linear(dense):  # Keras's (in, ..., out...) kernel -> PyTorch's (out, in)
        kernel, bias = (np.asarray(w) for w in dense.get_weights())
        return kernel.reshape(-1, bias.size).T, bias.reshape(-1)

    def norm(ln):
        return dict(zip(("weight", "bias"), (np.asarray(w) for w in ln.get_weights())))

    weights = {
        "embeddings.word_embeddings.weight": np.asarray(layer("token_embedding").embeddings),
        "embeddings.position_embeddings.weight": np.asarray(layer("position_embedding").position_embeddings),
        "embeddings.token_type_embeddings.weight": np.asarray(layer("segment_embedding").embeddings),
    }
    weights.update({f"embeddings.LayerNorm.{k}": v for k, v in norm(layer("embeddings_layer_norm")).items()})
    if any(l.name == "embeddings_projection" for l in backbone.layers):
        weights["embeddings_project.weight"], weights["embeddings_project.bias"] = linear(layer("embeddings_projection"))
    for i in range(num_layers):
        block, prefix = layer(f"transformer_layer_{i}"), f"encoder.layer.{i}."
        attention = block._self_attention_layer
        for name, dense in (("query", attention._query_dense), ("key", attention._key_dense),
                            ("value", attention._value_dense)):
            weights[f"{prefix}attention.self.{name}.weight"], weights[f"{prefix}attention.self.{name}.bias"] = linear(dense)
        dense = attention._output_dense
        weights[f"{prefix}attention.output.dense.weight"], weights[f"{prefix}attention.output.dense.bias"] = linear(dense)
        for hf, ln in (("attention.output.LayerNorm", block._self_attention_layer_norm),
                       ("output.LayerNorm", block._feedforward_layer_norm)):
            weights.update({f"{prefix}{hf}.{k}": v for k, v in norm(ln).items()})
        for hf, dense in (("intermediate.dense", block._feedforward_intermediate_dense),
                          ("output.dense", block._feedforward_output_dense)):
            weights[f"{prefix}{hf}.weight"], weights[f"{prefix}{hf}.bias"] = linear(dense)
    return weights
