"""Published BERT-style checkpoints in the zoo's own encoder (`zoo.classifier.model.build_encoder`).

A checkpoint is named by a spec:
- a local folder in Hugging Face's layout: config.json (model_type "bert" or "electra"),
  model.safetensors (or a sharded model.safetensors.index.json), vocab.txt or tokenizer.json;
- "hf:ORG/NAME[@REVISION]": that folder fetched by huggingface_hub into its cache;
- "keras_hub:PRESET", or a local KerasHub preset folder, for the BERT and ELECTRA backbones.

    checkpoint = read_checkpoint("hf:sentence-transformers/all-MiniLM-L6-v2")
    encoder = classifier.build_encoder(encoder_config(checkpoint))
    pretrained.copy_encoder_weights(encoder_weights(checkpoint, encoder), encoder)

A checkpoint is checked whole when it is read (`check_checkpoint`), before anything is made from
it: its vocabulary, config.json against the weights' shapes and layer count, every value finite.
Every encoder weight of the checkpoint goes into the zoo's layers (an encoder tensor the zoo's
encoder has no place for is refused); the tensors outside the encoder (pooler, heads) are named by
`unused_parts`. BERT's token-type embedding (type 0, the only one a single text uses) is folded
into the positions.
"""

import dataclasses
import json
import os
import re

import numpy as np

from zoo.classifier import model as classifier
from zoo.data import tokenizer

MODEL_TYPES = ("bert", "electra")
HF_PREFIX = "hf:"
KERAS_HUB_PREFIX = "keras_hub:"
# Hugging Face's hidden_act -> ClassifierConfig.activation ("gelu" is the exact, erf one).
ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate"}
HF_FILES = ["config.json", "*.safetensors", "model.safetensors.index.json", "vocab.txt", "tokenizer.json",
            "tokenizer_config.json"]
# What a local folder holds to be read as a published checkpoint.
LAYOUT = "config.json with model_type bert or electra, model.safetensors, and vocab.txt or tokenizer.json"
ENCODER_PARTS = ("embeddings.", "embeddings_project.", "encoder.")
# Index buffers that older transformers versions saved beside the weights: the zoo's encoder makes its own.
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
HEAD_PREFIX = "cls.predictions."  # BERT's masked-LM head


class PublishedCheckpointError(ValueError):
    """A spec that names no usable published checkpoint; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A published checkpoint read into NumPy: Hugging Face's weight names without the model
    prefix, in PyTorch's layout (a Linear's weight is (out, in))."""

    source: str
    model_type: str
    config: classifier.ClassifierConfig  # the encoder's, max_length = the checkpoint's positions
    weights: dict
    vocabulary: list
    lowercase: bool
    strip_accents: bool | None  # None: follows lowercase, as in BERT
    vocabulary_source: str  # the file the vocabulary was read from (vocab.txt, tokenizer.json), or the preset


def is_published(spec):
    """Whether `spec` names a published checkpoint rather than a zoo pretraining run."""
    if spec.startswith((HF_PREFIX, KERAS_HUB_PREFIX)):
        return True
    config = _read_json(os.path.join(spec, "config.json"), missing_ok=True) or {}
    return "model_type" in config or "class_name" in config


def normalize(spec):
    """The spec as a run records it: a local folder as an absolute path, names as given."""
    return spec if spec.startswith((HF_PREFIX, KERAS_HUB_PREFIX)) else os.path.abspath(spec)


def read_checkpoint(spec):
    """The Checkpoint that `spec` names, checked whole (`check_checkpoint`), or PublishedCheckpointError."""
    if spec.startswith(KERAS_HUB_PREFIX):
        checkpoint = _read_keras_hub(spec, spec[len(KERAS_HUB_PREFIX):])
    else:
        checkpoint = _read_folder(spec, _download(spec) if spec.startswith(HF_PREFIX) else _local_folder(spec))
    check_checkpoint(checkpoint)
    return checkpoint


