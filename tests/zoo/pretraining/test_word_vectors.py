"""Word vectors in the pretraining recipe (issue 49): a masked-LM run on SST-2's first training texts (a text:
corpus, so that counting and tokenizing them is quick) whose vocabulary is their words with [MASK], its token
embedding started from a vectors file (frozen here, so every checkpoint holds the file's vectors times one number),
recorded, served from raw text with <mask>, reproduced from config.json and fine-tuned by the sentiment recipe with
its words; bad files and contradicting settings refused before any write."""

import collections
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo.data import datasets, word_tokenizer

DIM = 12
SENTENCES = 3000
QUICK = {"preset": "tiny", "vocab_size": 400, "sequence_length": 32, "batch_size": 8,
         "train_steps": 4, "checkpoint_every": 2, "log_every": 2, "mode": "train"}
FINE_TUNING = {"dataset": "sst2", "max_examples": 300, "batch_size": 16, "train_steps": 2, "checkpoint_every": 2,
               "mode": "train"}


def write_vectors(path, table):
    with open(path, "w", encoding="utf-8") as f:
        for word, vector in table.items():
            f.write(word + " " + " ".join(repr(float(x)) for x in vector) + "\n")
    return str(path)


@pytest.fixture(scope="module", name="corpus")
def corpus_fixture(tmp_path_factory):
    """The corpus: SST-2's first SENTENCES training texts, a document a line, as --corpus=text:PATH."""
    texts = datasets.load_classification("sst2", "train").texts[:SENTENCES]
    path = tmp_path_factory.mktemp("corpus") / "sst2.txt"
    path.write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    return f"text:{path}", texts


@pytest.fixture(scope="module", name="vectors")
def vectors_fixture(corpus, tmp_path_factory):
    """A GloVe-format file of DIM numbers for the corpus's 300 commonest words (lower-cased letters: a reference
    made here, not the zoo's tokenizer), and the vectors by word."""
    counts = collections.Counter(w for t in corpus[1] for w in re.findall(r"[a-z]+", t.lower()))
    rng = np.random.default_rng(11)
    table = {word: rng.normal(-0.1, 0.5, DIM).astype(np.float32) for word, _ in counts.most_common(300)}
    return write_vectors(tmp_path_factory.mktemp("vectors") / "vectors.txt", table), table


@pytest.fixture(scope="module", name="pretrained")
def pretrained_fixture(corpus, vectors, tmp_path_factory):
    """A frozen masked-LM run of 4 steps, exported; its folder, export folder and log."""
    base = tmp_path_factory.mktemp("pretrain")
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        zoo.train("pretrain", base / "run", corpus=[corpus[0]], word_vectors=vectors[0], freeze_word_vectors=True,
                  export_dir=base / "export", **QUICK)
    return str(base / "run"), str(base / "export"), log.getvalue()


def tables(model_dir, step):
    """The checkpoint's (vocabulary, DIM) weights (Adam's slots left out)."""
    reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
    return [reader.get_tensor(n) for n, shape in reader.get_variable_to_shape_map().items()
            if shape == [QUICK["vocab_size"], DIM] and not n.startswith("optimizer/_variables/")]


def test_the_embedding_is_the_files_vectors_rescaled_and_the_vocabulary_holds_mask(pretrained, vectors):
    model_dir, _, _ = pretrained
    _, table = vectors
    words = word_tokenizer.load_word_tokenizer(model_dir).get_vocabulary()
    assert words[:5] == ["<pad>", "<unk>", "<s>", "</s>", "[MASK]"] and len(words) == 400
    assert not os.path.exists(os.path.join(model_dir, "tokenizer.model"))
    (matrix,) = tables(model_dir, 4)  # one token embedding: the masked-LM head's output is its transpose
    found = [i for i, w in enumerate(words) if w in table]
    assert matrix.shape == (len(words), DIM) and len(found) > 200
    scale = matrix[found] / np.stack([table[words[i]] for i in found])  # one number for every word and dimension
    np.testing.assert_allclose(scale, scale.flat[0], rtol=1e-5)
    assert abs(matrix[found].std() - DIM**-0.5) < 1e-3  # the scaled embedding's own initial spread
    np.testing.assert_array_equal(matrix[0], 0)  # padding
    assert np.all(matrix[1:5].std(axis=1) > 0)  # <unk>, <s>, </s>, [MASK]: drawn rows
    (earlier,) = tables(model_dir, 2)
    np.testing.assert_array_equal(earlier, matrix)  # frozen


