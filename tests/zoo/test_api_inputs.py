"""zoo.load's models take any list: they answer it a batch at a time (grouped by length, in input order),
refuse what is no list of texts and out-of-range numbers by name before a signature is called, and an export
with a file missing or cut short is named as damaged. The models are given signatures written here (a
text's answer is worked out from the text alone, so batched and unbatched answers can be compared), and the
exports are small SavedModels with the zoo's manifest; tests/zoo/test_load.py checks the real recipes'."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo.classifier.load import Classifier
from zoo.core import inputs
from zoo.language_model.load import LanguageModel
from zoo.pretraining.load import Encoder
from zoo.runs import export
from zoo.translation.load import Translator
from zoo.translation.search import DecodeConfig


class Signatures(dict):
    """Each family's signatures, answering from the texts alone, recording every batch they are given."""

    def __init__(self):
        super().__init__(serving_default=self.classify, generate=self.generate, score=self.score,
                         encode=self.encode, fill_mask=self.fill_mask)
        self.batches = []

    def lengths(self, text):
        self.batches.append([t.decode() for t in text.numpy()])
        return tf.cast(tf.strings.length(text), tf.float32)

    def classify(self, text):
        n = self.lengths(text)
        p = tf.stack([1 / (1 + n), n / (1 + n)], axis=1)
        return {"label": tf.strings.upper(text), "probabilities": p, "translation": tf.strings.upper(text)}

    def generate(self, prompt, max_new_tokens, temperature, top_k, seed):
        self.lengths(prompt)
        return {"continuation": tf.strings.join([prompt, tf.strings.as_string(seed)], "+")}

    def score(self, text):
        n = self.lengths(text)
        return {"log_likelihood": -n, "tokens": tf.cast(n, tf.int32), "perplexity": n + 1}

    def encode(self, text):
        n = self.lengths(text)
        return {"pooled": tf.stack([n, -n, n * n], axis=1)}

    def fill_mask(self, text, top_k):
        n = self.lengths(text)
        tokens = tf.tile(tf.reshape(tf.strings.upper(text), [-1, 1, 1]), [1, 2, top_k])
        return {"tokens": tokens, "probabilities": tf.tile(tf.reshape(1 / (1 + n), [-1, 1, 1]), [1, 2, top_k]),
                "mask_count": tf.cast(tf.strings.length(text), tf.int32) % 3}


class Saved:
    """What tf.saved_model.load returns, as far as a Translator reads it."""

    def __init__(self, signatures):
        self.signatures = signatures


def models(signatures):
    """One of each family's model, with their text methods: name -> method taking a list of texts."""
    classifier = Classifier(signatures, None, ["short", "long"], 1)
    translator = Translator(DecodeConfig(), 1, saved=Saved(signatures))
    language_model = LanguageModel(signatures, None, 1)
    encoder = Encoder(signatures, None, 1)
    return {"predict": classifier.predict, "translate": translator.translate, "generate": language_model.generate,
            "score": language_model.score, "encode": encoder.encode, "fill_mask": encoder.fill_mask}


METHODS = ["predict", "translate", "generate", "score", "encode", "fill_mask"]
TEXTS = ["a fairly long text of words", "", "mid length", "x" * 60, "é", "short", "two words", "ab" * 7]


def unbatched(name, texts):
    """The answers of one call with every text: what a model answered before it batched."""
    signatures = Signatures()
    return models(signatures)[name](texts, batch_size=len(texts)), signatures.batches


@pytest.mark.parametrize("name", METHODS)
def test_every_method_answers_a_batch_at_a_time_in_input_order_as_one_call_does(name):
    whole, _ = unbatched(name, TEXTS)
    signatures = Signatures()
    answers = models(signatures)[name](TEXTS, batch_size=3)
    if name == "encode":
        np.testing.assert_array_equal(answers, whole)
    else:
        assert answers == whole
    assert [len(batch) for batch in signatures.batches] == [3, 3, 2]
    assert sorted(t for batch in signatures.batches for t in batch) == sorted(TEXTS)
    if name == "generate":  # a prompt's draw depends on its row: the prompts keep their order
        assert signatures.batches == [TEXTS[:3], TEXTS[3:6], TEXTS[6:]]
    else:  # grouped by length: each batch's texts are no longer than the next batch's
        lengths = [[len(t.encode()) for t in batch] for batch in signatures.batches]
        assert all(max(a) <= min(b) for a, b in zip(lengths, lengths[1:]))


def test_the_default_batch_is_32_texts_and_a_long_list_is_never_sent_whole():
    signatures = Signatures()
    texts = [f"text {i} " * (i % 50) for i in range(1000)]
    answers = models(signatures)["predict"](texts)
    assert inputs.BATCH_SIZE == 32 and max(len(batch) for batch in signatures.batches) == 32
    assert len(signatures.batches) == 32  # 1000 / 32, rounded up
    assert [a["label"] for a in answers] == [t.upper() for t in texts]


