"""Published BERT-style checkpoints in the zoo's own encoder (`zoo.classifier.model.build_encoder`).

A checkpoint is named by a spec:
- a local folder in Hugging Face's layout: config.json (model_type "bert" or "electra"),
  model.safetensors (or a sharded model.safetensors.index.json), vocab.txt or tokenizer.json;
- "hf:ORG/NAME[@REVISION]": that folder fetched by huggingface_hub into its cache;
- "keras_hub:PRESET", or a local KerasHub preset folder, for the BERT and ELECTRA backbones.

    checkpoint = read_checkpoint("hf:sentence-transformers/all-MiniLM-L6-v2")
    encoder = classifier.build_encoder(encoder_config(checkpoint))
    pretrained.copy_encoder_weights(checkpoint_weights.encoder_weights(checkpoint, encoder), encoder)

A checkpoint is checked whole when it is read (zoo.pretraining.checkpoint_checks), before anything is made from it;
zoo.pretraining.checkpoint_weights puts every encoder weight into the zoo's layers and names the parts left out."""

import dataclasses
import json
import os

from zoo.data import tokenizer
from zoo.pretraining.checkpoint_checks import check_checkpoint
from zoo.pretraining.checkpoint_format import Checkpoint, PublishedCheckpointError, bert_config, one_line
from zoo.pretraining.keras_hub_reader import read_keras_hub

MODEL_TYPES = ("bert", "electra")
HF_PREFIX = "hf:"
KERAS_HUB_PREFIX = "keras_hub:"
# Hugging Face's hidden_act -> ClassifierConfig.activation ("gelu" is the exact, erf one).
ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate"}
HF_FILES = ["config.json", "*.safetensors", "model.safetensors.index.json", "vocab.txt", "tokenizer.json",
            "tokenizer_config.json"]
# What a local folder holds to be read as a published checkpoint.
LAYOUT = "config.json with model_type bert or electra, model.safetensors, and vocab.txt or tokenizer.json"


def is_published(spec):
    """Whether `spec` names a published checkpoint rather than a zoo pretraining run."""
    if spec.startswith((HF_PREFIX, KERAS_HUB_PREFIX)):
        return True
    config = _read_json(os.path.join(spec, "config.json")) or {}
    return "model_type" in config or "class_name" in config


def normalize(spec):
    """The spec as a run records it: a local folder as an absolute path, names as given."""
    return spec if spec.startswith((HF_PREFIX, KERAS_HUB_PREFIX)) else os.path.abspath(spec)


def read_checkpoint(spec):
    """The Checkpoint that `spec` names, checked whole (`check_checkpoint`), or PublishedCheckpointError."""
    if spec.startswith(KERAS_HUB_PREFIX):
        checkpoint = read_keras_hub(spec, spec[len(KERAS_HUB_PREFIX):])
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
    config = _read_json(os.path.join(directory, "config.json"))
    if config is None:
        raise PublishedCheckpointError(f"{spec} is a folder without config.json: a published checkpoint's folder "
                                       f"holds {LAYOUT}.")
    if "class_name" in config:
        return read_keras_hub(spec, directory)
    model_type = config.get("model_type")
    if model_type is None and "recipe" in config:
        raise PublishedCheckpointError(f"{spec} holds a zoo {config['recipe']!r} run, not a published checkpoint "
                                       f"({LAYOUT}).")
    if model_type not in MODEL_TYPES:
        raise PublishedCheckpointError(
            f"{spec} holds a {model_type!r} model: the zoo's encoder takes model types {', '.join(MODEL_TYPES)} "
            "(BERT, MiniLM, the sentence-transformers BERT models, ELECTRA's discriminator).")
    # Hugging Face's names without the model's prefix ("bert.", "electra.").
    weights = {name.removeprefix(f"{model_type}."): value for name, value in _read_safetensors(directory, spec).items()}
    vocabulary, lowercase, strip_accents, source = _read_vocabulary(directory, spec)
    return Checkpoint(spec, model_type, _encoder_config(config, spec), weights, vocabulary, lowercase, strip_accents,
                      vocabulary_source=source)


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
            f"Could not fetch {spec} from the Hugging Face Hub: {type(error).__name__}: {one_line(error)} Check "
            f"the name and the network, or download the checkpoint elsewhere and give its local folder ({LAYOUT}).") \
            from None


def _read_json(path):
    if not os.path.exists(path):
        return None
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


def _read_vocabulary(directory, spec):
    """(pieces, lowercase, strip_accents, the file read) from vocab.txt or tokenizer.json, casing from the
    tokenizer config."""
    settings = _read_json(os.path.join(directory, "tokenizer_config.json")) or {}
    json_path = os.path.join(directory, "tokenizer.json")
    tokenizer_json = _read_json(json_path) or {}
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
        return bert_config(
            config.get("embedding_size", config["hidden_size"]), hidden_dim=config["hidden_size"],
            vocab_size=config["vocab_size"], num_heads=config["num_attention_heads"],
            intermediate_dim=config["intermediate_size"], num_layers=config["num_hidden_layers"],
            dropout=config.get("hidden_dropout_prob", 0.1), max_length=config.get("max_position_embeddings", 512),
            activation=activation, epsilon=config.get("layer_norm_eps", 1e-12))
    except KeyError as error:
        raise PublishedCheckpointError(f"{spec}'s config.json has no {error.args[0]!r}: download it again.") from None


def encoder_config(checkpoint, max_length=None):
    """The checkpoint's encoder config, with `max_length` (at most the checkpoint's positions)."""
    config = checkpoint.config
    if max_length is not None and not 2 < max_length <= config.max_length:
        raise PublishedCheckpointError(
            f"--max_length={max_length} must be in [3, {config.max_length}]: {checkpoint.source} has "
            f"{config.max_length} positions, and [CLS] and [SEP] take two.")
    return dataclasses.replace(config, max_length=max_length or config.max_length)
