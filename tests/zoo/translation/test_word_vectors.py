"""Word vectors in the translation recipe (issue 49): a side given a vectors file gets a word vocabulary of its
training text and an embedding started from the file (rescaled to the layer's own spread, projected to hidden_dim
from another width), recorded per side; a shared vocabulary takes one file; vectors of the wrong language, a bad
file or a disagreeing width are refused before anything is written; a changed file is refused on resume; the export
translates raw text in a fresh process as the run does; config.json reproduces the run bit for bit. Tiny runs of a
few steps on a slice of the real Multi30k."""

import collections
import contextlib
import dataclasses
import io
import json
import os
import re
import types

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.conftest import fresh_process_json, write_vectors
from zoo.translation import corpora

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

QUICK = {"dataset": "multi30k", "source": "de", "target": "en", "preset": "tiny", "max_examples": 200,
         "vocab_size": 400, "max_tokens": 1024, "batch_size": 16, "train_steps": 4, "checkpoint_every": 2,
         "mode": "train"}
DIMS = {"source": 8, "target": 12}  # both other than the tiny preset's hidden_dim (64): projected to it
TEXTS = ["Ein Mann fährt Fahrrad.", "", "Zwei Hunde spielen im Schnee!"]


def common_words(side, count):
    """The `count` commonest words of one side of Multi30k's first 3,000 training pairs (the Python reference below is
    not the zoo's tokenizer: lower-cased, runs of letters)."""
    pairs = corpora.load_translation("multi30k", "train", "de", "en")
    texts = (pairs.sources if side == "source" else pairs.targets)[:3000]
    counts = collections.Counter(w for t in texts for w in re.findall(r"[^\W\d_]+", t.lower()))
    return [w for w, _ in counts.most_common(count)]


@pytest.fixture(scope="module", name="vectors")
def vectors_fixture(tmp_path_factory):
    """{side: (GloVe-format path, {word: vector})}: German vectors of DIMS["source"] numbers, English of
    DIMS["target"], for the commonest words of each side."""
    rng, folder = np.random.default_rng(7), tmp_path_factory.mktemp("vectors")
    made = {}
    for side in ("source", "target"):
        table = {w: rng.normal(0.1, 0.4, DIMS[side]).astype(np.float32) for w in common_words(side, 400)}
        made[side] = (write_vectors(folder / f"{side}.txt", table), table)
    return made


@pytest.fixture(scope="module", name="frozen")
def frozen_fixture(vectors, tmp_path_factory):
    """A run with a vocabulary a language, each started from its vectors and frozen, exported: (run folder, export
    version folder, what zoo.train returned, its log)."""
    from zoo.translation.search import DecodeConfig

    base = tmp_path_factory.mktemp("frozen")
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        run = zoo.train("translate", model_dir=base / "run", source_vectors=vectors["source"][0],
                        target_vectors=vectors["target"][0], freeze_word_vectors=True, shared_vocabulary=False,
                        export_dir=base / "export", decode=DecodeConfig(beam_size=2), **QUICK)
    return str(base / "run"), str(base / "export" / "1"), run, log.getvalue()


def tables_at(model_dir, step):
    """{name: tensor} of the token embeddings in checkpoint `step` (not Adam's slots of their shapes)."""
    reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
            if "token_embedding" in n and not n.startswith("optimizer/")}


def table_of(model_dir, step, side=""):
    """`side`'s token embedding (its layer's name in the variable's), or the one a shared vocabulary has."""
    (matrix,) = [t for n, t in tables_at(model_dir, step).items() if f"{side}_embedding" in n]
    return matrix


