"""Text pairs in the classifier family (issue 51, item 1): the encoding against hand-computed ids and Hugging
Face's `tokenizers`, longest_first truncation, and a pair task through training (CSV and JSONL), evaluation,
explanation, resumption, reproduction from config.json, the export in a fresh process and zoo.load, the refusals,
and the token-type embeddings of a published checkpoint.

The pair task is made from real SST-2 training sentences: row i pairs sentence i with itself (every 4th row) or
with the sentence a seeded permutation gives it, labelled "same" when the two sentences' sentiment labels agree,
else "different". Tiny preset, 4 steps, zoo.train in this process."""

import contextlib
import csv
import io
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.conftest import as_flags, fresh_process_json
from tests.recipes.test_exact_resumption import saved_tensors, stop_after
from tests.zoo import _published_fixtures as fixtures
from zoo.classifier import model as classifier
from zoo.classifier.preprocessor import ClassifierPreprocessor, longest_first
from zoo.data import tokenizer
from zoo.data.datasets import DatasetError, load_classification

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

ROWS = 200  # 160 for training, 40 for validation
RUN = {"preset": "tiny", "vocab_size": 300, "max_length": 40, "batch_size": 8, "train_steps": 4,
       "checkpoint_every": 2, "log_every": 2}
FIRSTS = ["a moving , funny film", "dull and far too long", "", "not bad at all"]
SECONDS = ["a good film", "the worst film of the year", "an empty first text", ""]


def sst2_pairs():
    """(first, second, label) rows from SST-2's training sentences: "same" when their sentiments agree."""
    data = load_classification("sst2", "train")
    other = np.random.default_rng(0).permutation(ROWS)
    rows = []
    for i in range(ROWS):
        j = i if i % 4 == 0 else int(other[i])
        rows.append((data.texts[i], data.texts[j], "same" if data.labels[i] == data.labels[j] else "different"))
    return rows


@pytest.fixture(scope="module", name="pair_files")
def pair_files_fixture(tmp_path_factory):
    """The pair task as {split}.csv (first, second, label) and {split}.jsonl (premise, hypothesis, label)."""
    folder = tmp_path_factory.mktemp("pairs")
    rows = sst2_pairs()
    for split, part in (("train", rows[:160]), ("validation", rows[160:])):
        with open(folder / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["first", "second", "label"])
            writer.writerows(part)
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for first, second, label in part:
                f.write(json.dumps({"premise": first, "hypothesis": second, "label": label}) + "\n")
    return folder, rows


def quiet(function, *args, **keywords):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        result = function(*args, **keywords)
    return result, out.getvalue()


@pytest.fixture(scope="module", name="csv_run")
def csv_run_fixture(pair_files, tmp_path_factory):
    """A pair run on the CSV files, exported: its folder, export and the settings it was trained with."""
    folder, _ = pair_files
    base = tmp_path_factory.mktemp("csv_run")
    settings = {**RUN, "dataset": f"csv:{folder}/{{split}}.csv", "text_column": "first", "text_pair_column": "second"}
    model_dir, export_dir = str(base / "run"), str(base / "export")
    quiet(zoo.train, "sentiment", model_dir, **settings, export_dir=export_dir)
    return model_dir, export_dir, settings


@pytest.fixture(scope="module", name="pair_classifier")
def pair_classifier_fixture(csv_run):
    """zoo.load of the CSV run, loaded once (each load traces its serving graph)."""
    return zoo.load(csv_run[0])


# The encoding.

def reference_lengths(first, second, room):
    """longest_first one token at a time: from the longer text, from the one that started shorter when level."""
    first_shorter = first <= second
    while first + second > room:
        if first > second or (first == second and first_shorter):
            first -= 1
        else:
            second -= 1
    return first, second


