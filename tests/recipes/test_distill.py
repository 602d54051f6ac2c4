"""End to end: knowledge distillation and augmentation (issue 60; docs/distillation.md), written from the docs and the
recipe's --helpfull alone, on slices small enough for a 2-core machine.

The single-label teacher is the small SST-2 run of tests/fixtures/old_runs/sentiment (classes negative, positive;
checkpoints at steps 2 and 4), always copied into a temporary folder first; teachers of the other shapes (regression,
multi-label, text pairs) are trained here for two steps on files made from SST-2's first sentences. Every test has
its own $ZOO_CACHE_DIR (so the teacher's cache starts empty) unless it reads the cache of the run it checks.

What each test checks against, besides "it ran":
- the command-line run: its config.json against the flags given (the teacher's absolute path, the augment section)
  and the teacher's own step; the texts counted against the slice and the copies asked for;
- a second student (zoo.train's keywords) on the same texts: the cache's files untouched, no teacher progress;
- reproduction: every tensor of a run trained again from its config.json (augmentation on, a fresh cache) equal;
- the export: zoo.load of the export answers as zoo.load of the run, with the teacher's folder gone;
- SIGKILL during labelling: the run folder holds no config.json or checkpoint, and the next run answers only the
  parts that were missing (each entry resumed at a multiple of 4,096, fewer texts than all); SIGKILL during
  training: "Resuming from step N", every text read from the cache, and the run ends at its last step;
- a config file: the teacher's cached outputs against zoo.load(teacher).predict on the same training texts (as
  sorted rows: the cache's order is its own);
- distill.weight at its ends: 0 trains bit for bit as no teacher; 1 trains bit for bit the same with the gold labels
  flipped (and differs from no teacher, so the two comparisons mean something);
- the three problem types and text pairs: each student's config.json records its teacher's step, and it answers in
  its problem type's shape;
- transfer sets: the count of transfer texts against the file's lines or rows (and --max_transfer);
- every refusal: one `error:` line naming what is wrong, exit status 2, and --model_dir left empty (through the
  suite's warm recipe process, tests/recipe_probes.py; two of them again from a process of their own);
- a resumed run whose teacher or transfer set changed: refused naming it, the run's checkpoints as they were, and
  the unchanged resume (the control) trains on.
"""

import csv
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import zoo
from tests.conftest import HANG, ROOT, as_flags, run_recipe

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

OLD_RUNS = os.path.join(ROOT, "tests", "fixtures", "old_runs")
CLASSES = ["negative", "positive"]  # the fixture teacher's
# The student: tiny, a short warm-up so that two steps move the weights.
STUDENT = {"preset": "tiny", "vocab_size": 300, "batch_size": 16, "checkpoint_every": 2, "log_every": 2,
           "warmup_steps": 2, "mode": "train"}
SST2 = {"dataset": "sst2", "max_examples": 200, **STUDENT}
AUGMENT = {"augment": ["mask:0.1", "swap:0.1", "ngram:0.25"], "copies": 1}
WORDS = "good bad film movie great dull fun boring plot actor scene story funny sad long short not very".split()


def copy_teacher(destination, name="sentiment"):
    """A copy of an old run of tests/fixtures (never the fixture itself); its path."""
    return str(shutil.copytree(os.path.join(OLD_RUNS, name), destination))


def empty_or_absent(folder):
    return not os.path.exists(folder) or os.listdir(folder) == []


def read_json(path):
    with open(path) as f:
        return json.load(f)


def saved_tensors(model_dir, step):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def write_lines(path, count, seed=0):
    """`count` short made-up reviews, one a line (a text: transfer set)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(count):
            f.write(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + "\n")
    return str(path)


def sst2_rows(count=160):
    """SST-2's first `count` training sentences with their class names."""
    from zoo.data.datasets import load_classification

    data = load_classification("sst2", "train")
    return [(data.texts[i], data.class_names[int(data.labels[i])]) for i in range(count)]


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def trained(model_dir, capsys, **keywords):
    """zoo.train of a sentiment run in this process; its standard output."""
    capsys.readouterr()
    zoo.train("sentiment", str(model_dir), **keywords)
    return capsys.readouterr().out


ANSWERING = re.compile(r"answering ([\d,]+) of ([\d,]+) texts")
FROM_CACHE = re.compile(r"Teacher outputs of ([\d,]+) texts read from the cache")
PROGRESS = re.compile(r"Teacher outputs: ([\d,]+)/([\d,]+) texts")


def number(text):
    return int(text.replace(",", ""))