def test_the_record_and_the_log_say_the_coverage(pretrained, vectors):
    model_dir, _, log = pretrained
    with open(os.path.join(model_dir, "config.json")) as f:
        record = json.load(f)
    encoder = record["model"]["encoder"]
    assert encoder["word_vectors"] == vectors[0] and encoder["embedding_dim"] == DIM and encoder["vocab_size"] == 400
    assert record["model"]["mask_id"] == 4 and record["model"]["first_regular_id"] == 5
    covered = record["derived"]["word_vectors"]
    assert covered["format"] == "glove" and covered["rows_read"] == 300 and 0.3 < covered["token_share"] < 1
    (matrix,) = tables(model_dir, 4)
    assert covered["matrix_sha256"] == hashlib.sha256(matrix.tobytes()).hexdigest()
    assert re.search(rf"word vectors: {covered['words_found']:,} of [\d,]+ words, [\d.]+% of training tokens "
                     rf"\(glove, {DIM} dimensions", log)


def test_fill_mask_and_encode_answer_raw_text_from_the_run_and_its_export(pretrained):
    model_dir, export_dir, _ = pretrained
    words = word_tokenizer.load_word_tokenizer(model_dir)
    assert words.tokenize("A <mask> film, a[MASK]cast.").numpy()[[1, 5]].tolist() == [4, 4]
    plain = word_tokenizer.WordTokenizer([*word_tokenizer.SPECIALS, "mask", "a"])  # no [MASK]: <mask> is 3 words
    assert plain.tokenize("a <mask>").numpy().tolist() == [5, 1, 4, 1]
    texts = ["a <mask> film and a [MASK] cast", "no mask at all", ""]
    answers = []
    for source in (model_dir, export_dir):
        encoder = zoo.load(source)
        answers.append((encoder.fill_mask(texts, top_k=3), encoder.encode(texts)))
    (filled, pooled), (served, served_pooled) = answers
    assert [len(masks) for masks in filled] == [2, 0, 0] and [len(masks) for masks in served] == [2, 0, 0]
    vocabulary = set(words.get_vocabulary()[5:])  # words, never a special token
    assert all(best["token"] in vocabulary for mask in filled[0] + served[0] for best in mask)
    np.testing.assert_allclose([[b["probability"] for b in mask] for mask in served[0]],
                               [[b["probability"] for b in mask] for mask in filled[0]], atol=1e-5)
    assert pooled.shape == (3, 32) and np.all(np.isfinite(pooled))
    np.testing.assert_allclose(served_pooled, pooled, atol=1e-5)


def test_electra_shares_the_one_embedding_the_vectors_start(pretrained):
    from zoo.data.word_embedding import WordPlan
    from zoo.pretraining import model as pretraining
    from zoo.pretraining.run_config import PretrainRunConfig
    from zoo.runs.run_dir import RunDir

    model_dir, _, _ = pretrained
    config = RunDir(model_dir).read_record("pretrain", PretrainRunConfig).config.model
    model = pretraining.build_pretrainer(dataclasses.replace(config, objective="electra"))
    matrix = np.random.default_rng(0).normal(size=(config.encoder.vocab_size, DIM)).astype(np.float32)
    WordPlan([], matrix, {}, "").initializer(pretraining.token_table)(model)
    shaped = {w.path: w for w in model.weights if tuple(w.shape) == matrix.shape}
    assert len(shaped) == 1 and np.array_equal(next(iter(shaped.values())).numpy(), matrix)
    assert model.generator.get_layer("embedding") is model.encoder.get_layer("embedding")


