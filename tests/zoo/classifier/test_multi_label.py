"""Multi-label classification in the classifier family (issue 51, model.problem_type=multi_label_classification):
label sets as JSON lists (JSONL) or one column split on --label_separator (CSV), sigmoid outputs with binary
cross-entropy, the set at model.threshold; micro and macro F1, each label's figures and subset accuracy against
NumPy's and scikit-learn's (where installed); a label seen only in evaluation named and counted; evaluation,
zoo.load and the export in a fresh process answer alike; bad label sets refused naming file:line before any write."""

import contextlib
import csv
import dataclasses
import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.conftest import fresh_process_json, train_resumed_and_reproduced
from zoo.classifier import data as classifier_data, metrics as classifier_metrics
from zoo.data import datasets
from zoo.sentiment import recipe

QUICK = {"preset": "tiny", "batch_size": 16, "train_steps": 4, "checkpoint_every": 2, "vocab_size": 300,
         "problem_type": "multi_label_classification", "mode": "train"}
# Made-up tags, each from the words a sentence holds (so a model can learn them): positive or negative from
# SST-2's label, "film" when it says film or movie, "long" past 15 words.
TAGS = ("film", "long", "negative", "positive")


def tagged_sentences(count=240, offset=0):
    data = datasets.load_classification("sst2", "train")
    rows = []
    for text, label in zip(data.texts[offset:offset + count], data.labels[offset:offset + count].tolist()):
        words = text.split()
        tags = ["positive" if label else "negative"]
        tags += ["film"] * any(word in ("film", "movie") for word in words) + ["long"] * (len(words) > 15)
        rows.append((text, tags))
    return rows


def write_csv(path, rows, separator="|"):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "tags"])
        writer.writerows((text, separator.join(tags)) for text, tags in rows)


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": text, "label": tags}) + "\n" for text, tags in rows)


@pytest.fixture(scope="module", name="files")
def files_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tags")
    train, validation = tagged_sentences(200), tagged_sentences(40, offset=200)
    validation[3] = (validation[3][0], validation[3][1] + ["sarcastic"])  # a label training never saw
    for split, part in (("train", train), ("validation", validation)):
        write_csv(folder / f"{split}.csv", part)
        write_jsonl(folder / f"{split}.jsonl", part)
    return folder, train, validation


@pytest.fixture(scope="module", name="run")
def run_fixture(files, tmp_path_factory):
    """A CSV multi-label run, exported, and its evaluation of validation with --predictions (and its log)."""
    folder, _, _ = files
    base = tmp_path_factory.mktemp("run")
    model = zoo.train("sentiment", model_dir=base / "run", dataset=f"csv:{folder}/{{split}}.csv", label_column="tags",
                      export_dir=base / "export", overrides=["model.threshold=0.4"], **QUICK)
    with contextlib.redirect_stdout(io.StringIO()) as log:
        result = recipe.run_eval(str(base / "run"), "validation", predictions=str(base / "predictions.jsonl"))
    return base, model, result, log.getvalue()


def test_the_label_set_is_training_s_sorted_and_the_head_one_output_a_label(run):
    base, _, _, _ = run
    with open(base / "run" / "config.json") as f:
        record = json.load(f)
    assert record["derived"]["class_names"] == list(TAGS)
    assert record["model"]["num_classes"] == 4 and record["model"]["threshold"] == 0.4
    assert record["data"]["label_separator"] == "|"


