"""A sentiment run's evaluation figures by model.problem_type (docs/sentiment.md): single-label accuracy, loss,
macro-F1, each class's figures and the confusion matrix; regression's errors and correlations in the labels' own
units; multi-label's F1s and subset accuracy at the run's threshold. zoo.sentiment.recipe's run_eval gathers the
model's outputs and writes what these return."""

import typing

from zoo.classifier import metrics, model as classifier


class Figures(typing.NamedTuple):
    """An evaluation's figures: `scalars` (TensorBoard's too), `details`, the printed `text` and the
    --predictions `lines` (a function: they are written only when asked)."""

    scalars: dict
    details: dict
    text: str
    lines: typing.Callable


def single_label_figures(outputs, data, loaded):
    names = loaded.record.derived["class_names"]
    labels, probabilities = outputs["label"], outputs["probabilities"]
    report = metrics.classification_report(labels, probabilities.argmax(-1), names)
    scalars = {"accuracy": report["accuracy"], "loss": float(outputs["loss"].mean()), "macro_f1": report["macro_f1"]}
    text = (f"accuracy {scalars['accuracy']:.4f}, loss {scalars['loss']:.4f}, macro-F1 {scalars['macro_f1']:.4f}",
            metrics.format_report(report))
    details = {key: report[key] for key in ("per_class", "macro_avg", "weighted_avg", "confusion_matrix")}
    return Figures(scalars, details, "\n".join(text),
                   lambda: metrics.predictions_lines(data.texts(), labels, probabilities, names))


def regression_figures(outputs, data, loaded):
    stats = loaded.record.derived["targets"]
    labels, scores = data.targets.values, outputs["score"] * stats["std"] + stats["mean"]  # the labels' units
    report = metrics.regression_report(labels, scores)
    scalars = {key: value for key, value in report.items() if value is not None}  # a constant side: no correlation
    scalars["loss"] = float(outputs["loss"].mean())
    text = ", ".join(f"{key} {value:.4f}" if value is not None else f"{key} undefined" for key, value in report.items())
    return Figures(scalars, report, text, lambda: metrics.score_lines(data.texts(), labels, scores))


def multi_label_figures(outputs, data, loaded):
    names, threshold = loaded.record.derived["class_names"], loaded.config.threshold
    labels, probabilities = data.targets.values, outputs["probabilities"]
    predicted = probabilities >= threshold
    report = metrics.multi_label_report(labels, predicted, names)
    scalars = {key: report[key] for key in ("micro_f1", "macro_f1", "subset_accuracy")}
    scalars["loss"] = float(outputs["loss"].mean())
    details = {**{key: report[key] for key in ("per_label", "micro_avg", "macro_avg")}, "threshold": threshold,
               "unseen_labels": data.targets.unseen}
    text = (", ".join(f"{key} {value:.4f}" for key, value in scalars.items()) + f" (threshold {threshold})\n"
            + metrics.format_multi_label(report))
    return Figures(scalars, details, text,
                   lambda: metrics.label_set_lines(data.texts(), labels, probabilities, predicted, names))


FIGURES = {classifier.SINGLE_LABEL: single_label_figures, classifier.REGRESSION: regression_figures,
           classifier.MULTI_LABEL: multi_label_figures}