def _local_folder(spec):
    if not os.path.exists(spec):
        raise PublishedCheckpointError(f"{spec} does not exist: give a checkpoint folder ({LAYOUT}), hf:ORG/NAME "
                                       "or keras_hub:PRESET.")
    if not os.path.isdir(spec):
        raise PublishedCheckpointError(f"{spec} is a file, not a folder: give the checkpoint's folder ({LAYOUT}), "
                                       "hf:ORG/NAME or keras_hub:PRESET.")
    return spec


def _read_folder(spec, directory):
    config = _read_json(os.path.join(directory, "config.json"), missing_ok=True)
    if config is None:
        raise PublishedCheckpointError(f"{spec} is a folder without config.json: a published checkpoint's folder "
                                       f"holds {LAYOUT}.")
    if "class_name" in config:
        return _read_keras_hub(spec, directory)
    model_type = config.get("model_type")
    if model_type is None and "recipe" in config:
        raise PublishedCheckpointError(f"{spec} holds a zoo {config['recipe']!r} run, not a published checkpoint "
                                       f"({LAYOUT}).")
    if model_type not in MODEL_TYPES:
        raise PublishedCheckpointError(
            f"{spec} holds a {model_type!r} model: the zoo's encoder takes model types {', '.join(MODEL_TYPES)} "
            "(BERT, MiniLM, the sentence-transformers BERT models, ELECTRA's discriminator).")
    weights = _strip_prefix(_read_safetensors(directory, spec), model_type)
    vocabulary, lowercase, strip_accents, source = _read_vocabulary(directory, spec)
    return Checkpoint(spec, model_type, _encoder_config(config, spec), weights, vocabulary, lowercase, strip_accents,
                      vocabulary_source=source)


def _one_line(error):
    """A library's error message whole, its lines joined into one sentence."""
    message = " ".join(str(error).split()) or type(error).__name__
    return message if message.endswith((".", "!", "?")) else f"{message}."


def _download(spec):
    name, _, revision = spec[len(HF_PREFIX):].partition("@")
    try:
        import huggingface_hub
    except ImportError:
        raise PublishedCheckpointError(
            f"{spec} needs the huggingface_hub package (pip install 'transformer-zoo[hub]'); or download the "
            "checkpoint elsewhere and give its local folder.") from None
    try:
        return huggingface_hub.snapshot_download(name, revision=revision or None, allow_patterns=HF_FILES)
    except Exception as error:  # offline, unknown repository or revision, network errors
        raise PublishedCheckpointError(
            f"Could not fetch {spec} from the Hugging Face Hub: {type(error).__name__}: {_one_line(error)} Check "
            f"the name and the network, or download the checkpoint elsewhere and give its local folder ({LAYOUT}).") \
            from None


def _read_json(path, missing_ok=False):
    if not os.path.exists(path):
        if missing_ok:
            return None
        raise PublishedCheckpointError(f"{path} does not exist: a checkpoint folder needs it.")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as error:
        raise PublishedCheckpointError(f"{path} is not valid JSON ({error}): download it again.") from None


def _read_safetensors(directory, spec):
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(_read_json(index).get("weight_map", {}).values()))
    elif os.path.exists(os.path.join(directory, "model.safetensors")):
        files = ["model.safetensors"]
    else:
        other = [f for f in ("pytorch_model.bin", "tf_model.h5") if os.path.exists(os.path.join(directory, f))]
        raise PublishedCheckpointError(
            f"{spec} holds no model.safetensors{f' (only {other[0]})' if other else ''}: the zoo reads the "
            "safetensors format; download that file (most Hub models publish it) into the folder.")
    weights = {}
    for name in files:
        path = os.path.join(directory, name)
        try:
            weights.update(load_file(path))
        except (SafetensorError, OSError, ValueError) as error:
            raise PublishedCheckpointError(f"{path} cannot be read ({error}): download it again.") from None
    return weights


def _strip_prefix(weights, model_type):
    prefix = f"{model_type}."
    return {name.removeprefix(prefix): value for name, value in weights.items()}