def read_words(model_dir, name):
    with open(os.path.join(model_dir, name), encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def check_rows(matrix, words, table, dim):
    """The rows of the words the file holds are its vectors times one number, at the layer's spread dim ** -0.5."""
    found = [i for i, w in enumerate(words) if w in table]
    assert len(found) > 100 and matrix.shape == (len(words), dim)
    scale = matrix[found] / np.stack([table[words[i]] for i in found])
    np.testing.assert_allclose(scale, scale.flat[0], rtol=1e-5)
    assert abs(matrix[found].std() - dim**-0.5) < 1e-3
    np.testing.assert_array_equal(matrix[0], 0)  # padding


def test_each_sides_frozen_embedding_is_its_files_vectors_rescaled(frozen, vectors):
    model_dir = frozen[0]
    assert len(tables_at(model_dir, 4)) == 2
    for side in ("source", "target"):
        matrix = table_of(model_dir, 4, side)
        check_rows(matrix, read_words(model_dir, f"{side}.words.txt"), vectors[side][1], DIMS[side])
        np.testing.assert_array_equal(table_of(model_dir, 2, side), matrix)  # frozen: not trained
    projections = [n for n in tf.train.load_checkpoint(os.path.join(model_dir, "ckpt-4")).get_variable_to_shape_map()
                   if re.search(r"(source|target|reverse)_projection/.*kernel", n) and not n.startswith("optimizer/")]
    assert len(projections) == 3  # each width to hidden_dim, and hidden_dim back to the tied target table's
    for name in projections:  # ... which do train
        assert not np.array_equal(*(tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}")).get_tensor(name)
                                    for step in (2, 4)))


def test_the_record_and_the_log_say_each_sides_coverage(frozen, vectors):
    model_dir, _, _, log = frozen
    with open(os.path.join(model_dir, "config.json")) as f:
        record = json.load(f)
    model = record["model"]
    assert not any(os.path.exists(os.path.join(model_dir, n)) for n in ("source.model", "target.model", "words.txt"))
    for side, language in (("source", "de"), ("target", "en")):
        assert model[f"{side}_vectors"] == vectors[side][0] and model[f"{side}_embedding_dim"] == DIMS[side]
        assert model[f"{side}_vocab_size"] == len(read_words(model_dir, f"{side}.words.txt")) <= 400
        covered = record["derived"]["word_vectors"][side]
        assert covered["format"] == "glove" and covered["dim"] == DIMS[side] and covered["rows_read"] == 400
        assert 0.3 < covered["token_share"] < 1 and len(covered["matrix_sha256"]) == 64
        line = re.search(rf"^{side} \({language}\) word vectors: ([\d,]+) of ([\d,]+) words, ([\d.]+)% of training "
                         rf"tokens \(glove, {DIMS[side]} dimensions", log, re.M)
        assert line and int(line[1].replace(",", "")) == covered["words_found"]
        assert abs(float(line[3]) - 100 * covered["token_share"]) <= 0.05


def test_the_export_translates_raw_text_in_a_fresh_process_as_the_run_does(frozen):
    model_dir, version_dir, run, _ = frozen
    program = (
        "import json, tensorflow as tf, tensorflow_text\n"
        f"serve = tf.saved_model.load({version_dir!r}).signatures['serving_default']\n"
        f"print(json.dumps([t.decode() for t in serve(text=tf.constant({TEXTS!r}))['translation'].numpy()]))\n"
    )
    served = fresh_process_json(program)
    assert served == run.translate(TEXTS, beam_size=2) == zoo.load(model_dir).translate(TEXTS, beam_size=2)
    target_words = set(read_words(model_dir, "target.words.txt"))
    assert served[1] == "" and all(w in target_words for t in served for w in t.split(" ") if t)  # words, spaced


def test_a_run_is_reproduced_bit_for_bit_from_its_config_json(frozen, tmp_path):
    model_dir = frozen[0]
    zoo.train("translate", model_dir=tmp_path / "again", config=os.path.join(model_dir, "config.json"), mode="train")
    for step in (2, 4):
        a = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
        b = tf.train.load_checkpoint(str(tmp_path / "again" / f"ckpt-{step}"))
        names = set(a.get_variable_to_shape_map()) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
        assert len(names) > 20 and names == set(b.get_variable_to_shape_map()) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
        for name in names:  # every value, bit for bit
            assert a.get_tensor(name).tobytes() == b.get_tensor(name).tobytes(), name


