"""A trained language model loaded back: a run's newest checkpoint (`load_run`), and `LanguageModel`,
the Python object `zoo.load` returns for a language-model run or its export.

    lm = zoo.load("runs/shakespeare")
    lm.generate(["ROMEO:"], max_new_tokens=200, top_k=40, seed=1)  # the continuations, one per prompt
    lm.score(["To be, or not to be"])  # [{"log_likelihood": ..., "tokens": ..., "perplexity": ...}]
"""

import dataclasses

import tensorflow as tf

from zoo.core import inputs
from zoo.core.signatures import Served, call, strings
from zoo.language_model import data as lm_data, model as lm
from zoo.language_model.server import LanguageModelServer
from zoo.language_model.run_config import LMRunConfig
from zoo.runs import run_dir

RECIPE = "lm"


def load_run(model_dir, memory_length=None, average=1):
    """The newest checkpoint of `model_dir` (a path or the command's RunDir; float32; with average=N, the mean of
    the newest N) as a LoadedRun whose tokenizer is the Vocabulary, optionally keeping a different memory length."""
    def keeping(config):  # the same model (same weights) keeping another number of positions in memory
        return config if memory_length is None else dataclasses.replace(config, memory_length=memory_length)

    loaded = run_dir.opened(model_dir).load_run(RECIPE, LMRunConfig, lambda config: lm.build_language_model(
        keeping(config)), lambda folder, _: lm_data.load_vocabulary(folder.path), average)
    return dataclasses.replace(loaded, config=keeping(loaded.config))


class LanguageModel(Served):
    """A language model answering as its export does: `generate(prompts, ...)` and `score(texts)`.

    `signatures` are the export's "generate" and "score" (a SavedModel's, or the LanguageModelServer's
    tf.functions built from a run); `owner` holds their variables alive."""

    @classmethod
    def from_run(cls, model_dir, average=1):
        loaded = load_run(model_dir, average=average)
        module = LanguageModelServer(loaded.model, loaded.tokenizer)
        return cls({"generate": module.generate, "score": module.score}, module, loaded.step)

    def generate(self, prompts, max_new_tokens=100, top_k=0, temperature=1.0, seed=0,
                 batch_size=inputs.BATCH_SIZE):
        """The continuation of each prompt (without the prompt): `max_new_tokens` tokens sampled at
        `temperature` from the `top_k` most likely (0: from all), drawn from `seed` (the same prompts, seed
        and batch_size, the same text). A word-level continuation is its words joined by spaces.

        The prompts go `batch_size` at a time in their own order: a prompt's draw depends on its row in
        the batch, so grouping by length would change what it gets."""
        temperature = inputs.finite("temperature", temperature, low=0.0, above=True,
                                    meaning=" (1 samples from the model's own distribution)")
        settings = {"max_new_tokens": tf.constant(inputs.whole("max_new_tokens", max_new_tokens, low=1), tf.int32),
                    "top_k": tf.constant(inputs.whole("top_k", top_k, low=0), tf.int32),
                    "temperature": tf.constant(temperature, tf.float32),
                    "seed": tf.constant(inputs.whole("seed", seed, *inputs.INT32), tf.int32)}

        def generate_batch(batch):
            out = call(self.signatures, "generate", prompt=strings(batch), **settings)
            return [t.decode("utf-8", errors="replace") for t in out["continuation"].numpy()]

        return inputs.in_batches(generate_batch, prompts, batch_size, name="prompts", by_length=False)

    def score(self, texts, batch_size=inputs.BATCH_SIZE):
        """For each text: {"log_likelihood": of its tokens, "tokens": how many, "perplexity"}, scored
        `batch_size` texts at a time, grouped by length."""
        return inputs.in_batches(self.score_batch, texts, batch_size)

    def score_batch(self, batch):
        out = call(self.signatures, "score", text=strings(batch))
        return [{"log_likelihood": float(ll), "tokens": int(n), "perplexity": float(p)}
                for ll, n, p in zip(*(out[k].numpy() for k in ("log_likelihood", "tokens", "perplexity")))]