def _read_vocabulary(directory, spec):
    """(pieces, lowercase, strip_accents, the file read) from vocab.txt or tokenizer.json, casing from the
    tokenizer config."""
    settings = _read_json(os.path.join(directory, "tokenizer_config.json"), missing_ok=True) or {}
    json_path = os.path.join(directory, "tokenizer.json")
    tokenizer_json = _read_json(json_path, missing_ok=True) or {}
    normalizer = tokenizer_json.get("normalizer") or {}
    lowercase = settings.get("do_lower_case", normalizer.get("lowercase", True))
    strip_accents = settings.get("strip_accents", normalizer.get("strip_accents"))
    path = os.path.join(directory, tokenizer.VOCABULARY_FILE)
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                return [line.rstrip("\n").rstrip("\r") for line in f], lowercase, strip_accents, path
        except UnicodeDecodeError as error:
            raise PublishedCheckpointError(f"{path} is not UTF-8 text ({error}): download it again.") from None
    model = tokenizer_json.get("model") or {}
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise PublishedCheckpointError(
            f"{spec} holds no WordPiece vocabulary: it needs vocab.txt, or a tokenizer.json whose model is "
            "WordPiece.")
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    for i, (piece, piece_id) in enumerate(by_id):
        if piece_id != i:
            said = f"gives id {piece_id} to both {by_id[i - 1][0]!r} and {piece!r}" if piece_id == i - 1 else \
                f"has no piece with id {i}"
            raise PublishedCheckpointError(f"{json_path} {said}: ids must run from 0 without gaps; download it "
                                           "again.")
    return [piece for piece, _ in by_id], lowercase, strip_accents, json_path


def _encoder_config(config, spec):
    """The zoo encoder's ClassifierConfig for a Hugging Face BERT or ELECTRA config.json."""
    activation = ACTIVATIONS.get(config.get("hidden_act", "gelu"))
    if activation is None:
        raise PublishedCheckpointError(f"{spec} uses hidden_act={config['hidden_act']!r}: the zoo's encoder takes "
                                       f"{', '.join(ACTIVATIONS)}.")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise PublishedCheckpointError(f"{spec} uses position_embedding_type={config['position_embedding_type']!r}: "
                                       "the zoo's encoder takes absolute (learned) positions.")
    try:
        hidden = config["hidden_size"]
        embedding_dim = config.get("embedding_size", hidden)
        return classifier.ClassifierConfig(
            vocab_size=config["vocab_size"],
            hidden_dim=hidden,
            num_heads=config["num_attention_heads"],
            intermediate_dim=config["intermediate_size"],
            num_layers=config["num_hidden_layers"],
            dropout=config.get("hidden_dropout_prob", 0.1),
            max_length=config.get("max_position_embeddings", 512),
            position="learned",
            activation=activation,
            embedding="normalized",
            embedding_dim=None if embedding_dim == hidden else embedding_dim,
            epsilon=config.get("layer_norm_eps", 1e-12),
        )
    except KeyError as error:
        raise PublishedCheckpointError(f"{spec}'s config.json has no {error.args[0]!r}: download it again.") from None


def _read_keras_hub(spec, preset):
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
    message = _one_line(error)
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


def encoder_config(checkpoint, max_length=None, dropout=None):
    """The checkpoint's encoder config, with `max_length` (at most the checkpoint's positions) and `dropout`."""
    config = checkpoint.config
    if max_length is not None and not 2 < max_length <= config.max_length:
        raise PublishedCheckpointError(
            f"--max_length={max_length} must be in [3, {config.max_length}]: {checkpoint.source} has "
            f"{config.max_length} positions, and [CLS] and [SEP] take two.")
    return dataclasses.replace(config, max_length=max_length or config.max_length,
                               dropout=config.dropout if dropout is None else dropout)


