"""A classifier's evaluation as a user reads it, as scikit-learn's reports give it (a class never predicted has
precision 0, one never present recall 0): a single-label, a regression (GLUE STS-B's figures) and a multi-label
report, and the --predictions file's lines (each evaluated text's label, prediction and probabilities)."""

import json

import numpy as np


def confusion_matrix(labels, predictions, num_classes):
    """(num_classes, num_classes) counts: row = the true class, column = the predicted one."""
    matrix = np.zeros((num_classes, num_classes), np.int64)
    np.add.at(matrix, (np.asarray(labels, np.int64), np.asarray(predictions, np.int64)), 1)
    return matrix


def _ratio(numerator, denominator):
    """numerator / denominator, 0 where the denominator is 0 (scikit-learn's zero_division)."""
    return np.divide(numerator, denominator, out=np.zeros(len(numerator)), where=denominator > 0)


def classification_report(labels, predictions, class_names):
    """The report of integer `labels` against `predictions` (class ids into `class_names`), as a dict:
    accuracy, macro_f1, per_class {name: {precision, recall, f1, support}}, macro_avg and weighted_avg
    (precision, recall, f1) and confusion_matrix (a list of rows, the true class's)."""
    matrix = confusion_matrix(labels, predictions, len(class_names))
    correct, support, predicted = np.diag(matrix), matrix.sum(axis=1), matrix.sum(axis=0)
    precision, recall = _ratio(correct, predicted), _ratio(correct, support)
    f1 = _ratio(2 * precision * recall, precision + recall)
    weights = support / max(support.sum(), 1)
    return {
        "accuracy": float(correct.sum() / max(matrix.sum(), 1)),
        "macro_f1": float(f1.mean()),
        "per_class": {name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
                      for name, p, r, f, s in zip(class_names, precision, recall, f1, support)},
        "macro_avg": {"precision": float(precision.mean()), "recall": float(recall.mean()), "f1": float(f1.mean())},
        "weighted_avg": {"precision": float(weights @ precision), "recall": float(weights @ recall),
                         "f1": float(weights @ f1)},
        "confusion_matrix": matrix.tolist(),
    }


def format_report(report):
    """The report as text: scikit-learn's classification_report table, then the confusion matrix."""
    names = list(report["per_class"])
    width = max(12, *(len(name) for name in names))
    total = sum(row["support"] for row in report["per_class"].values())
    line = f"{{:>{width}}} {{:>9}} {{:>9}} {{:>9}} {{:>9}}"
    lines = [line.format("", "precision", "recall", "f1-score", "support"), ""]
    for name, row in report["per_class"].items():
        lines.append(line.format(name, *(f"{row[k]:.4f}" for k in ("precision", "recall", "f1")), row["support"]))
    lines += ["", line.format("accuracy", "", "", f"{report['accuracy']:.4f}", total)]
    for title, key in (("macro avg", "macro_avg"), ("weighted avg", "weighted_avg")):
        lines.append(line.format(title, *(f"{report[key][k]:.4f}" for k in ("precision", "recall", "f1")), total))
    cell = max(5, *(len(str(v)) for row in report["confusion_matrix"] for v in row), *(len(n) for n in names))
    lines += ["", "confusion matrix (rows: true class, columns: predicted)",
              " " * width + "".join(f" {name:>{cell}}" for name in names)]
    for name, row in zip(names, report["confusion_matrix"]):
        lines.append(f"{name:>{width}}" + "".join(f" {value:>{cell}}" for value in row))
    return "\n".join(lines)


def ranks(values):
    """1-based ranks, ties given their average rank (scipy.stats.rankdata's default, which Spearman's uses)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + ends + 1) / 2)[inverse]


def correlation(a, b):
    """Pearson's correlation of two series; None where one of them is constant (undefined)."""
    a, b = np.asarray(a, np.float64) - np.mean(a), np.asarray(b, np.float64) - np.mean(b)
    norm = np.sqrt((a @ a) * (b @ b))
    return float(a @ b / norm) if norm > 0 else None


def regression_report(labels, predictions):
    """GLUE STS-B's figures of numbers `predictions` against `labels`: mse, rmse, mae, pearson and spearman
    (Pearson's correlation of the ranks)."""
    errors = np.asarray(predictions, np.float64) - np.asarray(labels, np.float64)
    mse = float(np.mean(errors**2))
    return {"mse": mse, "rmse": float(np.sqrt(mse)), "mae": float(np.mean(np.abs(errors))),
            "pearson": correlation(labels, predictions), "spearman": correlation(ranks(labels), ranks(predictions))}


