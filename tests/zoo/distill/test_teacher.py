"""zoo.distill.teacher on a small trained run (tests/fixtures/old_runs/sentiment, SST-2, two classes): the cached
outputs against zoo.load(teacher).predict, resumption from the parts written, and each refusal."""

import os
import shutil

import numpy as np
import pytest

import zoo
from zoo.classifier.config import MULTI_LABEL, REGRESSION, SINGLE_LABEL
from zoo.distill import teacher as teaching
from zoo.distill.teacher import TeacherError, open_teacher

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "fixtures", "old_runs")
CLASSES = ["negative", "positive"]
TEXTS = ["a wonderful, moving film", "dull and far too long", "it is what it is", "the best of the year",
         "I walked out", "x"]


@pytest.fixture()
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "teacher"
    shutil.copytree(os.path.join(FIXTURES, "sentiment"), path)
    return str(path)


def test_outputs_are_the_log_probabilities_zoo_load_predicts(run, capsys):
    teacher = open_teacher(run, SINGLE_LABEL, CLASSES, False)
    outputs = teacher.outputs(TEXTS)
    predicted = zoo.load(run).predict(TEXTS)
    expected = np.array([[answer["probabilities"][name] for name in CLASSES] for answer in predicted])
    assert outputs.shape == (len(TEXTS), 2) and outputs.dtype == np.float32
    np.testing.assert_allclose(np.exp(outputs), expected, rtol=1e-5)
    again = teacher.outputs(TEXTS)
    np.testing.assert_array_equal(again, outputs)
    assert "read from the cache" in capsys.readouterr().out


def test_a_killed_labelling_resumes_at_its_first_missing_part(run, monkeypatch):
    monkeypatch.setattr(teaching, "PART", 2)
    teacher = open_teacher(run, SINGLE_LABEL, CLASSES, False)
    first = teacher.outputs(TEXTS)
    folder = _entry(teacher, TEXTS)
    os.remove(os.path.join(folder, "part-000001.npy"))  # as if killed before the second part was renamed in
    with open(os.path.join(folder, "part-000002.npy"), "wb") as f:
        f.write(b"half a file")  # a damaged part is answered again
    answered = []
    real = teacher.answer
    monkeypatch.setattr(teacher, "answer", lambda batch: answered.extend(batch) or real(batch))
    np.testing.assert_allclose(teacher.outputs(TEXTS), first, rtol=1e-6)
    assert sorted(answered) == sorted(text.encode() for text in TEXTS[2:])


def _entry(teacher, texts):
    key = {"format": teaching.FORMAT, "teacher": teacher.digest, "texts": teaching.texts_digest(texts),
           "count": len(texts)}
    return os.path.join(teaching.cache.cache_root(), "teacher", teaching.cache.key_name(key))


def test_the_digest_follows_the_teachers_checkpoint(run):
    before = open_teacher(run, SINGLE_LABEL, CLASSES, False).digest
    for name in os.listdir(run):
        if name.startswith("ckpt-4"):
            os.remove(os.path.join(run, name))
    with open(os.path.join(run, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')
    assert open_teacher(run, SINGLE_LABEL, CLASSES, False).digest != before


@pytest.mark.parametrize("problem_type, classes, pairs, words", [
    (REGRESSION, CLASSES, False, "is a single_label_classification model and this run is a regression one"),
    (MULTI_LABEL, CLASSES, False, "is a single_label_classification model and this run is a multi_label"),
    (SINGLE_LABEL, ["bad", "good"], False, "['negative', 'positive'], and this run's data has ['bad', 'good']"),
    (SINGLE_LABEL, CLASSES, True, "reads one text and this run's data has text pairs"),
])
def test_a_teacher_of_another_shape_is_refused_naming_both(run, problem_type, classes, pairs, words):
    with pytest.raises(TeacherError, match=words.replace("[", r"\[").replace("(", r"\(")):
        open_teacher(run, problem_type, classes, pairs)


def test_missing_damaged_and_non_classifier_teachers_are_refused(tmp_path, run):
    with pytest.raises(TeacherError, match="no such file or folder"):
        open_teacher(str(tmp_path / "nowhere"), SINGLE_LABEL, CLASSES, False)
    with pytest.raises(TeacherError, match="is a 'translate' model, not a classifier"):
        open_teacher(os.path.join(FIXTURES, "translate"), SINGLE_LABEL, CLASSES, False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TeacherError, match="neither a trained run"):
        open_teacher(str(empty), SINGLE_LABEL, CLASSES, False)
    for name in os.listdir(run):
        if name.startswith("ckpt-"):
            with open(os.path.join(run, name), "wb") as f:
                f.write(b"damaged")
    with pytest.raises(TeacherError, match="cannot be loaded"):
        open_teacher(run, SINGLE_LABEL, CLASSES, False)


@pytest.mark.slow  # an export in a child process: with the end-to-end files (python -m pytest -m slow)
def test_an_export_teaches_as_its_run_does(run, tmp_path):
    from tests.conftest import run_recipe

    export_dir = tmp_path / "export"
    run_recipe("sentiment", "--mode=export", f"--model_dir={run}", f"--export_dir={export_dir}")
    from_run = open_teacher(run, SINGLE_LABEL, CLASSES, False)
    from_export = open_teacher(str(export_dir), SINGLE_LABEL, CLASSES, False)
    assert from_export.digest != from_run.digest and len(from_export.digest) == 64
    np.testing.assert_allclose(from_export.outputs(TEXTS), from_run.outputs(TEXTS), rtol=1e-5, atol=1e-6)
    assert from_export.record["path"] == str(export_dir)