# What Hugging Face's tokenizers 0.23 keeps of (first, second) tokens within max_length (longest_first).
HF_KEPT = {(10, 10, 18): (7, 8), (12, 10, 18): (8, 7), (10, 12, 18): (7, 8), (10, 10, 17): (7, 7),
           (3, 20, 18): (3, 12), (20, 3, 18): (12, 3), (11, 10, 18): (8, 7), (0, 20, 10): (0, 7),
           (11, 11, 16): (6, 7), (30, 2, 5): (1, 1), (1, 1, 4): (0, 1)}


def test_longest_first_keeps_what_hugging_face_keeps_and_drops_one_token_at_a_time():
    for (first, second, max_length), kept in HF_KEPT.items():
        assert reference_lengths(first, second, max_length - 3) == kept
    grid = [(a, b, room) for a in range(0, 13) for b in range(0, 13) for room in range(1, 16)]
    got = longest_first(tf.constant([g[0] for g in grid]), tf.constant([g[1] for g in grid]), tf.constant(
        [g[2] for g in grid]))
    for (a, b, room), kept_a, kept_b in zip(grid, got[0].numpy(), got[1].numpy()):
        assert (kept_a, kept_b) == reference_lengths(a, b, room), (a, b, room)


HAND = [("the movie was great", "not bad"),  # 4 + 2 fit in the room of 8
        ("fun [SEP] film", "good"),  # a [SEP] written in a text is dropped
        ("the movie was great !", "not bad at all"),  # 5 + 4: the shorter fits in half the room, the longer 4
        ("hello world hello world hello world", "film film film film film film")]  # 6 + 6: 4 each, heads kept
HAND_PIECES = [("[CLS]", "the", "movie", "was", "great", "[SEP]", "not", "bad", "[SEP]"),
               ("[CLS]", "fun", "film", "[SEP]", "good", "[SEP]"),
               ("[CLS]", "the", "movie", "was", "great", "[SEP]", "not", "bad", "at", "all", "[SEP]"),
               ("[CLS]", "hello", "world", "hello", "world", "[SEP]", "film", "film", "film", "film", "[SEP]")]
HF_PAIRS = [("The movie was great!", "I love it, so fun."), ("Café déjà vu", "über naïve résumé " * 5),
            ("hello world " * 9, "good"), ("not bad at all", "film " * 12), ("", "fun"), ("a b ab", ""),
            ("fun", "so very good")]
MAX_LENGTH = 11  # room for 8 pieces beside [CLS] and two [SEP]


@pytest.fixture(scope="module", name="wordpiece_pairs")
def wordpiece_pairs_fixture():
    """The export's call and training's rows (the cache's path) of HAND + HF_PAIRS, framed by one WordPiece pair
    preprocessor (each trace of BERT's tokenizer costs seconds)."""
    wordpiece = tokenizer.wordpiece_tokenizer(fixtures.vocabulary(120), lowercase=True, strip_accents=True)
    framing = ClassifierPreprocessor.for_tokenizer(wordpiece, MAX_LENGTH, pairs=True)
    pairs = HAND + HF_PAIRS
    inputs = framing(tf.constant([a for a, _ in pairs]), tf.constant([b for _, b in pairs]))
    return {name: value.numpy() for name, value in inputs.items()}, framing.rows(pairs, batch_size=4)


def test_a_wordpiece_pair_is_cls_a_sep_b_sep_with_segment_ids_by_hand(wordpiece_pairs):
    ids = {piece: i for i, piece in enumerate(fixtures.vocabulary(120))}
    inputs, rows = wordpiece_pairs
    assert inputs["token_ids"].dtype == np.int32 and inputs["token_ids"].shape[1] == MAX_LENGTH
    for i, pieces in enumerate(HAND_PIECES):
        expected = [ids[p] for p in pieces]
        assert inputs["token_ids"][i].tolist() == expected + [0] * (MAX_LENGTH - len(expected)), HAND[i]
        first = pieces.index("[SEP]") + 1
        assert inputs["segment_ids"][i].tolist() == [0] * first + [1] * (len(pieces) - first) + [0] * (
            MAX_LENGTH - len(pieces))
        assert rows[i].tolist() == expected