def multi_label_report(labels, predicted, names):
    """The report of 0/1 `labels` (rows, labels) against the `predicted` sets (the same shape, bool), as
    scikit-learn's f1_score and precision_recall_fscore_support give them (zero_division=0): micro (over every
    row and label) and macro (the labels' mean) precision, recall and F1, per_label {name: {precision, recall,
    f1, support}} and subset_accuracy (rows whose predicted set is exactly theirs)."""
    labels, predicted = np.asarray(labels, bool), np.asarray(predicted, bool)
    hits, support, chosen = (labels & predicted).sum(0), labels.sum(0), predicted.sum(0)
    precision, recall = _ratio(hits, chosen), _ratio(hits, support)
    f1 = _ratio(2 * precision * recall, precision + recall)
    total = [np.array([value]) for value in (hits.sum(), chosen.sum(), support.sum())]
    micro_precision, micro_recall = float(_ratio(total[0], total[1])[0]), float(_ratio(total[0], total[2])[0])
    micro_f1 = float(_ratio(2 * total[0], total[1] + total[2])[0])
    return {
        "micro_f1": micro_f1, "macro_f1": float(f1.mean()),
        "subset_accuracy": float(np.mean(np.all(labels == predicted, axis=1))),
        "micro_avg": {"precision": micro_precision, "recall": micro_recall, "f1": micro_f1},
        "macro_avg": {"precision": float(precision.mean()), "recall": float(recall.mean()), "f1": float(f1.mean())},
        "per_label": {name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(n)}
                      for name, p, r, f, n in zip(names, precision, recall, f1, support)},
    }


def format_multi_label(report):
    """The multi-label report as text: each label's row, then the micro and macro averages."""
    names = list(report["per_label"])
    width = max(12, *(len(name) for name in names))
    line = f"{{:>{width}}} {{:>9}} {{:>9}} {{:>9}} {{:>9}}"
    lines = [line.format("", "precision", "recall", "f1-score", "support"), ""]
    for name, row in report["per_label"].items():
        lines.append(line.format(name, *(f"{row[k]:.4f}" for k in ("precision", "recall", "f1")), row["support"]))
    lines.append("")
    for title, key in (("micro avg", "micro_avg"), ("macro avg", "macro_avg")):
        lines.append(line.format(title, *(f"{report[key][k]:.4f}" for k in ("precision", "recall", "f1")), ""))
    return "\n".join(lines)


PREDICTION_KEYS = ("text", "label", "prediction", "probabilities")
SCORE_KEYS = ("text", "label", "prediction")  # regression's: numbers


def text_fields(text):
    """A prediction line's text: {"text"}, or a pair's {"text", "text_pair"}."""
    return {"text": text[0], "text_pair": text[1]} if isinstance(text, tuple) else {"text": text}


def predictions_lines(texts, labels, probabilities, class_names):
    """One JSON line (UTF-8 bytes) per text, in order: {"text", "label", "prediction", "probabilities":
    {class name: probability}}."""
    for text, label, row in zip(texts, labels, probabilities):
        record = {**text_fields(text), "label": class_names[label], "prediction": class_names[int(np.argmax(row))],
                  "probabilities": {name: round(float(p), 6) for name, p in zip(class_names, row)}}
        yield (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def score_lines(texts, labels, scores):
    """Regression's predictions: one JSON line per text, {"text", "label", "prediction"} (numbers)."""
    for text, label, score in zip(texts, labels, scores):
        yield (json.dumps({**text_fields(text), "label": float(label), "prediction": float(score)}, ensure_ascii=False)
               + "\n").encode("utf-8")


def label_set_lines(texts, labels, probabilities, predicted, names):
    """Multi-label predictions: one JSON line per text, {"text", "label": its labels the model knows,
    "prediction": the predicted set, "probabilities": {label: probability}}."""
    for text, row, chances, chosen in zip(texts, labels, probabilities, predicted):
        record = {**text_fields(text), "label": [n for n, v in zip(names, row) if v],
                  "prediction": [n for n, v in zip(names, chosen) if v],
                  "probabilities": {name: round(float(p), 6) for name, p in zip(names, chances)}}
        yield (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def is_predictions_file(path):
    """Whether the file at `path` is one `predictions_lines` wrote: its first line one of those records. An
    evaluation may write over such a file, and over no other (zoo.runs.outputs)."""
    try:
        with open(path, "rb") as f:
            record = json.loads(f.readline(1 << 24))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and tuple(k for k in record if k != "text_pair") in (PREDICTION_KEYS, SCORE_KEYS)
