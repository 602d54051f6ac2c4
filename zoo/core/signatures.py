"""Calling an export's signatures from Python (zoo.load's models): a batch of texts in (checked and cut
into batches by zoo.core.inputs), the graph's own argument checks out as ValueError."""

import re

import tensorflow as tf


def strings(batch):
    """A batch of texts (zoo.core.inputs.in_batches's: UTF-8 bytes, already checked) as a (batch,) string tensor."""
    return tf.constant(batch, dtype=tf.string, shape=[len(batch)])


def call(signatures, name, **inputs):
    """`signatures[name](**inputs)`, the dict of tensors it returns; an argument the graph refuses (its
    tf.debugging assertions: top_k above the vocabulary ...) is a ValueError with the graph's message."""
    try:
        return signatures[name](**inputs)
    except tf.errors.InvalidArgumentError as error:
        refused = re.search(r"assertion failed: \[(.+?)\] \[", error.message)
        if refused is None:
            raise
        raise ValueError(f"{name}: {refused[1]}".replace("\\'", "'")) from None


class Served:
    """A model answering through `signatures` (an export's, or its server module's tf.functions built from a
    run); `owner` holds their variables alive, `step` is the checkpoint's the weights come from."""

    def __init__(self, signatures, owner, step):
        self.signatures, self.owner, self.step = signatures, owner, step

    @classmethod
    def from_export(cls, saved, metadata):
        """The model of a loaded export (`saved`) and its manifest (`metadata`), as zoo.load answers it."""
        return cls(saved.signatures, saved, metadata.get("step"))
