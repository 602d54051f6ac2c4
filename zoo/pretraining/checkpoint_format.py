"""What every part of reading a published checkpoint shares: the `Checkpoint` it makes, the error it raises,
the tensor names' parts, and how a tensor is found under its older names. zoo.pretraining.published reads a
checkpoint through keras_hub_reader and checks it with checkpoint_checks; checkpoint_weights turns it into the
zoo's layers' weights. All of them import this module, which imports none of them."""

import dataclasses

from zoo.classifier import model as classifier

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


def bert_config(embedding_dim, **fields):
    """The zoo encoder's ClassifierConfig of a BERT or ELECTRA encoder (`fields`: ClassifierConfig's): learned
    positions and a normalized embedding, projected from `embedding_dim` where it is not hidden_dim (ELECTRA's)."""
    return classifier.ClassifierConfig(position="learned", embedding="normalized",
                                       embedding_dim=None if embedding_dim == fields["hidden_dim"] else embedding_dim,
                                       **fields)


def find(weights, name):
    """The name under which `weights` holds `name`: itself, or with LayerNorm's older gamma and beta; else None."""
    legacy = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
    return next((candidate for candidate in (name, legacy) if candidate in weights), None)


def one_line(error):
    """A library's error message whole, its lines joined into one sentence."""
    message = " ".join(str(error).split()) or type(error).__name__
    return message if message.endswith((".", "!", "?")) else f"{message}."
