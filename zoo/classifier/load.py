"""A trained classifier loaded back: a run's newest checkpoint (`load_run`), and `Classifier`, the
Python object `zoo.load` returns for a sentiment run or its export.

    classifier = zoo.load("runs/imdb")  # or "saved_models/sentiment" (its newest version)
    classifier.predict(["a wonderful, moving film"])
    # [{"label": "positive", "probabilities": {"negative": 0.03, "positive": 0.97}}]
"""

from zoo.classifier import model as classifier
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.classifier.run_config import SentimentRunConfig
from zoo.core import inputs
from zoo.core.signatures import Served, call, strings
from zoo.runs.run_dir import RunDir

RECIPE = "sentiment"


def load_run(model_dir, average=1):
    """The newest checkpoint of a run (with average=N, the mean of the newest N), rebuilt in float32
    whatever it trained in: a LoadedRun."""
    return RunDir(model_dir).load_run(RECIPE, SentimentRunConfig, classifier.build_classifier,
                                      lambda run_dir, _: run_dir.tokenizer(), average)


def preprocessor(loaded):
    """The preprocessor of a LoadedRun: what training read and what the export serves."""
    return ClassifierPreprocessor.for_tokenizer(loaded.tokenizer, loaded.config.max_length)


class Classifier(Served):
    """A sentiment classifier answering as its export does: `predict(texts)`.

    `signatures` hold the export's "serving_default" (a SavedModel's, or the ClassifierServer's
    tf.function built from a run); `owner` holds its variables alive."""

    def __init__(self, signatures, owner, class_names, step):
        super().__init__(signatures, owner, step)
        self.class_names = list(class_names)

    @classmethod
    def from_run(cls, model_dir, average=1):
        loaded = load_run(model_dir, average)
        class_names = loaded.record.derived["class_names"]
        module = classifier.ClassifierServer(loaded.model, preprocessor(loaded), class_names)
        return cls({"serving_default": module.serve}, module, class_names, loaded.step)

    @classmethod
    def from_export(cls, saved, metadata):
        # An export made before its manifest recorded the class names: the classes by index ("0", "1" ...).
        names = metadata.get("class_names") or [str(i) for i in range(metadata["model"]["num_classes"])]
        return cls(saved.signatures, saved, names, metadata.get("step"))

    def predict(self, texts, batch_size=inputs.BATCH_SIZE):
        """A list, one per text: {"label": the likeliest class, "probabilities": {class name: probability}}.
        The texts are classified `batch_size` at a time, grouped by length."""
        return inputs.in_batches(self.predict_batch, texts, batch_size)

    def predict_batch(self, batch):
        out = call(self.signatures, "serving_default", text=strings(batch))
        return [
            {"label": label.decode("utf-8"), "probabilities": dict(zip(self.class_names, map(float, row)))}
            for label, row in zip(out["label"].numpy(), out["probabilities"].numpy())
        ]