def test_wordpiece_pairs_equal_hugging_face_tokenizers_pair_encoding(wordpiece_pairs, tmp_path):
    """Ids and type ids as BertWordPieceTokenizer gives them for a pair, truncated longest_first; training's rows
    equal the export's call."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(fixtures.vocabulary(120)) + "\n", encoding="utf-8")
    reference = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True, strip_accents=True)
    reference.enable_truncation(MAX_LENGTH, strategy="longest_first")
    inputs, rows = wordpiece_pairs
    for i, (first, second) in enumerate(HAND + HF_PAIRS):
        if "[SEP]" in first:
            continue  # Hugging Face keeps a [SEP] written in a text, in the first segment; the zoo drops it
        encoded = reference.encode(first, second)
        n = len(encoded.ids)
        assert inputs["token_ids"][i, :n].tolist() == encoded.ids, (first, second)
        assert inputs["segment_ids"][i, :n].tolist() == encoded.type_ids
        assert not inputs["token_ids"][i, n:].any() and rows[i].tolist() == encoded.ids


@pytest.mark.parametrize("kind", ["sentencepiece", "words"])
def test_sentencepiece_and_word_pairs_are_s_a_eos_b_eos(kind):
    """<s> a </s> b </s>: the zoo's vocabularies have no [SEP]; </s> (id 3) separates."""
    texts = [f"word{i} and more words {i % 7} , a film" for i in range(200)]
    if kind == "sentencepiece":
        tok = tokenizer.load_tokenizer(tokenizer.train_tokenizer(texts, 40))
    else:
        from zoo.data import word_tokenizer

        tok = word_tokenizer.WordTokenizer(["<pad>", "<unk>", "<s>", "</s>", "word1", "and", "a", "film", ",", "more"])
    firsts, seconds = ["word1 and a film", "a film , a film , a film , a film", "</s> a"], ["more", "film", "x"]
    framing = ClassifierPreprocessor.for_tokenizer(tok, 10, pairs=True)
    inputs = framing(tf.constant(firsts), tf.constant(seconds))
    for i, (first, second) in enumerate(zip(firsts, seconds)):
        a, b = ([int(t) for t in ids if t != tokenizer.END_ID] for ids in tokenizer.tokenize(tok, [first, second]))
        kept_a, kept_b = reference_lengths(len(a), len(b), 10 - 3)
        expected = [tokenizer.START_ID, *a[:kept_a], tokenizer.END_ID, *b[:kept_b], tokenizer.END_ID]
        row = inputs["token_ids"].numpy()[i]
        assert row[: len(expected)].tolist() == expected and not row[len(expected):].any()
        segments = [0] * (kept_a + 2) + [1] * (kept_b + 1)
        assert inputs["segment_ids"].numpy()[i, : len(expected)].tolist() == segments


# A pair run through the recipe.

def test_the_run_records_its_pairs_and_embeds_segments(csv_run):
    model_dir, _, _ = csv_run
    with open(os.path.join(model_dir, "config.json")) as f:
        record = json.load(f)
    assert record["data"]["text_pair_column"] == "second" and record["model"]["num_segments"] == 2
    loaded = zoo.classifier.load.load_run(model_dir)
    table = loaded.model.get_layer("embedding").segment_embedding.embeddings
    assert tuple(table.shape) == (2, loaded.config.hidden_dim) and np.abs(table.numpy()).sum() > 0  # it learned
    assert sorted(loaded.model.input) == ["segment_ids", "token_ids"]