def test_a_run_is_reproduced_bit_for_bit_from_its_config_json(pretrained, tmp_path):
    model_dir, _, _ = pretrained
    zoo.train("pretrain", tmp_path / "again", config=os.path.join(model_dir, "config.json"), mode="train")
    for step in (2, 4):
        a = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
        b = tf.train.load_checkpoint(str(tmp_path / "again" / f"ckpt-{step}"))
        names, again = (sorted(set(r.get_variable_to_shape_map()) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}) for r in (a, b))
        assert len(names) > 20 and names == again
        for name in names:
            assert a.get_tensor(name).tobytes() == b.get_tensor(name).tobytes(), name


def test_resuming_with_other_vectors_is_refused(pretrained, vectors, tmp_path):
    model_dir, _, _ = pretrained
    _, table = vectors
    run = shutil.copytree(model_dir, tmp_path / "run")
    before = sorted(os.listdir(run))
    other = write_vectors(tmp_path / "other.txt", {w: v + 1 for w, v in table.items()})
    with pytest.raises(ValueError, match="is not the vectors file .* started from"):
        zoo.train("pretrain", run, config=os.path.join(run, "config.json"), word_vectors=other, train_steps=6)
    assert sorted(os.listdir(run)) == before


def test_fine_tuning_takes_the_words_and_the_pretrained_embedding(pretrained, tmp_path, capsys):
    model_dir, _, _ = pretrained
    capsys.readouterr()
    model = zoo.train("sentiment", tmp_path / "ft", init_from=model_dir, **FINE_TUNING)
    assert f"Initialized the encoder from {model_dir}" in capsys.readouterr().out
    with open(os.path.join(model_dir, "words.txt"), "rb") as a, open(tmp_path / "ft" / "words.txt", "rb") as b:
        assert a.read() == b.read()
    assert not os.path.exists(tmp_path / "ft" / "tokenizer.model")
    with open(tmp_path / "ft" / "config.json") as f:
        fine_tuned = json.load(f)["model"]
    assert fine_tuned["tokenizer"] == "words" and fine_tuned["word_vectors"] is None
    assert fine_tuned["embedding_dim"] == DIM and fine_tuned["vocab_size"] == 400
    assert not fine_tuned["freeze_word_vectors"]
    assert len(model.predict(["A gorgeous, witty film!", ""])) == 2


def test_word_vectors_with_init_from_are_refused_before_any_write(pretrained, vectors, tmp_path):
    model_dir, _, _ = pretrained
    with pytest.raises(ValueError, match=r"--word_vectors=.* cannot go with --init_from=.*: the encoder already "
                                         "holds its token embedding"):
        zoo.train("sentiment", tmp_path / "ft", init_from=model_dir, word_vectors=vectors[0], **FINE_TUNING)
    assert not os.path.exists(tmp_path / "ft")


def test_bad_files_and_special_ids_are_one_error_line_and_the_folder_stays_empty(corpus, vectors, tmp_path,
                                                                                   probe_recipe):
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("the 0.1 0.2 0.3\nfilm 0.1 0.2\n")
    foreign = write_vectors(tmp_path / "foreign.txt", {"der": np.ones(3), "und": np.ones(3)})
    common = [f"--corpus={corpus[0]}", "--preset=tiny", "--vocab_size=200", "--sequence_length=32",
              "--train_steps=2"]
    for flags, message in (([f"--word_vectors={ragged}"], "ragged.txt:2: "),
                           ([f"--word_vectors={foreign}"], "word vectors cover 0.0% of training tokens"),
                           ([f"--word_vectors={vectors[0]}", "--config.model.mask_id=3"],
                            "model.mask_id=3 (the word vocabulary's is 4)")):
        os.makedirs(tmp_path / "run", exist_ok=True)
        result = probe_recipe("pretrain", *common, *flags, f"--model_dir={tmp_path / 'run'}")
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.returncode == 2 and len(errors) == 1 and message in errors[0], result.stderr[-2000:]
        assert os.listdir(tmp_path / "run") == []
