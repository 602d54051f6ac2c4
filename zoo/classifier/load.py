"""A trained classifier loaded back: a run's newest checkpoint (`load_run`), and `Classifier`, the
Python object `zoo.load` returns for a sentiment run or its export.

    classifier = zoo.load("runs/imdb")  # or "saved_models/sentiment" (its newest version)
    classifier.predict(["a wonderful, moving film"])
    # [{"label": "positive", "probabilities": {"negative": 0.03, "positive": 0.97}}]
    # regression: [{"score": 4.2}]; multi-label: [{"labels": ["drama"], "probabilities": {"comedy": 0.1, ...}}]
    classifier.predict(["A man plays a guitar."], text_pairs=["Someone is playing music."])  # a text-pair run
"""

from zoo.classifier import model as classifier, server
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.classifier.run_config import SentimentRunConfig
from zoo.core import inputs
from zoo.core.signatures import Served, call, strings
from zoo.runs import run_dir

RECIPE = "sentiment"


def load_run(model_dir, average=1):
    """The newest checkpoint of a run (`model_dir`: a path or the command's RunDir; with average=N, the mean of the
    newest N), rebuilt in float32 whatever it trained in: a LoadedRun."""
    return run_dir.opened(model_dir).load_run(RECIPE, SentimentRunConfig, classifier.build_classifier,
                                              lambda folder, _: folder.tokenizer(), average)


def preprocessor(loaded):
    """The preprocessor of a LoadedRun: what training read and what the export serves (text pairs for a run with
    segments)."""
    return ClassifierPreprocessor.for_tokenizer(loaded.tokenizer, loaded.config.max_length,
                                                pairs=bool(loaded.config.num_segments))


def serving_module(loaded):
    """The tf.Module the export serves for a LoadedRun, by its model.problem_type: the class (ClassifierServer),
    the number in the labels' units (RegressionServer, with training's mean and std) or the label set
    (MultiLabelServer, at model.threshold)."""
    config, derived = loaded.config, loaded.record.derived
    if config.problem_type == classifier.REGRESSION:  # targets: training's mean and std
        return server.RegressionServer(loaded.model, preprocessor(loaded), **derived["targets"])
    if config.problem_type == classifier.MULTI_LABEL:
        return server.MultiLabelServer(loaded.model, preprocessor(loaded), derived["class_names"], config.threshold)
    return server.ClassifierServer(loaded.model, preprocessor(loaded), derived["class_names"])


class Classifier(Served):
    """A sentiment classifier answering as its export does: `predict(texts)`.

    `signatures` hold the export's "serving_default" (a SavedModel's, or the ClassifierServer's
    tf.function built from a run); `owner` holds its variables alive."""

    def __init__(self, signatures, owner, class_names, step, problem_type=classifier.SINGLE_LABEL, pairs=False):
        super().__init__(signatures, owner, step)
        self.class_names, self.problem_type = list(class_names), problem_type
        self.pairs = pairs  # trained on text pairs: predict takes text_pairs

    @classmethod
    def from_run(cls, model_dir, average=1):
        loaded = load_run(model_dir, average)
        module = serving_module(loaded)
        return cls({"serving_default": module.serve}, module, loaded.record.derived["class_names"], loaded.step,
                   loaded.config.problem_type, bool(loaded.config.num_segments))

    @classmethod
    def from_export(cls, saved, metadata):
        # An export made before its manifest recorded the class names: the classes by index ("0", "1" ...).
        model = metadata.get("model", {})  # an export's manifest without it: one text, one label
        names = metadata.get("class_names") or [str(i) for i in range(model["num_classes"])]
        return cls(saved.signatures, saved, names, metadata.get("step"),
                   model.get("problem_type", classifier.SINGLE_LABEL), bool(model.get("num_segments")))

    def predict(self, texts, batch_size=inputs.BATCH_SIZE, *, text_pairs=None):
        """A list, one per text: {"label": the likeliest class, "probabilities": {class name: probability}};
        a regression's {"score": a number}; a multi-label's {"labels": the predicted set, in label order,
        "probabilities": {label: probability}}. The texts go `batch_size` at a time, grouped by length.
        A model trained on text pairs takes `text_pairs`, the second text of each of `texts`, and needs them."""
        if self.pairs != (text_pairs is not None):
            raise TypeError("This classifier was trained on text pairs: give each text's second text too, "
                            "predict(texts, text_pairs=[...])." if self.pairs else "This classifier reads one text "
                            "each (it was trained without --text_pair_column): leave text_pairs out.")
        return inputs.in_batches(self.predict_batch, texts, batch_size, text_pairs=text_pairs)

    def predict_batch(self, batch):
        texts = {"text": strings([a for a, _ in batch]), "text_pair": strings([b for _, b in batch])} if self.pairs \
            else {"text": strings(batch)}
        out = call(self.signatures, "serving_default", **texts)
        if self.problem_type == classifier.REGRESSION:
            return [{"score": float(score)} for score in out["score"].numpy()]
        if self.problem_type == classifier.MULTI_LABEL:
            return [{"labels": [label.decode("utf-8") for label in labels[:count]],
                     "probabilities": dict(zip(self.class_names, map(float, row)))}
                    for labels, count, row in zip(out["labels"].numpy(), out["label_count"].numpy(),
                                                  out["probabilities"].numpy())]
        return [{"label": label.decode("utf-8"), "probabilities": dict(zip(self.class_names, map(float, row)))}
                for label, row in zip(out["label"].numpy(), out["probabilities"].numpy())]