def test_the_export_in_a_fresh_process_answers_as_zoo_load_and_the_run(csv_run, pair_classifier):
    _, export_dir, _ = csv_run
    run = pair_classifier.predict(FIRSTS, text_pairs=SECONDS)
    exported = zoo.load(export_dir).predict(FIRSTS, text_pairs=SECONDS, batch_size=3)
    program = (f"import json, tensorflow as tf, tensorflow_text\n"
               f"saved = tf.saved_model.load({os.path.join(export_dir, '1')!r})\n"
               f"signature = saved.signatures['serving_default']\n"
               f"out = signature(text=tf.constant({FIRSTS!r}), text_pair=tf.constant({SECONDS!r}))\n"
               f"print(json.dumps({{'inputs': sorted(signature.structured_input_signature[1]),\n"
               f"  'labels': [l.decode() for l in out['label'].numpy()],\n"
               f"  'p': out['probabilities'].numpy().tolist()}}))")
    fresh = fresh_process_json(program)
    assert fresh["inputs"] == ["text", "text_pair"]
    for answers in (run, exported):
        assert [a["label"] for a in answers] == fresh["labels"]
        got = [[a["probabilities"][name] for name in ("different", "same")] for a in answers]
        np.testing.assert_allclose(got, fresh["p"], atol=1e-5)
    swapped = pair_classifier.predict(SECONDS, text_pairs=FIRSTS)  # the order of a pair matters
    assert [a["probabilities"] for a in swapped] != [a["probabilities"] for a in run]


def test_predict_refuses_pairs_of_another_length_and_a_missing_or_unwanted_second_text(pair_classifier):
    pairs = pair_classifier
    with pytest.raises(ValueError, match="text_pairs holds 1 texts and texts 2"):
        pairs.predict(["a", "b"], text_pairs=["c"])
    with pytest.raises(TypeError, match=r"trained on text pairs: .*text_pairs=\[\.\.\.\]"):
        pairs.predict(["a", "b"])
    with pytest.raises(TypeError, match=r"text_pairs\[1\] is None"):
        pairs.predict(["a", "b"], text_pairs=["c", None])
    single = zoo.classifier.load.Classifier({}, None, ["neg", "pos"], 0)
    with pytest.raises(TypeError, match="reads one text each .*leave text_pairs out"):
        single.predict(["a"], text_pairs=["b"])
    with pytest.raises(ValueError, match="text and text_pair must hold as many strings"):
        from zoo.core.signatures import call

        call(pairs.signatures, "serving_default", text=tf.constant(["a", "b"]), text_pair=tf.constant(["c"]))


def test_eval_writes_each_pairs_prediction_in_the_datas_order(csv_run, pair_classifier, pair_files, tmp_path):
    from zoo.sentiment.recipe import run_eval

    model_dir, _, _ = csv_run
    _, rows = pair_files
    path = str(tmp_path / "predictions.jsonl")
    result, _ = quiet(run_eval, model_dir, "validation", predictions=path)
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [(line["text"], line["text_pair"], line["label"]) for line in lines] == rows[160:]
    assert list(lines[0]) == ["text", "text_pair", "label", "prediction", "probabilities"]
    answers = pair_classifier.predict([r[0] for r in rows[160:]], text_pairs=[r[1] for r in rows[160:]])
    assert [line["prediction"] for line in lines] == [a["label"] for a in answers]
    assert result["examples"] == 40
    assert np.mean([line["prediction"] == line["label"] for line in lines]) == pytest.approx(result["accuracy"])


def test_explain_takes_the_second_text(csv_run):
    from zoo.sentiment.recipe import run_explain

    model_dir = csv_run[0]
    paths, printed = quiet(run_explain, model_dir, "a moving film", text_pair="a dull film")
    assert all(os.path.exists(path) for path in paths)
    with open(os.path.join(model_dir, "explain", "attribution.json"), encoding="utf-8") as f:
        tokens = json.load(f)["tokens"]
    assert tokens[0] == "<s>" and tokens.count("</s>") == 2 and tokens[-1] == "</s>"
    with pytest.raises(ValueError, match="trained on text pairs: give the second text too"):
        run_explain(model_dir, "a moving film")


