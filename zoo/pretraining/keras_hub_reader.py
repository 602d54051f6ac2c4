"""Published checkpoints as KerasHub presets ("keras_hub:PRESET", or a local KerasHub preset folder): the
BERT and ELECTRA backbones' weights under Hugging Face's names, read by zoo.pretraining.published."""

import re

import numpy as np

from zoo.pretraining.checkpoint_format import Checkpoint, PublishedCheckpointError, bert_config, one_line


def read_keras_hub(spec, preset):
    """A KerasHub BERT or ELECTRA preset (a name, downloaded by keras-hub, or a folder) as a Checkpoint."""
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
    config = bert_config(
        settings.get("embedding_dim", settings["hidden_dim"]), hidden_dim=settings["hidden_dim"],
        vocab_size=settings.get("vocabulary_size", settings.get("vocab_size")), num_heads=settings["num_heads"],
        intermediate_dim=settings["intermediate_dim"], num_layers=settings["num_layers"], dropout=settings["dropout"],
        max_length=settings["max_sequence_length"], activation="gelu_approximate",
        epsilon=backbone.get_layer("embeddings_layer_norm").epsilon)
    return Checkpoint(spec, model_type, config, _keras_hub_weights(backbone, settings["num_layers"]),
                      list(preset_tokenizer.vocabulary), preset_tokenizer.lowercase, preset_tokenizer.strip_accents,
                      vocabulary_source=f"the tokenizer of {spec}")


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


def _keras_hub_weights(backbone, num_layers):
    """A KerasHub BERT / ELECTRA backbone's weights under Hugging Face's names and layout."""
    layer, weights = backbone.get_layer, {}

    def linear(name, dense):  # Keras's (in, ..., out...) kernel -> PyTorch's (out, in)
        kernel, bias = (np.asarray(w) for w in dense.get_weights())
        weights[f"{name}.weight"], weights[f"{name}.bias"] = kernel.reshape(-1, bias.size).T, bias.reshape(-1)

    def norm(name, layer_norm):
        weights[f"{name}.weight"], weights[f"{name}.bias"] = (np.asarray(w) for w in layer_norm.get_weights())

    weights["embeddings.word_embeddings.weight"] = np.asarray(layer("token_embedding").embeddings)
    weights["embeddings.position_embeddings.weight"] = np.asarray(layer("position_embedding").position_embeddings)
    weights["embeddings.token_type_embeddings.weight"] = np.asarray(layer("segment_embedding").embeddings)
    norm("embeddings.LayerNorm", layer("embeddings_layer_norm"))
    if any(l.name == "embeddings_projection" for l in backbone.layers):
        linear("embeddings_project", layer("embeddings_projection"))
    for i in range(num_layers):
        block, prefix = layer(f"transformer_layer_{i}"), f"encoder.layer.{i}."
        attention = block._self_attention_layer
        for name in ("query", "key", "value"):
            linear(f"{prefix}attention.self.{name}", getattr(attention, f"_{name}_dense"))
        linear(f"{prefix}attention.output.dense", attention._output_dense)
        norm(f"{prefix}attention.output.LayerNorm", block._self_attention_layer_norm)
        norm(f"{prefix}output.LayerNorm", block._feedforward_layer_norm)
        linear(f"{prefix}intermediate.dense", block._feedforward_intermediate_dense)
        linear(f"{prefix}output.dense", block._feedforward_output_dense)
    return weights
