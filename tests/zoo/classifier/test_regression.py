"""Regression in the classifier family (issue 51, model.problem_type=regression): numeric labels from CSV and JSONL,
targets standardised with training's mean and std (config.json's derived part), answered in the labels' units by
evaluation, zoo.load and the export in a fresh process alike; GLUE STS-B's figures against NumPy's (and SciPy's /
scikit-learn's where installed); bad labels refused naming file:line before anything is written."""

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.conftest import fresh_process_json, train_resumed_and_reproduced
from zoo.classifier import metrics
from zoo.core.config import ConfigError
from zoo.data import datasets
from zoo.sentiment import recipe

QUICK = {"preset": "tiny", "batch_size": 16, "train_steps": 4, "checkpoint_every": 2, "vocab_size": 300,
         "problem_type": "regression", "mode": "train"}


def scored_sentences(count=240):
    """SST-2 training sentences with a made-up score: 1 for a negative sentence, 4 for a positive one, plus a
    quarter point per word of 8 letters or more (something a model can learn from the text)."""
    data = datasets.load_classification("sst2", "train")
    rows = []
    for text, label in zip(data.texts[:count], data.labels[:count].tolist()):
        score = 1.0 + 3.0 * label + 0.25 * sum(len(word) >= 8 for word in text.split())
        rows.append((text, score))
    return rows


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "score"])
        writer.writerows(rows)


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": text, "label": score}) + "\n" for text, score in rows)


@pytest.fixture(scope="module", name="files")
def files_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scores")
    rows = scored_sentences()
    train, validation = rows[:200], rows[200:]
    for split, part in (("train", train), ("validation", validation)):
        write_csv(folder / f"{split}.csv", part)
        write_jsonl(folder / f"{split}.jsonl", part)
    return folder, train, validation


@pytest.fixture(scope="module", name="run")
def run_fixture(files, tmp_path_factory):
    """A CSV regression run, exported, and its evaluation of validation with --predictions."""
    folder, _, _ = files
    base = tmp_path_factory.mktemp("run")
    model = zoo.train("sentiment", model_dir=base / "run", dataset=f"csv:{folder}/{{split}}.csv",
                      text_column="sentence", label_column="score", export_dir=base / "export", **QUICK)
    result = recipe.run_eval(str(base / "run"), "validation", predictions=str(base / "predictions.jsonl"))
    return base, model, result