def teacher_work(out):
    """What a run's output says the teacher did, however its texts are split into cache entries: a list of
    (answered, of) for each entry it labels, and how many texts it read from the cache."""
    labelled = [(number(n), number(m)) for n, m in ANSWERING.findall(out)]
    return labelled, sum(number(n) for n in FROM_CACHE.findall(out))


def answered_all(out, count):
    """The teacher answered `count` texts, all of them, none from the cache; each entry's progress ends whole."""
    labelled, cached = teacher_work(out)
    assert labelled and all(n == m for n, m in labelled) and sum(n for n, _ in labelled) == count, out
    assert cached == 0, out
    done = [(number(n), number(m)) for n, m in PROGRESS.findall(out) if n == m]
    assert sum(n for n, _ in done) == count, out


def one_error_line(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return lines[0]


@pytest.fixture(autouse=True, name="cache_dir")
def cache_dir_fixture(tmp_path, monkeypatch):
    """Each test's own, empty $ZOO_CACHE_DIR (token and teacher caches)."""
    folder = tmp_path / "zoo-cache"
    monkeypatch.setenv("ZOO_CACHE_DIR", str(folder))
    return str(folder)


# The distilled run the first tests share: from the command line, augmentation on, the teacher given by a relative
# path (config.json must hold it absolute).

@pytest.fixture(scope="module", name="distilled")
def distilled_fixture(tmp_path_factory):
    base = tmp_path_factory.mktemp("distilled")
    teacher = copy_teacher(base / "teacher")
    cache, model_dir = str(base / "cache"), str(base / "cli")
    result = run_recipe("sentiment", *as_flags({**SST2, **AUGMENT, "train_steps": 4}),
                        f"--teacher={os.path.relpath(teacher, ROOT)}", f"--model_dir={model_dir}",
                        env={"ZOO_CACHE_DIR": cache}, check=False)
    return {"base": base, "teacher": teacher, "cache": cache, "model_dir": model_dir, "result": result}


def test_a_distilled_run_from_the_command_line_records_its_teacher_and_augmentation(distilled):
    result = distilled["result"]
    assert result.returncode == 0, result.stderr[-5000:]
    # 200 training texts and one augmented copy of each: the teacher answers 400, once.
    answered_all(result.stdout, 400)
    assert "200 labelled, 200 augmented, 0 transfer" in result.stdout, result.stdout
    config = read_json(os.path.join(distilled["model_dir"], "config.json"))
    assert config["distill"]["teacher"] == os.path.abspath(distilled["teacher"])
    assert os.path.isabs(config["distill"]["teacher"])
    assert config["distill"]["loss"] == "soft" and config["distill"]["weight"] == 0.5  # the documented defaults
    assert config["distill"]["temperature"] == 2.0 and config["distill"]["transfer"] is None
    assert config["augment"]["methods"] == AUGMENT["augment"] and config["augment"]["copies"] == 1
    recorded = config["derived"]["distill"]["teacher"]
    assert recorded["step"] == 4  # the fixture teacher's newest checkpoint
    assert re.fullmatch(r"[0-9a-f]{16,}", recorded["digest"]), recorded
    assert os.path.exists(os.path.join(distilled["model_dir"], "ckpt-4.index"))


def cache_files(cache):
    """{path: (size, mtime)} of everything under the teacher's cache."""
    found = {}
    for path in glob.glob(os.path.join(cache, "teacher", "**"), recursive=True):
        if os.path.isfile(path):
            found[path] = (os.path.getsize(path), os.stat(path).st_mtime_ns)
    return found


def test_a_second_student_on_the_same_texts_reads_the_teacher_outputs_from_the_cache(distilled, monkeypatch,
                                                                                   capsys):
    assert distilled["result"].returncode == 0
    monkeypatch.setenv("ZOO_CACHE_DIR", distilled["cache"])  # the first student's
    before = cache_files(distilled["cache"])
    assert before, "the first student left nothing in the teacher's cache"
    model_dir = distilled["base"] / "keywords"
    # Another student (another learning rate, dropout, steps) on the same texts, by zoo.train's keywords.
    out = trained(model_dir, capsys, **SST2, **AUGMENT, train_steps=2, learning_rate=1e-3, dropout=0.2,
                  teacher=os.path.relpath(distilled["teacher"]))
    assert teacher_work(out) == ([], 400), out  # all 400 from the cache, none answered
    assert not PROGRESS.search(out), out
    assert cache_files(distilled["cache"]) == before  # nothing written again
    config = read_json(model_dir / "config.json")
    assert config["distill"]["teacher"] == os.path.abspath(distilled["teacher"])
    assert config["augment"]["methods"] == AUGMENT["augment"] and config["train"]["learning_rate"] == 1e-3
    assert os.path.exists(model_dir / "ckpt-2.index")


def test_a_distilled_run_trained_again_from_its_config_json_is_bit_for_bit_the_same(distilled, tmp_path,
                                                                                   cache_dir):
    assert distilled["result"].returncode == 0
    again = str(tmp_path / "again")
    # A fresh cache: the teacher answers the augmented copies again, which must be the same texts.
    result = run_recipe("sentiment", f"--config={distilled['model_dir']}/config.json", "--mode=train",
                        f"--model_dir={again}", env={"ZOO_CACHE_DIR": cache_dir}, check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    answered_all(result.stdout, 400)
    first, second = read_json(os.path.join(distilled["model_dir"], "config.json")), read_json(f"{again}/config.json")
    assert second["distill"] == first["distill"] and second["augment"] == first["augment"]
    assert second["derived"]["distill"] == first["derived"]["distill"]
    expected, got = saved_tensors(distilled["model_dir"], 4), saved_tensors(again, 4)
    assert len(expected) > 20 and sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_the_student_exports_and_serves_with_its_teacher_gone(distilled, tmp_path, probe_recipe, cache_dir):
    assert distilled["result"].returncode == 0
    export_dir = str(tmp_path / "export")
    teacher, away = distilled["teacher"], distilled["teacher"] + ".away"
    os.rename(teacher, away)  # put back below, for any test after this one
    try:
        exported = probe_recipe("sentiment", "--mode=export", f"--model_dir={distilled['model_dir']}",
                                f"--export_dir={export_dir}", env={"ZOO_CACHE_DIR": cache_dir})
        assert exported.returncode == 0, exported.stderr[-3000:]
        assert os.path.exists(os.path.join(export_dir, "1", "saved_model.pb"))
        texts = ["a gorgeous , witty film", "dull and far too long", ""]
        served = zoo.load(export_dir).predict(texts)
        from_run = zoo.load(distilled["model_dir"]).predict(texts)
    finally:
        os.rename(away, teacher)
    assert len(served) == len(texts)
    for answer, reference in zip(served, from_run):
        assert answer["label"] in CLASSES and sorted(answer["probabilities"]) == CLASSES
        assert answer["label"] == reference["label"]
        for name in CLASSES:
            assert abs(answer["probabilities"][name] - reference["probabilities"][name]) < 1e-5
        assert abs(sum(answer["probabilities"].values()) - 1) < 1e-5


# SIGKILL, during the teacher's labelling and then during training.

def wait_for(process, done, what):
    deadline = time.time() + HANG
    while not done():
        assert process.poll() is None, f"the run ended before {what}"
        assert time.time() < deadline, f"no {what} in time"
        time.sleep(0.02)


def test_a_run_killed_while_the_teacher_labels_and_then_while_it_trains_resumes_each_time(tmp_path, cache_dir):
    teacher = copy_teacher(tmp_path / "teacher")
    transfer = write_lines(tmp_path / "transfer.txt", 12_000)  # 3 parts of 4,096, about 2 s each here
    total = 200 + 12_000
    model_dir = str(tmp_path / "run")
    command = [sys.executable, "-m", "recipes.sentiment", *as_flags({**SST2, "train_steps": 40}),
               f"--teacher={teacher}", f"--transfer=text:{transfer}", f"--model_dir={model_dir}"]
    env = {**os.environ, "ZOO_CACHE_DIR": cache_dir, "PYTHONUNBUFFERED": "1"}

    def start(log):
        with open(log, "w") as out:
            return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)

    def printed(log, absent=None):
        if absent is not None and not os.path.exists(log):
            return absent
        with open(log) as f:
            return f.read()

    # 1. Killed once the first part of the teacher's outputs is done.
    first_log = str(tmp_path / "first.log")
    process = start(first_log)
    try:
        # A progress line of a labelling not yet whole (X/Y, X < Y): the 12,000 transfer texts' first part.
        wait_for(process, lambda: any(number(n) < number(m) for n, m in PROGRESS.findall(printed(first_log))),
                 "teacher progress line")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=HANG)
    finally:
        if process.poll() is None:
            process.kill()
    first = printed(first_log)
    assert process.returncode == -signal.SIGKILL, first[-3000:]
    labelled, cached = teacher_work(first)
    assert cached == 0 and all(n == m for n, m in labelled), first[-3000:]
    assert "Training texts:" not in first, "the labelling ended before the kill"
    # Nothing of the run is written before the teacher has answered.
    assert not os.path.exists(os.path.join(model_dir, "config.json"))
    assert not glob.glob(os.path.join(model_dir, "ckpt-*"))

    # 2. Run again: the labelling resumes at its first missing part; killed after its first checkpoint.
    second_log = str(tmp_path / "second.log")
    process = start(second_log)
    try:
        # A checkpoint is whole once the `checkpoint` file names it (ckpt-2.index alone may be half written).
        wait_for(process, lambda: "ckpt-" in printed(os.path.join(model_dir, "checkpoint"), ""), "first checkpoint")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=HANG)
    finally:
        if process.poll() is None:
            process.kill()
    second = printed(second_log)
    assert process.returncode == -signal.SIGKILL, second[-3000:]
    assert "Trained to step" not in second, "the run ended before the kill"
    labelled, cached = teacher_work(second)
    assert sum(m for _, m in labelled) + cached == total, second[-3000:]  # every text, answered or cached
    assert sum(n for n, _ in labelled) < total, second[-3000:]  # fewer answered than all
    assert any(n < m for n, m in labelled), f"no labelling resumed part way: {labelled}"
    for missing, of in labelled:
        assert (of - missing) % 4096 == 0, f"resumed at {missing} of {of}: not at a part's start"

    # 3. Run again: training resumes from the checkpoint the kill left; the teacher is not asked again.
    result = run_recipe("sentiment", *command[3:], env={"ZOO_CACHE_DIR": cache_dir}, check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    resumed = re.search(r"Resuming from step (\d+)", result.stdout)
    assert resumed and 2 <= int(resumed.group(1)) < 40, result.stdout
    assert teacher_work(result.stdout) == ([], total), result.stdout  # all from the cache
    assert "step 40/40" in result.stdout and os.path.exists(os.path.join(model_dir, "ckpt-40.index"))
    assert read_json(os.path.join(model_dir, "config.json"))["derived"]["distill"]["transfer"]["count"] == 12_000


# A config file, and the cache against the teacher's own answers.

def test_a_config_file_run_caches_what_the_teacher_answers_through_zoo_load(tmp_path, capsys, cache_dir):
    teacher = copy_teacher(tmp_path / "teacher")
    rows = sst2_rows(160)
    write_csv(tmp_path / "train.csv", ["text", "label"], rows[:120])
    write_csv(tmp_path / "validation.csv", ["text", "label"], rows[120:])
    config_file = tmp_path / "distill.json"
    config_file.write_text(json.dumps({
        "data": {"dataset": f"csv:{tmp_path}/{{split}}.csv"},
        "train": {"train_steps": 2, "batch_size": 16, "warmup_steps": 2, "checkpoint_every": 2},
        "model": {"vocab_size": 300},
        "distill": {"teacher": teacher, "loss": "mse", "weight": 0.7, "temperature": 3.0},
    }))
    model_dir = tmp_path / "run"
    out = trained(model_dir, capsys, config=str(config_file), preset="tiny", mode="train")
    answered_all(out, 120)
    assert "120 labelled, 0 augmented, 0 transfer" in out, out
    config = read_json(model_dir / "config.json")
    assert config["distill"]["teacher"] == teacher and config["distill"]["loss"] == "mse"
    assert config["distill"]["weight"] == 0.7 and config["distill"]["temperature"] == 3.0
    # The cache holds the teacher's log-probabilities of the 120 training texts (docs: "the teacher's outputs are
    # its log-probabilities"), in an order of its own: compared, sorted, to what zoo.load(teacher) answers.
    parts = sorted(glob.glob(os.path.join(cache_dir, "teacher", "*", "*.npy")))
    assert parts, os.listdir(cache_dir)
    cached = np.exp(np.concatenate([np.load(part) for part in parts]).astype(np.float64))
    answered = zoo.load(teacher).predict([text for text, _ in rows[:120]])
    expected = np.array([[answer["probabilities"][name] for name in CLASSES] for answer in answered])
    assert cached.shape == expected.shape
    np.testing.assert_allclose(cached.sum(-1), 1, atol=1e-4)
    order = lambda table: table[np.lexsort(table.T[::-1])]  # noqa: E731 - rows sorted by their values
    np.testing.assert_allclose(order(cached), order(expected), atol=1e-5)


# The mixing weight at its two ends, against runs it must equal (docs: each example's loss is
# weight x teacher_loss + (1 - weight) x gold x gold_loss).

def test_the_teachers_weight_at_0_trains_as_no_teacher_and_at_1_ignores_the_gold_labels(tmp_path, capsys):
    teacher = copy_teacher(tmp_path / "teacher")
    rows = sst2_rows(160)
    flip = {"negative": "positive", "positive": "negative"}
    for name, labelled in (("gold", rows), ("flipped", [(text, flip[label]) for text, label in rows])):
        write_csv(tmp_path / f"{name}_train.csv", ["text", "label"], labelled[:120])
        write_csv(tmp_path / f"{name}_validation.csv", ["text", "label"], labelled[120:])
    gold, flipped = f"csv:{tmp_path}/gold_{{split}}.csv", f"csv:{tmp_path}/flipped_{{split}}.csv"
    settings = {**STUDENT, "train_steps": 2, "learning_rate": 1e-2}
    runs = {"plain": {"dataset": gold},
            "weight 0": {"dataset": gold, "teacher": teacher, "distill_weight": 0.0},
            "weight 1": {"dataset": gold, "teacher": teacher, "distill_weight": 1.0},
            "weight 1, labels flipped": {"dataset": flipped, "teacher": teacher, "distill_weight": 1.0}}
    tensors = {}
    for name, keywords in runs.items():
        model_dir = tmp_path / name.replace(" ", "_").replace(",", "")
        trained(model_dir, capsys, **settings, **keywords)
        tensors[name] = saved_tensors(str(model_dir), 2)

    def equal(first, second):
        assert sorted(tensors[first]) == sorted(tensors[second])
        return all(np.array_equal(tensors[first][n], tensors[second][n]) for n in tensors[first])

    assert len(tensors["plain"]) > 20
    assert equal("plain", "weight 0"), "a teacher weighted 0 changed what the student learned"
    assert equal("weight 1", "weight 1, labels flipped"), "the gold labels counted at distill.weight=1"
    assert not equal("plain", "weight 1"), "the teacher changed nothing: the comparisons above prove nothing"


# Transfer sets.

def test_a_jsonl_transfer_set_reads_the_column_given_and_max_transfer_picks_that_many(tmp_path, cache_dir):
    teacher = copy_teacher(tmp_path / "teacher")
    rng = random.Random(1)
    rows = [{"id": i, "body": " ".join(rng.choice(WORDS) for _ in range(5))} for i in range(50)]  # no "text" key
    write_jsonl(tmp_path / "unlabelled.jsonl", rows)
    model_dir = str(tmp_path / "run")
    result = run_recipe("sentiment", *as_flags({**SST2, "train_steps": 2}), f"--teacher={teacher}",
                        f"--transfer=jsonl:{tmp_path}/unlabelled.jsonl", "--config.distill.transfer_text_column=body",
                        "--max_transfer=30", f"--model_dir={model_dir}", env={"ZOO_CACHE_DIR": cache_dir},
                        check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    answered_all(result.stdout, 230)
    assert "200 labelled, 0 augmented, 30 transfer" in result.stdout, result.stdout
    config = read_json(os.path.join(model_dir, "config.json"))
    assert config["distill"]["transfer_text_column"] == "body" and config["distill"]["max_transfer"] == 30
    assert config["distill"]["transfer"] == f"jsonl:{tmp_path}/unlabelled.jsonl"
    assert config["derived"]["distill"]["transfer"]["count"] == 30


# The other problem types and text pairs, each with a teacher of its own.

@pytest.fixture(scope="module", name="task_teachers")
def task_teachers_fixture(tmp_path_factory):
    """Files of each shape made from SST-2's first 160 sentences (120 train, 40 validation), and a teacher trained
    on each for two steps: {task: (its data keywords, its teacher's folder)}. The pairs are labelled by their first
    text's sentiment (the fixture teacher's label set, so only their shape differs from SST-2's); "labels" is the
    SST-2 texts labelled bad/good (another label set than the fixture teacher's), without a teacher."""
    base = tmp_path_factory.mktemp("tasks")
    rows = sst2_rows(160)
    order = np.random.default_rng(0).permutation(len(rows))
    splits = {"train": range(0, 120), "validation": range(120, 160)}
    for split, indices in splits.items():
        write_csv(base / f"regression_{split}.csv", ["text", "label"],
                  [(rows[i][0], float(len(rows[i][0].split()))) for i in indices])
        write_jsonl(base / f"multi_{split}.jsonl",
                    [{"text": rows[i][0], "label": [rows[i][1]] + (["long"] if len(rows[i][0].split()) > 8 else [])}
                     for i in indices])
        write_csv(base / f"pairs_{split}.csv", ["first", "second", "label"],  # labelled by the first's sentiment
                  [(rows[i][0], rows[order[i]][0], rows[i][1]) for i in indices])
        write_csv(base / f"labels_{split}.csv", ["text", "label"],
                  [(rows[i][0], {"negative": "bad", "positive": "good"}[rows[i][1]]) for i in indices])
    data = {
        "regression": {"dataset": f"csv:{base}/regression_{{split}}.csv", "problem_type": "regression"},
        "multi_label": {"dataset": f"jsonl:{base}/multi_{{split}}.jsonl",
                        "problem_type": "multi_label_classification"},
        "pairs": {"dataset": f"csv:{base}/pairs_{{split}}.csv", "text_column": "first",
                  "text_pair_column": "second"},
    }
    teachers = {"labels": ({"dataset": f"csv:{base}/labels_{{split}}.csv"}, None)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZOO_CACHE_DIR", str(base / "cache"))
        for task, keywords in data.items():
            zoo.train("sentiment", str(base / f"{task}_teacher"), **STUDENT, **keywords, train_steps=2)
            teachers[task] = (keywords, str(base / f"{task}_teacher"))
    return teachers


@pytest.mark.parametrize("task", ["regression", "multi_label", "pairs"])
def test_each_problem_type_and_text_pairs_learn_from_a_teacher_of_their_own(task, task_teachers, tmp_path, capsys):
    keywords, teacher = task_teachers[task]
    model_dir = tmp_path / "student"
    out = trained(model_dir, capsys, **STUDENT, **keywords, teacher=teacher, train_steps=2, **AUGMENT)
    answered_all(out, 240)
    assert "120 labelled, 120 augmented, 0 transfer" in out, out
    config = read_json(model_dir / "config.json")
    assert config["distill"]["teacher"] == teacher and config["derived"]["distill"]["teacher"]["step"] == 2
    assert config["model"]["problem_type"] == keywords.get("problem_type", "single_label_classification")
    assert os.path.exists(model_dir / "ckpt-2.index")
    student = zoo.load(str(model_dir))
    texts = ["a gorgeous , witty film", "dull"]
    if task == "regression":
        answers = student.predict(texts)
        assert all(np.isfinite(answer["score"]) for answer in answers), answers
    elif task == "multi_label":
        answers = student.predict(texts)
        assert all(sorted(answer["probabilities"]) == ["long", "negative", "positive"] for answer in answers), answers
    else:
        answers = student.predict(texts, text_pairs=["a good film", "the worst film"])
        assert all(answer["label"] in CLASSES for answer in answers), answers


# Refusals: one error line, exit status 2, nothing written.

def refusal_cases(tmp_path, task_teachers):
    """{case: (flags, regexes the error line must match)}; every file they name made here."""
    teacher = copy_teacher(tmp_path / "teacher")
    damaged = copy_teacher(tmp_path / "damaged")
    for path in glob.glob(os.path.join(damaged, "ckpt-*")):
        with open(path, "wb") as f:
            f.write(b"not a checkpoint\n" * 64)
    translator = copy_teacher(tmp_path / "translator", "translate")
    lines = write_lines(tmp_path / "lines.txt", 20)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    empty_rows = tmp_path / "empty.jsonl"
    empty_rows.write_text("\n")
    columns = tmp_path / "transfer.csv"
    columns.write_text("body,score\na fine film,1\n")
    sst2 = as_flags({**SST2, "train_steps": 2})
    missing = str(tmp_path / "no_such_run")
    labels_data, _ = task_teachers["labels"]
    pairs_data, _ = task_teachers["pairs"]
    return {
        "missing teacher": ([*sst2, f"--teacher={missing}"], [re.escape(missing), "no such file"]),
        "damaged teacher": ([*sst2, f"--teacher={damaged}"], [re.escape(damaged), "cannot be loaded|damaged"]),
        "not a classifier": ([*sst2, f"--teacher={translator}"], [re.escape(translator), "not a classifier"]),
        "regression teacher, single-label data": (
            [*sst2, f"--teacher={task_teachers['regression'][1]}"], ["regression", "single_label_classification"]),
        "single-label teacher, regression data": (
            [*as_flags({**STUDENT, **task_teachers["regression"][0], "train_steps": 2}), f"--teacher={teacher}"],
            ["regression", "single_label_classification"]),
        "pairs teacher, single texts": ([*sst2, f"--teacher={task_teachers['pairs'][1]}"],
                                        ["text pairs", "one text", "shape"]),
        "single-text teacher, pairs data": (
            [*as_flags({**STUDENT, **pairs_data, "train_steps": 2}), f"--teacher={teacher}"],
            ["text pairs", "one text", "shape"]),
        "transfer set with a pairs run": (
            [*as_flags({**STUDENT, **pairs_data, "train_steps": 2}), f"--teacher={task_teachers['pairs'][1]}",
             f"--transfer=text:{lines}"], ["distill.transfer", "pairs"]),
        "another label set": (
            [*as_flags({**STUDENT, **labels_data, "train_steps": 2}), f"--teacher={teacher}"],
            ["negative", "positive", "bad", "good"]),
        "empty transfer set": ([*sst2, f"--teacher={teacher}", f"--transfer=text:{empty}"],
                               [re.escape(str(empty)), "empty|no (text|document)"]),
        # an empty file, not a missing column (its columns are no flag's fault)
        "empty jsonl transfer set": ([*sst2, f"--teacher={teacher}", f"--transfer=jsonl:{empty_rows}"],
                                     [re.escape(str(empty_rows)), "is empty: it holds no rows",
                                      "^((?!column).)*$"]),  # a line without "column" in it
        "transfer set without a teacher": ([*sst2, f"--transfer=text:{lines}"], ["distill.transfer", "teacher"]),
        "unknown augmentation": ([*sst2, "--augment=shuffle:0.1", "--copies=1"], ["shuffle"]),
        "rate above 1": ([*sst2, "--augment=mask:1.5", "--copies=1"], [r"1\.5", r"\[0, 1\]"]),
        "rate below 0": ([*sst2, "--augment=swap:-0.1", "--copies=1"], [r"-0\.1", r"\[0, 1\]"]),
        "copies without methods": ([*sst2, "--copies=2"], ["augment.copies=2", "method"]),
        "methods without copies": ([*sst2, "--augment=mask:0.1"], ["augment.copies=0", "mask"]),
        "neighbours without vectors": ([*sst2, "--augment=neighbours:0.1", "--copies=1"], ["neighbours", "vectors"]),
        "transfer set without its column": ([*sst2, f"--teacher={teacher}", f"--transfer=csv:{columns}"],
                                            ["--transfer_text_column", "body"]),
        "the run's own folder as teacher": ([*sst2, f"--teacher={tmp_path / 'run'}"], ["own folder"]),
    }


REFUSALS = ["missing teacher", "damaged teacher", "not a classifier", "regression teacher, single-label data",
            "single-label teacher, regression data", "pairs teacher, single texts", "single-text teacher, pairs data",
            "another label set", "empty transfer set", "empty jsonl transfer set", "transfer set without a teacher",
            "transfer set with a pairs run", "unknown augmentation", "rate above 1", "rate below 0",
            "copies without methods", "methods without copies", "neighbours without vectors",
            "transfer set without its column", "the run's own folder as teacher"]


@pytest.mark.parametrize("case", REFUSALS)
def test_bad_input_is_refused_with_one_error_line_and_an_empty_run_folder(case, tmp_path, task_teachers,
                                                                          probe_recipe, cache_dir):
    """Through the recipe's entry point in the suite's warm process (tests/recipe_probes.py: the same flags parsing,
    `error:` lines and exit status as `python -m recipes.sentiment`); the --model_dir exists, empty, and stays so."""
    flags, patterns = refusal_cases(tmp_path, task_teachers)[case]
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    result = probe_recipe("sentiment", *flags, f"--model_dir={model_dir}", env={"ZOO_CACHE_DIR": cache_dir})
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    line = one_error_line(result)
    for pattern in patterns:
        assert re.search(pattern, line, re.IGNORECASE), (pattern, line)
    assert os.listdir(model_dir) == []


@pytest.mark.parametrize("case", ["damaged teacher", "another label set"])
def test_a_refusal_from_the_command_line_is_one_error_line_and_exit_status_2(case, tmp_path, task_teachers,
                                                                             cache_dir):
    """Two of the refusals above in a process of their own (`python -m recipes.sentiment`), the folder absent."""
    flags, patterns = refusal_cases(tmp_path, task_teachers)[case]
    model_dir = str(tmp_path / "run")
    result = run_recipe("sentiment", *flags, f"--model_dir={model_dir}", env={"ZOO_CACHE_DIR": cache_dir},
                        check=False)
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    line = one_error_line(result)
    for pattern in patterns:
        assert re.search(pattern, line, re.IGNORECASE), (pattern, line)
    assert empty_or_absent(model_dir), os.listdir(model_dir)


# A resumed run whose teacher or transfer set changed.

def test_a_resumed_run_refuses_a_changed_teacher_or_transfer_set_naming_it(tmp_path, capsys, probe_recipe,
                                                                          cache_dir):
    teacher = copy_teacher(tmp_path / "teacher")  # cut back to its step-2 checkpoint
    newer = tmp_path / "newer"
    newer.mkdir()
    for path in glob.glob(os.path.join(teacher, "ckpt-4.*")):
        shutil.move(path, newer)
    with open(os.path.join(teacher, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')
    other_teacher = copy_teacher(tmp_path / "other_teacher")  # the fixture's step 4
    transfer = write_lines(tmp_path / "transfer.txt", 50)
    model_dir = str(tmp_path / "run")
    settings = {**SST2, "teacher": teacher, "transfer": f"text:{transfer}"}
    out = trained(model_dir, capsys, **settings, train_steps=2)
    answered_all(out, 250)
    assert read_json(os.path.join(model_dir, "config.json"))["derived"]["distill"]["teacher"]["step"] == 2
    listing = sorted(os.listdir(model_dir))

    def refused(changed, *patterns, **overrides):
        flags = as_flags({**settings, "train_steps": 4, **overrides})
        result = probe_recipe("sentiment", *flags, f"--model_dir={model_dir}", env={"ZOO_CACHE_DIR": cache_dir})
        assert result.returncode == 2, (changed, result.returncode, result.stdout[-2000:], result.stderr[-3000:])
        line = one_error_line(result)
        for pattern in patterns:
            assert re.search(pattern, line, re.IGNORECASE), (changed, pattern, line)
        assert sorted(os.listdir(model_dir)) == listing, changed  # no step taken, nothing written
        assert teacher_work(result.stdout)[0] == [], (changed, result.stdout[-2000:])  # nothing labelled first

    refused("another teacher folder", "distill.teacher", re.escape(teacher), re.escape(other_teacher),
            "step was 2, now 4", teacher=other_teacher)
    with open(transfer, "a") as f:
        f.write("one more unlabelled line\n")
    refused("the transfer set", "distill.transfer", "count was 50, now 51")
    write_lines(transfer, 50)  # as it was
    moved = write_lines(tmp_path / "moved.txt", 50)  # the same lines under another name: the name is said
    refused("another transfer file", "distill.transfer", re.escape(f"path was text:{transfer}, now text:{moved}"),
            transfer=f"text:{moved}")
    # Other settings (copies the teacher would label) are refused before the teacher answers anything.
    refused("augmented copies", "other settings", "augment.copies", augment="mask:0.1", copies=1)
    for path in glob.glob(os.path.join(newer, "ckpt-4.*")):  # the same folder, with a newer checkpoint
        shutil.copy(path, teacher)
    shutil.copy(os.path.join(OLD_RUNS, "sentiment", "checkpoint"), teacher)
    refused("the teacher's newer checkpoint", "distill.teacher", "step was 2, now 4")
    # The control: the teacher as it was, and the same resume trains on.
    for path in glob.glob(os.path.join(teacher, "ckpt-4.*")):
        os.remove(path)
    with open(os.path.join(teacher, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')
    out = trained(model_dir, capsys, **settings, train_steps=4)
    assert "Resuming from step 2" in out and os.path.exists(os.path.join(model_dir, "ckpt-4.index")), out


def test_glove_neighbours_augment_without_a_teacher_and_keep_the_gold_labels(tmp_path, capsys):
    """The neighbours method on the shared GloVe 6B 50d file: most of SST-2's words have neighbours, the copies
    hold GloVe words in their place, and without a teacher the copies keep their text's label (gold)."""
    glove = os.path.join(os.environ.get("ZOO_DATA_DIR", os.path.join(ROOT, "..", "shared", "data")), "glove",
                         "glove.6B.50d.txt.gz")
    if not os.path.exists(glove):
        pytest.skip(f"{glove} is not here")
    out = trained(tmp_path / "run", capsys, dataset="sst2", max_examples=200, **{**STUDENT, "train_steps": 2},
                  augment=["neighbours:0.5"], copies=2, augment_vectors=glove)
    found = re.search(r"Neighbours found for ([\d,]+) of the ([\d,]+) words", out)
    assert found and number(found.group(1)) > 0.8 * number(found.group(2)), out
    assert "200 labelled, 400 augmented, 0 transfer." in out and "Teacher" not in out
    record = read_json(tmp_path / "run" / "config.json")
    assert record["augment"]["methods"] == ["neighbours:0.5"] and record["augment"]["vectors"] == glove
    assert "distill" not in record["derived"]