def test_a_resumed_run_and_one_from_its_config_json_end_with_the_same_weights(csv_run, tmp_path):
    model_dir, _, settings = csv_run
    resumed, again = str(tmp_path / "resumed"), str(tmp_path / "again")
    shutil.copytree(model_dir, resumed)
    stop_after(resumed, 2)
    _, printed = quiet(zoo.train, "sentiment", resumed, **settings, mode="train")
    assert "Resuming from step 2" in printed
    quiet(zoo.train, "sentiment", again, config=os.path.join(model_dir, "config.json"), mode="train")
    expected = saved_tensors(model_dir, 4)
    for other in (resumed, again):
        got = saved_tensors(other, 4)
        assert sorted(got) == sorted(expected)
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_a_jsonl_pair_run_trains_with_its_own_keys(pair_files, tmp_path):
    folder, _ = pair_files
    model_dir = str(tmp_path / "run")
    _, printed = quiet(zoo.train, "sentiment", model_dir, **{**RUN, "train_steps": 1}, mode="train",
                       dataset=f"jsonl:{folder}/{{split}}.jsonl", text_column="premise", text_pair_column="hypothesis")
    assert "step 1/1" in printed
    with open(os.path.join(model_dir, "config.json")) as f:
        record = json.load(f)
    assert record["data"]["text_pair_column"] == "hypothesis" and record["model"]["num_segments"] == 2
    assert record["derived"]["class_names"] == ["different", "same"]


# Refused, with nothing written.

def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("case", ["blank", "missing", "same_column", "absent", "folder"])
def test_bad_pairs_are_refused_naming_file_and_line_before_any_write(case, pair_files, tmp_path):
    folder, _ = pair_files
    good = (folder / "train.csv").read_text(encoding="utf-8")
    keywords = {"text_column": "first", "text_pair_column": "second"}
    if case == "blank":
        dataset = "csv:" + write(tmp_path / "train.csv", good + 'a fine film,"  ",same\n')
        message = rf"train.csv:{good.count(chr(10)) + 1}: an empty second text in 'second'"
    elif case == "missing":
        lines = [json.dumps({"first": f"text {i}", "second": f"other {i}", "label": i % 2}) for i in range(30)]
        lines[6] = json.dumps({"first": "a fine film", "label": 1})
        dataset = "jsonl:" + write(tmp_path / "train.jsonl", "\n".join(lines) + "\n")
        message = r"train.jsonl:7: no second text in 'second'"
    elif case == "same_column":
        dataset, keywords["text_pair_column"] = f"csv:{folder}/{{split}}.csv", "first"
        message = "--text_pair_column and --text_column both name 'first'"
    elif case == "absent":
        dataset, keywords["text_pair_column"] = f"csv:{folder}/{{split}}.csv", "hypothesis"
        message = r"has no column 'hypothesis': its columns are \['first', 'second', 'label'\]. .*--text_pair_column"
    else:
        for label in ("neg", "pos"):
            os.makedirs(tmp_path / "texts" / label)
            write(tmp_path / "texts" / label / "1.txt", "a text")
        dataset = f"folder:{tmp_path / 'texts'}"
        message = "--text_pair_column=second reads a second text from csv:, tsv: or jsonl: files"
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    with pytest.raises(DatasetError, match=message):
        quiet(zoo.train, "sentiment", str(model_dir), **RUN, dataset=dataset, **keywords)
    assert os.listdir(model_dir) == []


def test_the_command_line_refuses_in_one_error_line(pair_files, probe_recipe, tmp_path):
    folder, _ = pair_files
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    done = probe_recipe("sentiment", *as_flags({**RUN, "dataset": f"csv:{folder}/{{split}}.csv",
                                                "text_column": "first", "text_pair_column": "nope",
                                                "model_dir": str(model_dir)}))
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "has no column 'nope'" in errors[0] and "--text_pair_column" in errors[0]
    assert os.listdir(model_dir) == []


