"""A trained language model loaded back: a run's newest checkpoint (`load_run`), and `LanguageModel`,
the Python object `zoo.load` returns for a language-model run or its export.

    lm = zoo.load("runs/shakespeare")
    lm.generate(["ROMEO:"], max_new_tokens=200, top_k=40, seed=1)  # the continuations, one per prompt
    lm.score(["To be, or not to be"])  # [{"log_likelihood": ..., "tokens": ..., "perplexity": ...}]
"""

import tensorflow as tf

from zoo.core.signatures import Served, call, texts_tensor
from zoo.language_model import data as lm_data, model as lm
from zoo.language_model.server import LanguageModelServer
from zoo.runs.run_dir import RunDir

RECIPE = "lm"


def load_run(model_dir, memory_length=None, average=1):
    """The newest checkpoint (float32; with average=N, the mean of the newest N) as a LoadedRun whose
    tokenizer is the Vocabulary, optionally keeping a different memory length."""
    def make_config(model):
        config = lm.LMConfig(**model)
        return config if memory_length is None else lm.with_memory_length(config, memory_length)

    return RunDir(model_dir).load_run(RECIPE, make_config, lm.build_language_model,
                                      lambda run_dir, _: lm_data.load_vocabulary(run_dir.path), average)


class LanguageModel(Served):
    """A language model answering as its export does: `generate(prompts, ...)` and `score(texts)`.

    `signatures` are the export's "generate" and "score" (a SavedModel's, or the LanguageModelServer's
    tf.functions built from a run); `owner` holds their variables alive."""

    @classmethod
    def from_run(cls, model_dir, average=1):
        loaded = load_run(model_dir, average=average)
        module = LanguageModelServer(loaded.model, loaded.tokenizer)
        return cls({"generate": module.generate, "score": module.score}, module, loaded.step)

    @classmethod
    def from_export(cls, saved, metadata):
        return cls(saved.signatures, saved, metadata.get("step"))

    def generate(self, prompts, max_new_tokens=100, top_k=0, temperature=1.0, seed=0):
        """The continuation of each prompt (without the prompt): `max_new_tokens` tokens sampled at
        `temperature` from the `top_k` most likely (0: from all), drawn from `seed` (the same seed, the
        same text). A word-level continuation is its words joined by spaces."""
        out = call(self.signatures, "generate", prompt=texts_tensor(prompts, "prompts"),
                   max_new_tokens=tf.constant(max_new_tokens, tf.int32),
                   temperature=tf.constant(temperature, tf.float32), top_k=tf.constant(top_k, tf.int32),
                   seed=tf.constant(seed, tf.int32))
        return [t.decode("utf-8", errors="replace") for t in out["continuation"].numpy()]

    def score(self, texts):
        """For each text: {"log_likelihood": of its tokens, "tokens": how many, "perplexity"}."""
        out = call(self.signatures, "score", text=texts_tensor(texts))
        return [{"log_likelihood": float(ll), "tokens": int(n), "perplexity": float(p)}
                for ll, n, p in zip(*(out[k].numpy() for k in ("log_likelihood", "tokens", "perplexity")))]