@pytest.mark.parametrize("name", METHODS)
def test_an_empty_list_is_answered_with_an_empty_answer(name):
    answers = models(Signatures())[name]([])
    assert answers.shape == (0, 3) if name == "encode" else answers == []


def test_any_ordered_collection_of_strings_and_utf8_bytes_is_taken():
    expected = [a["label"] for a in models(Signatures())["predict"](["a", "bé", "c"])]
    predict = models(Signatures())["predict"]
    for texts in (("a", "bé", "c"), np.array(["a", "bé", "c"]), (t for t in ["a", "bé", "c"]),
                  [b"a", "bé".encode(), np.str_("c")]):
        assert [a["label"] for a in predict(texts)] == expected


NOT_TEXTS = [
    ("dull", TypeError, r"texts must be a list of strings, e\.g\. \['dull'\], not one string"),
    (b"dull", TypeError, r"texts must be a list of strings, e\.g\. \[b'dull'\], not one string"),
    (None, TypeError, r"texts must be a list of strings, not None \(NoneType\)"),
    (7, TypeError, r"texts must be a list of strings, not 7 \(int\)"),
    ({"a": 1}, TypeError, r"texts must be a list of strings, not \{'a': 1\} \(dict\)"),
    (["a", "b", "c", None], TypeError, r"texts\[3\] is None \(NoneType\): give strings"),
    (["a", 123], TypeError, r"texts\[1\] is 123 \(int\): give strings"),
    (["a", float("nan")], TypeError, r"texts\[1\] is nan \(float\): give strings"),
    ([b"ok", b"caf\xe9!"], ValueError, r"texts\[1\] is bytes that are not UTF-8 \(invalid continuation byte at "
                                      r"byte 3\): decode them"),
    (["\ud800"], ValueError, r"texts\[0\] cannot be written as UTF-8 \(surrogates not allowed at character 0\)"),
]


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("texts, error, message", NOT_TEXTS)
def test_what_is_no_list_of_texts_is_refused_naming_the_argument_and_position_before_any_call(
        name, texts, error, message):
    signatures = Signatures()
    if name == "generate":
        message = message.replace("texts", "prompts")
    with pytest.raises(error, match=message):
        models(signatures)[name](texts)
    assert signatures.batches == []


BAD_NUMBERS = [  # (method, keyword, value, error, message)
    ("generate", "seed", "x", TypeError, r"seed='x' must be a whole number \(int\), not str"),
    ("generate", "seed", 2**31, ValueError, r"seed=2147483648 must be between -2147483648 and 2147483647"),
    ("generate", "max_new_tokens", 0, ValueError, "max_new_tokens=0 must be between 1 and"),
    ("generate", "max_new_tokens", 10.0, TypeError, "max_new_tokens=10.0 must be a whole number"),
    ("generate", "top_k", -1, ValueError, "top_k=-1 must be between 0 and"),
    ("generate", "top_k", True, TypeError, "top_k=True must be a whole number"),
    ("generate", "temperature", float("nan"), ValueError, r"temperature=nan must be a finite number above 0\.0"),
    ("generate", "temperature", float("inf"), ValueError, r"temperature=inf must be a finite number above 0\.0"),
    ("generate", "temperature", 0, ValueError, r"temperature=0 must be a finite number above 0\.0 \(1 samples"),
    ("generate", "temperature", "hot", TypeError, "temperature='hot' must be a number, not str"),
    ("translate", "length_penalty", float("nan"), ValueError, r"length_penalty=nan must be a finite number at "
                                                              r"least 0\.0 \(0: none"),
    ("translate", "length_penalty", float("-inf"), ValueError, "length_penalty=-inf must be a finite number"),
    ("translate", "length_penalty", -0.5, ValueError, "length_penalty=-0.5 must be a finite number at least"),
    ("translate", "beam_size", 0, ValueError, "beam_size=0 must be between 1 and"),
    ("translate", "beam_size", 2.5, TypeError, "beam_size=2.5 must be a whole number"),
    ("fill_mask", "top_k", 0, ValueError, "top_k=0 must be between 1 and"),
    ("fill_mask", "top_k", 2**40, ValueError, "top_k=1099511627776 must be between 1 and 2147483647"),
    ("predict", "batch_size", 0, ValueError, "batch_size=0 must be between 1 and"),
    ("encode", "batch_size", "32", TypeError, "batch_size='32' must be a whole number"),
    ("score", "batch_size", None, TypeError, "batch_size=None must be a whole number"),
]