# Published checkpoints: their token-type embeddings; the zoo's own pretrained encoders: a segment table from zero.

@pytest.fixture(scope="module", name="checkpoint")
def checkpoint_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("published") / "tiny-bert"
    config = fixtures.bert_config(vocab_size=120, max_positions=32)
    fixtures.write_checkpoint(folder, config, fixtures.random_weights(config, prefix="bert."), fixtures.vocabulary(120),
                              lowercase=True)
    return str(folder), fixtures.random_weights(config)


def test_a_published_checkpoints_token_types_become_the_segment_embedding_and_the_segments_reach_it(checkpoint):
    import dataclasses

    from zoo.pretraining import pretrained, published

    source, weights = checkpoint
    config = dataclasses.replace(published.encoder_config(published.read_checkpoint(source)), num_segments=2,
                                 dropout=0.0)
    model = classifier.build_classifier(config)
    pretrained.encoder_initializer(source)(model)
    embedding = model.get_layer("embedding")
    np.testing.assert_array_equal(embedding.segment_embedding.embeddings.numpy(),
                                  weights["embeddings.token_type_embeddings.weight"])
    np.testing.assert_array_equal(embedding.position_embedding.position_embeddings.numpy(),
                                  weights["embeddings.position_embeddings.weight"])  # not folded: the types are apart
    token_ids = np.array([[2, 30, 31, 3, 32, 33, 3]], np.int32)
    segments = np.array([[0, 0, 0, 0, 1, 1, 1]], np.int32)
    as_pair = model({"token_ids": token_ids, "segment_ids": segments}).numpy()
    as_one = model({"token_ids": token_ids, "segment_ids": np.zeros_like(segments)}).numpy()
    assert not np.allclose(as_pair, as_one)
    # Type 0 everywhere is what the single-text model computes, with type 0 folded into its positions.
    single = classifier.build_classifier(dataclasses.replace(config, num_segments=0))
    pretrained.encoder_initializer(source)(single)
    single.get_layer("logits").set_weights(model.get_layer("logits").get_weights())
    np.testing.assert_allclose(single(token_ids).numpy(), as_one, atol=1e-5)


def test_fine_tuning_a_published_checkpoint_on_pairs(checkpoint, pair_files, tmp_path):
    source, _ = checkpoint
    folder, _ = pair_files
    model_dir = str(tmp_path / "run")
    _, printed = quiet(zoo.train, "sentiment", model_dir, init_from=source, max_length=24, batch_size=8,
                       train_steps=1, dataset=f"csv:{folder}/{{split}}.csv", text_column="first",
                       text_pair_column="second", mode="train")
    assert "Initialized the encoder from" in printed and "step 1/1" in printed
    with open(os.path.join(model_dir, "config.json")) as f:
        assert json.load(f)["model"]["num_segments"] == 2


def test_an_encoder_pretrained_on_single_texts_gives_a_pair_model_a_segment_table_of_zeros():
    import dataclasses

    from zoo.pretraining import pretrained

    config = dataclasses.replace(classifier.PRESETS["tiny"], vocab_size=50, position="learned")
    pretrained_encoder = classifier.build_classifier(config)
    weights = {layer.name: layer.get_weights() for layer in pretrained_encoder.layers
               if layer.weights and layer.name != "logits"}
    pair_model = classifier.build_classifier(dataclasses.replace(config, num_segments=2))
    pretrained.copy_encoder_weights(weights, pair_model)
    embedding = pair_model.get_layer("embedding")
    assert not embedding.segment_embedding.embeddings.numpy().any()
    np.testing.assert_array_equal(embedding.token_embedding.embeddings.numpy(),
                                  pretrained_encoder.get_layer("embedding").token_embedding.embeddings.numpy())