def test_eval_figures_equal_those_computed_from_the_predictions_file(run, files):
    base, _, result, log = run
    _, _, validation = files
    with open(base / "predictions.jsonl", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [line["text"] for line in lines] == [text for text, _ in validation]
    assert classifier_metrics.is_predictions_file(base / "predictions.jsonl")  # a later --predictions may replace it
    assert [line["label"] for line in lines] == [sorted(set(tags) & set(TAGS)) for _, tags in validation]
    truth = np.array([[name in line["label"] for name in TAGS] for line in lines])
    chosen = np.array([[name in line["prediction"] for name in TAGS] for line in lines])
    probabilities = np.array([[line["probabilities"][name] for name in TAGS] for line in lines])
    np.testing.assert_array_equal(chosen, probabilities >= 0.4)  # 6 digits kept: none lies that near 0.4
    assert chosen.any() and not chosen.all()
    hits, support, picked = (truth & chosen).sum(0), truth.sum(0), chosen.sum(0)
    for i, name in enumerate(TAGS):
        precision = hits[i] / picked[i] if picked[i] else 0.0
        recall = hits[i] / support[i] if support[i] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        assert result["per_label"][name] == pytest.approx(
            {"precision": precision, "recall": recall, "f1": f1, "support": support[i]})
    micro = 2 * hits.sum() / (picked.sum() + support.sum())
    assert result["micro_f1"] == pytest.approx(micro)
    assert result["macro_f1"] == pytest.approx(np.mean([result["per_label"][n]["f1"] for n in TAGS]))
    assert result["subset_accuracy"] == pytest.approx(np.mean(np.all(truth == chosen, axis=1)))
    assert result["unseen_labels"] == {"sarcastic": 1} and result["threshold"] == 0.4
    assert "Warning: --dataset=csv:" in log and "'sarcastic' (1)" in log


def test_eval_figures_equal_scikit_learn_s(run):
    base, _, result, _ = run
    with open(base / "predictions.jsonl", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    truth = np.array([[name in line["label"] for name in TAGS] for line in lines])
    chosen = np.array([[name in line["prediction"] for name in TAGS] for line in lines])
    metrics = pytest.importorskip("sklearn.metrics")
    assert result["micro_f1"] == pytest.approx(metrics.f1_score(truth, chosen, average="micro", zero_division=0))
    assert result["macro_f1"] == pytest.approx(metrics.f1_score(truth, chosen, average="macro", zero_division=0))
    assert result["subset_accuracy"] == pytest.approx(metrics.accuracy_score(truth, chosen))
    precision, recall, f1, support = metrics.precision_recall_fscore_support(truth, chosen, zero_division=0)
    for i, name in enumerate(TAGS):
        assert [result["per_label"][name][k] for k in ("precision", "recall", "f1", "support")] == pytest.approx(
            [precision[i], recall[i], f1[i], support[i]])


def test_zoo_load_the_export_in_a_fresh_process_and_eval_answer_alike(run, files):
    base, model, _, _ = run
    _, _, validation = files
    texts = [text for text, _ in validation[:6]] + ["", "a word " * 300]
    answers = model.predict(texts)
    program = (
        "import json, tensorflow as tf, tensorflow_text\n"
        f"serve = tf.saved_model.load({str(base / 'export' / '1')!r}).signatures['serving_default']\n"
        f"out = serve(text=tf.constant({texts!r}))\n"
        "print(json.dumps({'probabilities': out['probabilities'].numpy().tolist(),\n"
        "                  'label_count': out['label_count'].numpy().tolist(),\n"
        "                  'labels': [[x.decode() for x in row] for row in out['labels'].numpy()]}))\n"
    )
    served = fresh_process_json(program)
    np.testing.assert_allclose(served["probabilities"], [[a["probabilities"][n] for n in TAGS] for a in answers],
                               atol=1e-6)
    for answer, labels, count, row in zip(answers, served["labels"], served["label_count"], served["probabilities"]):
        expected = [name for name, p in zip(TAGS, row) if p >= 0.4]
        assert answer["labels"] == expected == labels[:count] and labels[count:] == [""] * (4 - count)
    with open(base / "predictions.jsonl", encoding="utf-8") as f:
        evaluated = [json.loads(line) for line in f][:6]
    assert [line["prediction"] for line in evaluated] == [a["labels"] for a in answers[:6]]
    exported = zoo.load(str(base / "export")).predict(texts)
    assert [a["labels"] for a in exported] == [a["labels"] for a in answers]
    np.testing.assert_allclose([list(a["probabilities"].values()) for a in exported], served["probabilities"],
                               rtol=1e-6)


def test_explain_attributes_the_likeliest_label(run):
    base, model, _, _ = run
    text = "a thoroughly enjoyable film , beautifully crafted"
    paths = recipe.run_explain(str(base / "run"), text)
    with open(paths[-1], encoding="utf-8") as f:
        attribution = json.load(f)
    probabilities = model.predict([text])[0]["probabilities"]
    top = max(probabilities, key=probabilities.get)
    assert attribution["explained"] == f"the probability of {top!r}"
    assert attribution["value"] == pytest.approx(probabilities[top], abs=1e-5)
    assert len(attribution["shares"]) == len(attribution["tokens"]) and attribution["shares"][0] == 0


def test_jsonl_trains_resumes_and_reproduces_from_config_json(files, tmp_path):
    folder, _, _ = files
    dataset = f"jsonl:{folder}/{{split}}.jsonl"
    train_resumed_and_reproduced(tmp_path, dataset, QUICK)
    with open(tmp_path / "resumed" / "config.json") as f:
        assert json.load(f)["derived"]["class_names"] == list(TAGS)


def bad_rows(form, tmp_path, bad):
    """A file of 120 tagged SST-2 sentences, line 8 (row 7: a training row, not in validation's held-out share)
    replaced by `bad`."""
    rows = tagged_sentences(120)
    path = tmp_path / f"data.{form}"
    if form == "csv":
        write_csv(path, rows)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lines[7] = bad + "\r\n"
    else:
        write_jsonl(path, rows)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lines[7] = bad + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("form, bad, why", [
    ("csv", "a fine film,", "data.csv:8: no label in 'tags'"),
    ("csv", "a fine film,positive||film", r"data.csv:8: an empty label in 'positive\|\|film' \(split on "
                                           r"--label_separator='\|'\)"),
    ("jsonl", '{"text": "a fine film", "label": []}', r"data.jsonl:8: an empty label list in 'label'"),
    ("jsonl", '{"text": "a fine film", "label": null}', r"data.jsonl:8: no label in 'label'"),
    ("jsonl", '{"text": "a fine film", "label": ["rock|pop"]}', r"data.jsonl:8: label 'rock\|pop' holds "
                                                                r"--label_separator='\|'"),
    ("jsonl", '{"text": "a fine film", "label": [["film"]]}', r"data.jsonl:8: label list .* not a label name"),
])
def test_a_bad_label_set_is_refused_naming_file_and_line(form, bad, why, tmp_path):
    path = bad_rows(form, tmp_path, bad)
    label = {"label_column": "tags"} if form == "csv" else {}
    (tmp_path / "run").mkdir()
    with pytest.raises(ValueError, match=rf"1 bad row\(s\) .*{why}"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"{form}:{path}", **label, **QUICK)
    assert os.listdir(tmp_path / "run") == []


def test_a_separator_that_splits_nothing_is_said_with_what_was_read(tmp_path, capsys):
    rows = tagged_sentences(120)
    write_csv(tmp_path / "data.csv", rows, separator=";")
    dataset = f"csv:{tmp_path}/data.csv"
    columns = classifier_data.Columns(label="tags", problem_type="multi_label_classification")
    assert "positive;film" in classifier_data.load(dataset, "train", columns).class_names
    out = capsys.readouterr().out
    assert f"the first rows' label sets: {[';'.join(rows[0][1])]!r}" in out
    assert "no row holds more than one label: if they should, check --label_separator" in out
    semicolon = dataclasses.replace(columns, label_separator=";")
    assert classifier_data.load(dataset, "train", semicolon).class_names == TAGS