@pytest.mark.parametrize("name, keyword, value, error, message", BAD_NUMBERS)
def test_a_number_of_the_wrong_type_or_out_of_range_is_refused_by_name_before_any_call(
        name, keyword, value, error, message):
    signatures = Signatures()
    with pytest.raises(error, match=message):
        models(signatures)[name](["a text"], **{keyword: value})
    assert signatures.batches == []


def test_numbers_of_numpys_types_are_taken():
    generate = models(Signatures())["generate"]
    assert generate(["a"], seed=np.int64(3), top_k=np.int32(2), temperature=np.float32(0.5)) == ["a+3"]


# A classifier's export in miniature: the zoo's layout (saved_model.pb, variables/, ops_manifest.json), a
# variable to load, and a serving_default answering from the texts' lengths.
class TinyClassifier(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        n = tf.cast(tf.strings.length(text), tf.float32) * self.scale
        return {"label": tf.where(n > 8, "long", "short"), "probabilities": tf.stack([1 / (1 + n), n / (1 + n)], 1)}


@pytest.fixture(scope="module", name="exported")
def exported_fixture(tmp_path_factory):
    """An --export_dir holding version 1 of TinyClassifier."""
    export_dir = tmp_path_factory.mktemp("export")
    module = TinyClassifier()
    tf.saved_model.save(module, str(export_dir / "1"), signatures={"serving_default": module.serve})
    manifest = {"non_core_ops": {}, "metadata": {"recipe": "sentiment", "class_names": ["short", "long"], "step": 3}}
    (export_dir / "1" / export.MANIFEST).write_text(json.dumps(manifest))
    return export_dir


def copy_of(exported, tmp_path):
    shutil.copytree(exported, tmp_path / "export")
    return tmp_path / "export"


def test_an_export_loads_and_predicts_a_batch_at_a_time_as_one_call_does(exported):
    classifier = zoo.load(exported)
    texts = ["a", "a much longer text", "", "four"] * 10
    assert classifier.step == 3
    batched, whole = classifier.predict(texts, batch_size=3), classifier.predict(texts, batch_size=len(texts))
    assert [a["label"] for a in batched] == [a["label"] for a in whole]
    np.testing.assert_allclose([list(a["probabilities"].values()) for a in batched],
                               [list(a["probabilities"].values()) for a in whole], rtol=1e-6)  # vectorized division
    assert [a["label"] for a in classifier.predict(texts[:4])] == ["short", "long", "short", "short"]


@pytest.mark.parametrize("missing", [
    "saved_model.pb", "variables", export.VARIABLES_INDEX,
    os.path.join("variables", "variables.data-00000-of-00001"),
])
def test_an_export_with_a_file_missing_is_named_as_damaged_with_the_file(exported, tmp_path, missing):
    export_dir = copy_of(exported, tmp_path)
    gone = export_dir / "1" / missing
    shutil.rmtree(gone) if gone.is_dir() else gone.unlink()
    named = missing if missing != "variables" else export.VARIABLES_INDEX  # the folder's first file is named
    for path in (export_dir, export_dir / "1"):
        with pytest.raises(ValueError, match=rf"export/1 is a damaged export: {named}.* missing\. Export the run "
                                             "again, or load another version"):
            zoo.load(path)


def test_an_export_without_its_manifest_names_it(exported, tmp_path):
    export_dir = copy_of(exported, tmp_path)
    (export_dir / "1" / export.MANIFEST).unlink()
    with pytest.raises(ValueError, match=r"export/1 holds a SavedModel but no ops_manifest\.json: the zoo writes "
                                         r"one beside every version it exports \(if it was deleted, export the run"):
        zoo.load(export_dir)
    (export_dir / "1" / "saved_model.pb").unlink()
    with pytest.raises(ValueError, match=r"damaged export: saved_model\.pb, ops_manifest\.json are missing"):
        zoo.load(export_dir)


def test_an_export_with_a_file_cut_short_is_named_as_damaged(exported, tmp_path):
    export_dir = copy_of(exported, tmp_path)
    with open(export_dir / "1" / "saved_model.pb", "r+b") as f:
        f.truncate(50)
    with pytest.raises(ValueError, match=r"export/1 is a damaged export: TensorFlow cannot read it \("):
        zoo.load(export_dir)


def test_a_damaged_newest_version_is_refused_not_replaced_by_an_older_one(exported, tmp_path):
    export_dir = copy_of(exported, tmp_path)
    shutil.copytree(export_dir / "1", export_dir / "2")
    shutil.rmtree(export_dir / "2" / "variables")
    with pytest.raises(ValueError, match=r"export/2 is a damaged export: variables/variables\.index"):
        zoo.load(export_dir)
    assert zoo.load(export_dir / "1").step == 3