def record_of(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def test_the_targets_mean_and_std_are_training_s_and_the_head_has_one_output(run, files):
    base, _, _ = run
    _, train, _ = files
    record = record_of(base / "run")
    scores = np.array([score for _, score in train])
    assert record["model"]["problem_type"] == "regression" and record["model"]["num_classes"] == 1
    assert record["derived"]["targets"] == pytest.approx({"mean": scores.mean(), "std": scores.std()}, rel=1e-12)
    assert record["derived"]["class_names"] == [] and record["train"]["label_smoothing"] == 0.0
    head = recipe.load_trained(str(base / "run")).model.get_layer("logits")
    assert tuple(head.kernel.shape) == (32, 1) and head.activation.__name__ == "linear"  # hidden_dim 32 -> a number


def test_eval_figures_equal_those_computed_from_the_predictions_file(run, files):
    base, _, result = run
    _, _, validation = files
    with open(base / "predictions.jsonl", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [line["text"] for line in lines] == [text for text, _ in validation]
    assert [line["label"] for line in lines] == [score for _, score in validation]
    assert metrics.is_predictions_file(base / "predictions.jsonl")  # a later --predictions may replace it
    y, p = np.array([line["label"] for line in lines]), np.array([line["prediction"] for line in lines])
    assert p.std() > 0
    mse = np.mean((p - y) ** 2)
    assert result["mse"] == pytest.approx(mse, rel=1e-9)
    assert result["rmse"] == pytest.approx(np.sqrt(mse), rel=1e-9)
    assert result["mae"] == pytest.approx(np.mean(np.abs(p - y)), rel=1e-9)
    assert result["pearson"] == pytest.approx(np.corrcoef(y, p)[0, 1], rel=1e-9)

    def average_ranks(values):  # ties share the mean of their ranks, written out by hand
        ranks = np.empty(len(values))
        for value in set(values.tolist()):
            where = np.flatnonzero(values == value)
            ranks[where] = np.mean(np.flatnonzero(np.sort(values) == value) + 1)
        return ranks

    assert result["spearman"] == pytest.approx(np.corrcoef(average_ranks(y), average_ranks(p))[0, 1], rel=1e-9)


def test_eval_figures_equal_scipy_s_and_scikit_learn_s(run):
    base, _, result = run
    with open(base / "predictions.jsonl", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    y, p = np.array([line["label"] for line in lines]), np.array([line["prediction"] for line in lines])
    scipy_stats = pytest.importorskip("scipy.stats")
    assert result["spearman"] == pytest.approx(scipy_stats.spearmanr(y, p).statistic, rel=1e-9)
    assert result["pearson"] == pytest.approx(scipy_stats.pearsonr(y, p).statistic, rel=1e-9)
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    assert result["mse"] == pytest.approx(sklearn_metrics.mean_squared_error(y, p), rel=1e-9)
    assert result["mae"] == pytest.approx(sklearn_metrics.mean_absolute_error(y, p), rel=1e-9)


def test_zoo_load_the_export_in_a_fresh_process_and_eval_answer_alike(run, files):
    base, model, _ = run
    _, _, validation = files
    texts = [text for text, _ in validation[:5]] + ["", "a word " * 300]
    answers = model.predict(texts)
    assert all(set(answer) == {"score"} for answer in answers)
    program = (
        "import json, tensorflow as tf, tensorflow_text\n"
        f"serve = tf.saved_model.load({str(base / 'export' / '1')!r}).signatures['serving_default']\n"
        f"out = serve(text=tf.constant({texts!r}))\n"
        "print(json.dumps({key: value.numpy().tolist() for key, value in out.items()}))\n"
    )
    served = fresh_process_json(program)
    assert set(served) == {"score"}
    np.testing.assert_allclose(served["score"], [a["score"] for a in answers], rtol=1e-5, atol=1e-5)
    with open(base / "predictions.jsonl", encoding="utf-8") as f:
        evaluated = [json.loads(line)["prediction"] for line in f][:5]
    np.testing.assert_allclose(evaluated, [a["score"] for a in answers[:5]], rtol=1e-4, atol=1e-4)
    exported = zoo.load(str(base / "export"))
    np.testing.assert_allclose([a["score"] for a in exported.predict(texts)], served["score"], rtol=1e-6)


def test_explain_attributes_the_score(run):
    base, _, _ = run
    paths = recipe.run_explain(str(base / "run"), "a thoroughly enjoyable , beautifully crafted film")
    with open(paths[-1], encoding="utf-8") as f:
        attribution = json.load(f)
    assert attribution["explained"] == "the score" and attribution["shares"][0] == 0
    assert len(attribution["shares"]) == len(attribution["tokens"]) > 3
    assert attribution["value"] == pytest.approx(
        zoo.load(str(base / "run")).predict(["a thoroughly enjoyable , beautifully crafted film"])[0]["score"],
        rel=1e-4, abs=1e-4)


def test_jsonl_trains_resumes_and_reproduces_from_config_json(files, tmp_path):
    folder, _, _ = files
    dataset = f"jsonl:{folder}/{{split}}.jsonl"
    train_resumed_and_reproduced(tmp_path, dataset, QUICK)
    assert record_of(tmp_path / "again")["derived"]["targets"] == record_of(tmp_path / "resumed")["derived"]["targets"]


@pytest.mark.parametrize("label, why", [
    ("n/a", "'n/a' is not a number"), ("inf", "'inf' is not a number"), ("nan", "'nan' is not a number"),
    ("1,5", "'1,5' is not a number"), ("", "no label in 'label'")])
def test_a_label_that_is_not_a_finite_number_is_refused_naming_file_and_line(label, why, tmp_path):
    rows = [(text, str(i % 5)) for i, (text, _) in enumerate(scored_sentences(30))]
    rows[6] = ("the bad one", label)
    path = tmp_path / "data.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *rows])
    (tmp_path / "run").mkdir()
    with pytest.raises(ValueError, match=rf"1 bad row\(s\) .*data.csv:8: .*{why}"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"csv:{path}", **QUICK)
    assert os.listdir(tmp_path / "run") == []


def test_jsonl_infinity_a_boolean_and_skipped_rows(tmp_path):
    path = tmp_path / "data.jsonl"
    lines = [json.dumps({"text": text, "label": i % 4 + 0.5}) for i, (text, _) in enumerate(scored_sentences(120))]
    lines[3], lines[9] = '{"text": "too big", "label": Infinity}', '{"text": "yes", "label": true}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"2 bad row\(s\) .*data.jsonl:4: label inf is not a finite number; "
                                         r".*data.jsonl:10: label True is not a number"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"jsonl:{path}", **QUICK)
    assert not os.path.exists(tmp_path / "run")
    zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"jsonl:{path}", bad_rows="skip",
              **{**QUICK, "train_steps": 1, "vocab_size": 200})
    assert record_of(tmp_path / "run")["derived"]["files"]["bad_rows_skipped"] == 2


def test_other_refusals_before_anything_is_written(tmp_path):
    same = tmp_path / "same.csv"
    same.write_text("text,label\n" + "".join(f"sentence {i},2.5\n" for i in range(30)))
    with pytest.raises(ValueError, match="every label is 2.5; a regression needs labels that differ"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"csv:{same}", **QUICK)
    with pytest.raises(ValueError, match="--problem_type=regression reads your own csv:, tsv: or jsonl: files"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset="sst2", **QUICK)
    with pytest.raises(ConfigError, match="model.problem_type='ranking' must be one of single_label_classification"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"csv:{same}",
                  **{**QUICK, "problem_type": "ranking"})
    with pytest.raises(ConfigError, match="data.classes=.* a regression"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"csv:{same}", classes=["1", "2"], **QUICK)
    with pytest.raises(ValueError, match="train.label_smoothing=0.2 smooths class targets"):
        zoo.train("sentiment", model_dir=tmp_path / "run", dataset=f"csv:{same}", label_smoothing=0.2, **QUICK)
    assert not os.path.exists(tmp_path / "run")
