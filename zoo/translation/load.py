"""A trained translator loaded back: a run's newest checkpoint (`load_run`), and `Translator`, the
Python object `zoo.load` returns for a translation run or its export.

    translator = zoo.load("runs/m30k_de_en")
    translator.translate(["Ein Mann fährt Fahrrad."], beam_size=5)  # ["A man is riding a bike."]
"""

import dataclasses

from zoo.core import inputs
from zoo.core.signatures import call, strings
from zoo.runs import run_dir
from zoo.translation.run_config import TranslateRunConfig
from zoo.translation import model as translation
from zoo.translation.search import DecodeConfig
from zoo.translation.server import TranslatorServer

RECIPE = "translate"


def load_run(model_dir, average=1):
    """The newest checkpoint of a run (`model_dir`: a path or the command's RunDir; with average=N, the mean of the
    newest N), rebuilt in float32 whatever it trained in: a LoadedRun whose tokenizer is the (source, target) pair."""
    return run_dir.opened(model_dir).load_run(
        RECIPE, TranslateRunConfig, translation.build_translator,
        lambda folder, config: folder.tokenizers(config.shared_vocabulary, config.words), average)


class Translator:
    """A translator answering as its export does: `translate(texts, beam_size=..., length_penalty=...)`.

    From a run, each search asked for gets its own TranslatorServer (the module an export of that search holds); an
    export searches as it was exported (its manifest's "decode"), and another search is refused."""

    def __init__(self, decode, step, loaded=None, saved=None):
        self.decode = decode  # the search translate() runs when not told otherwise
        self.step = step  # of the checkpoint the weights come from
        self.loaded, self.saved = loaded, saved  # a run's LoadedRun, or an export's SavedModel
        self.servers = {}  # DecodeConfig -> TranslatorServer (a run's)

    @classmethod
    def from_run(cls, model_dir, average=1):
        loaded = load_run(model_dir, average)
        return cls(DecodeConfig(), loaded.step, loaded=loaded)  # the recipe's defaults: beam 5, length penalty 0.6

    @classmethod
    def from_export(cls, saved, metadata):
        return cls(DecodeConfig(**metadata["decode"]), metadata.get("step"), saved=saved)

    def translate(self, texts, beam_size=None, length_penalty=None, batch_size=inputs.BATCH_SIZE):
        """The best translation of each text, in order ("" for an empty text). beam_size 1 is greedy
        search; default: the export's, or a run's beam 5 with length penalty 0.6. The texts are translated
        `batch_size` at a time, grouped by length."""
        asked = {}
        if beam_size is not None:
            asked["beam_size"] = inputs.whole("beam_size", beam_size, low=1)
        if length_penalty is not None:
            asked["length_penalty"] = inputs.finite("length_penalty", length_penalty, low=0.0,
                                                    meaning=" (0: none; the recipe's default is 0.6)")
        signatures = self.serving(dataclasses.replace(self.decode, **asked))

        def translate_batch(batch):
            out = call(signatures, "serving_default", text=strings(batch))
            return [t.decode("utf-8") for t in out["translation"].numpy()]

        return inputs.in_batches(translate_batch, texts, batch_size)

    def serving(self, decode):
        """The serving_default that searches as `decode` says: the export's own (refusing another search),
        or a run's TranslatorServer for it, made at its first use."""
        if self.saved is not None:
            if decode != self.decode:
                raise ValueError(f"This export searches with beam_size={self.decode.beam_size}, length_penalty="
                                 f"{self.decode.length_penalty}, fixed when it was exported: load the run folder "
                                 "(zoo.load(model_dir)) for another search, or export again with --beam_size and "
                                 "--length_penalty.")
            return self.saved.signatures
        if decode not in self.servers:
            model, tokenizers = self.loaded.model, self.loaded.tokenizer
            self.servers[decode] = TranslatorServer(model, tokenizers.source, tokenizers.target, decode)
        return {"serving_default": self.servers[decode].serve}