def check_checkpoint(checkpoint):
    """Refuses (PublishedCheckpointError) a checkpoint that the zoo could not load whole, naming the file or
    tensor and what to do: a vocabulary that the tokenizer refuses or whose size is not config.json's
    vocab_size; weights with another number of layers than num_hidden_layers, or a tensor missing or of
    another shape than config.json gives it; an encoder tensor the zoo's encoder has no place for; a NaN or
    an infinity in any tensor."""
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
        found = _find(weights, name)
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
    known = {_find(weights, name) for name in expected} | set(BUFFERS)
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


def _find(weights, name):
    """The name under which `weights` holds `name`: itself, or with LayerNorm's older gamma and beta; else None."""
    legacy = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
    return next((candidate for candidate in (name, legacy) if candidate in weights), None)


def unused_parts(checkpoint, head=False):
    """The checkpoint's parts outside the encoder (pooler, masked-LM or detection head), by name; with `head`
    (BERT's masked-LM head is loaded: `mlm_head_weights`, its output tied to the embedding), less that head."""
    used = ENCODER_PARTS + ((HEAD_PREFIX,) if head else ())
    return sorted({".".join(name.split(".")[:2]) for name in checkpoint.weights if not name.startswith(used)})


def encoder_weights(checkpoint, model):
    """{layer name: [NumPy arrays, in layer.weights order]} for the encoder layers of `model`
    (an encoder or a classifier built from `encoder_config(checkpoint)`), as
    `zoo.pretraining.pretrained.copy_encoder_weights` takes them; raises PublishedCheckpointError on
    missing or misshapen weights."""
    w, source = checkpoint.weights, checkpoint.source

    def get(name):
        found = _find(w, name)  # older BERT checkpoints name LayerNorm's scale and offset gamma and beta
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

    embedding = model.get_layer("embedding")
    put(embedding.token_embedding.embeddings, get("embeddings.word_embeddings.weight"))
    positions = get("embeddings.position_embeddings.weight")[: embedding.max_length]
    put(embedding.position_embedding.position_embeddings, positions + get("embeddings.token_type_embeddings.weight")[0])
    put_norm(embedding.layer_norm, "embeddings.LayerNorm")
    layers = {layer.name: layer for layer in model.layers}
    if "encoder_projection" in layers:
        put(layers["encoder_projection"].kernel, get("embeddings_project.weight").T)
        put(layers["encoder_projection"].bias, get("embeddings_project.bias"))
    for block in classifier.encoder_blocks(model):
        prefix = f"encoder.layer.{block.name.rsplit('_', 1)[1]}."
        attention = block.self_attention
        for name, dense in (("query", attention._query_dense), ("key", attention._key_dense),
                            ("value", attention._value_dense)):
            put(dense.kernel, get(f"{prefix}attention.self.{name}.weight").T.reshape(dense.kernel.shape))
            put(dense.bias, get(f"{prefix}attention.self.{name}.bias").reshape(dense.bias.shape))
        output = attention._output_dense
        put(output.kernel, get(f"{prefix}attention.output.dense.weight").T.reshape(output.kernel.shape))
        put(output.bias, get(f"{prefix}attention.output.dense.bias"))
        put_norm(block.attention_add_norm.layer_norm, f"{prefix}attention.output.LayerNorm")
        feed_forward = block.feed_forward
        put(feed_forward.intermediate_dense.kernel, get(f"{prefix}intermediate.dense.weight").T)
        put(feed_forward.intermediate_dense.bias, get(f"{prefix}intermediate.dense.bias"))
        put(feed_forward.output_dense.kernel, get(f"{prefix}output.dense.weight").T)
        put(feed_forward.output_dense.bias, get(f"{prefix}output.dense.bias"))
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
    w = checkpoint.weights
    prefix = HEAD_PREFIX
    if f"{prefix}transform.dense.weight" not in w:
        return None
    norm = [w[_find(w, f"{prefix}transform.LayerNorm.{part}")] for part in ("weight", "bias")]
    return {
        "dense": [np.asarray(w[f"{prefix}transform.dense.weight"]).T, np.asarray(w[f"{prefix}transform.dense.bias"])],
        "norm": [np.asarray(v) for v in norm],
        "bias": [np.asarray(w[f"{prefix}bias"])],
    }
