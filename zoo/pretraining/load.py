"""`Encoder`, the Python object `zoo.load` returns for a pretraining run or its export (a run is read by
`zoo.pretraining.pretrained.load_pretrained`, as its export is made: its newest checkpoint, finished or not).

    encoder = zoo.load("runs/pretrain_imdb")
    encoder.encode(["a wonderful, moving film"])  # (1, hidden_dim) float32: the mean of its hidden states
    encoder.fill_mask(["a <mask> film"], top_k=3)  # per text, per <mask>: the 3 likeliest pieces
"""

import numpy as np
import tensorflow as tf

from zoo.core import inputs
from zoo.core.signatures import Served, call, strings
from zoo.pretraining import pretrained


class Encoder(Served):
    """A pretrained encoder answering as its export does: `encode(texts)` and `fill_mask(texts, top_k)`.

    `signatures` are the export's "encode" and "fill_mask" (a SavedModel's, or the EncoderServer's
    tf.functions built from a run); `owner` holds their variables alive."""

    @classmethod
    def from_run(cls, model_dir, average=1):
        loaded = pretrained.load_pretrained(model_dir, finished=False, average=average)
        module = pretrained.EncoderServer(loaded.model, loaded.tokenizer, loaded.config)
        return cls({"encode": module.encode, "fill_mask": module.fill_mask}, module, loaded.step)

    def encode(self, texts, batch_size=inputs.BATCH_SIZE):
        """(texts, hidden_dim) float32 NumPy array: each text's hidden states averaged over its tokens,
        encoded `batch_size` texts at a time, grouped by length."""
        rows = inputs.in_batches(self.encode_batch, texts, batch_size)
        return np.stack(rows) if rows else self.encode_batch([])

    def encode_batch(self, batch):
        return call(self.signatures, "encode", text=strings(batch))["pooled"].numpy()

    def fill_mask(self, texts, top_k=5, batch_size=inputs.BATCH_SIZE):
        """For each text, one list per <mask> in it (first to last), each the `top_k` likeliest pieces,
        best first, as {"token": str, "probability": float}; `batch_size` texts at a time, grouped by length."""
        if "fill_mask" not in self.signatures:
            raise ValueError("This export has no fill_mask signature, only encode: export the run again "
                             "(recipes.pretrain --mode=export) to get one.")
        top_k = tf.constant(inputs.whole("top_k", top_k, low=1), tf.int32)
        return inputs.in_batches(lambda batch: self.fill_mask_batch(batch, top_k), texts, batch_size)

    def fill_mask_batch(self, batch, top_k):
        out = call(self.signatures, "fill_mask", text=strings(batch), top_k=top_k)
        rows = zip(*(out[k].numpy() for k in ("tokens", "probabilities", "mask_count")))
        return [[[{"token": t.decode("utf-8"), "probability": float(p)} for t, p in zip(*best)]
                 for best in zip(tokens[:count], probabilities[:count])]
                for tokens, probabilities, count in rows]