def test_a_shared_vocabulary_is_both_languages_words_started_from_one_file(vectors):
    """Planned and built as a run does (not trained: the runs above train what this builds)."""
    from zoo.translation import data as translation_data, model as translation, word_embedding

    path, table = vectors["target"]
    model = dataclasses.replace(translation.PRESETS["tiny"], source_vocab_size=400, target_vocab_size=400,
                                target_vectors=path)
    pairs = translation_data.load("multi30k", "train", "de", "en").subsample(200, 0)
    plans = word_embedding.plan_sides(model, pairs, 0, types.SimpleNamespace(source="de", target="en"), {}, None)
    assert plans["source"] is plans["target"]
    words = plans["source"].words
    assert {"ein", "mann", "a", "man"} <= set(words) and len(words) == 400  # one vocabulary of both languages
    # Coverage counts the English side's tokens alone: the vocabulary's English words (and punctuation).
    english = {w for _, t in pairs for w in re.findall(r"[^\W\d_]+", t.lower())} & set(words)
    assert len(english) <= plans["source"].derived["words_in_text"] <= len(english) + 20 < 300
    built = translation.build_translator(model.with_words(plans))
    assert built.target_embedding is built.source_embedding and built.config.source_embedding_dim == DIMS["target"]
    translation.words_initializer(plans)(built)
    check_rows(built.source_embedding.token_embedding.embeddings.numpy(), words, table, DIMS["target"])


def test_resuming_with_another_matrix_is_refused_and_leaves_the_run_as_it_was(frozen, vectors, tmp_path):
    model_dir = frozen[0]
    before = sorted(os.listdir(model_dir))
    path, table = vectors["source"]
    changed = write_vectors(tmp_path / "de.txt", dict(table, mann=table["mann"] + 1))
    with pytest.raises(ValueError, match=f"{changed} is not the vectors file .* started its source embedding from"):
        zoo.train("translate", model_dir=model_dir, source_vectors=changed, target_vectors=vectors["target"][0],
                  freeze_word_vectors=True, shared_vocabulary=False, **{**QUICK, "train_steps": 6})
    assert sorted(os.listdir(model_dir)) == before


def empty_folder(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("case", ["english_on_the_german_side", "ragged", "width", "two_files_shared"])
def test_what_is_refused_leaves_the_folder_empty(case, vectors, tmp_path):
    from zoo.core.config import ConfigError

    german, english = vectors["source"][0], vectors["target"][0]
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("mann 0.1 0.2 0.3\nein 0.1 0.2\n")
    asked, error, message = {
        "english_on_the_german_side": ({"source_vectors": english, "shared_vocabulary": False}, ValueError,
                                       r"target.txt: word vectors cover \d+\.\d% of training tokens .* right file or language\? "
                                       r"\(lower the threshold with --min_vector_coverage\)"),
        "ragged": ({"source_vectors": str(ragged)}, ValueError, r"ragged.txt:2: "),
        "width": ({"target_vectors": english, "overrides": ["model.target_embedding_dim=16"],
                   "shared_vocabulary": False}, ValueError,
                  "model.target_embedding_dim=16 but the word vectors of .* have 12 dimensions"),
        "two_files_shared": ({"source_vectors": german, "target_vectors": english}, ConfigError,
                             "are two files, but a shared vocabulary"),
    }[case]
    folder = empty_folder(tmp_path)
    with pytest.raises(error, match=message):
        zoo.train("translate", model_dir=folder, **asked, **{k: v for k, v in QUICK.items() if k not in asked})
    assert os.listdir(folder) == []


def test_the_command_line_refuses_in_one_error_line(vectors, tmp_path, probe_recipe):
    folder = empty_folder(tmp_path)
    result = probe_recipe("translate", "--dataset=multi30k", "--preset=tiny", "--max_examples=200",
                          f"--source_vectors={vectors['target'][0]}", "--noshared_vocabulary", f"--model_dir={folder}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert re.search(r"^error: .*word vectors cover .*--min_vector_coverage\)$", result.stderr, re.M)
    assert os.listdir(folder) == []
    lowered = probe_recipe("translate", "--mode=config", f"--source_vectors={vectors['target'][0]}",
                           "--min_vector_coverage=0.01", "--freeze_word_vectors")
    assert lowered.returncode == 0, lowered.stderr
    assert re.search(r"^  min_vector_coverage: 0.01$", lowered.stdout, re.M), lowered.stdout
    assert re.search(r"^  freeze_word_vectors: true$", lowered.stdout, re.M)
