"""The Python API: `zoo.train` runs a recipe from keyword arguments (in this process), and `zoo.load` of the run folder and of
its export answer as the export's own SavedModel signatures do, for every recipe (each trained once, a
few steps of its tiny preset; the answers are compared, not judged)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the signatures below read the exports directly: TF Text's ops)

import zoo
from tests.conftest import data_path_peak
from zoo.classifier.load import Classifier
from zoo.language_model.load import LanguageModel
from zoo.pretraining.load import Encoder
from zoo.translation.load import Translator
from zoo.translation.search import DecodeConfig

pytestmark = pytest.mark.slow  # outside the default run: python -m pytest -m slow

# The CI-sized flags of tests/recipes, fewer steps: a trained model's answers are not what is checked here.
SHARED = {"preset": "tiny", "mode": "train", "train_steps": 4, "checkpoint_every": 4, "log_every": 4}
FLAGS = {
    "sentiment": {"dataset": "sst2", "max_examples": 200, "vocab_size": 300, "batch_size": 16, "max_length": 512},
    "translate": {"dataset": "multi30k", "source": "de", "target": "en", "max_examples": 200, "vocab_size": 300,
                  "max_tokens": 1024, "decode": DecodeConfig(beam_size=2), "max_length": 24},
    "lm": {"dataset": "ptb", "batch_size": 8},
    "pretrain": {"corpus": ["sst2"], "vocab_size": 300, "sequence_length": 64, "batch_size": 16},
}


@pytest.fixture(scope="module", name="trained")
def trained_fixture(tmp_path_factory):
    """recipe -> (what zoo.train returned, run folder, export folder); each recipe trained at its first use."""
    made = {}

    def trained(recipe):
        if recipe not in made:
            base = tmp_path_factory.mktemp(recipe)
            model_dir, export_dir = str(base / "run"), str(base / "export")
            model = zoo.train(recipe, model_dir=model_dir, export_dir=export_dir, **SHARED, **FLAGS[recipe])
            made[recipe] = model, model_dir, export_dir
        return made[recipe]

    return trained


def signatures(export_dir):
    """The export's own signatures, read without the zoo."""
    return tf.saved_model.load(os.path.join(export_dir, "1")).signatures


def test_a_classifier_run_and_its_export_answer_as_the_saved_model(trained):
    run, model_dir, export_dir = trained("sentiment")
    texts = ["a gorgeous, witty film", "", "x" * 5000, "dull and far too long"]
    served = signatures(export_dir)["serving_default"](text=tf.constant(texts))
    assert isinstance(run, Classifier) and run.step == 4
    for model in (run, zoo.load(model_dir), zoo.load(export_dir), zoo.load(os.path.join(export_dir, "1"))):
        answers = model.predict(texts)
        assert [a["label"] for a in answers] == [s.decode() for s in served["label"].numpy()]
        probabilities = np.array([list(a["probabilities"].values()) for a in answers])
        np.testing.assert_allclose(probabilities, served["probabilities"].numpy(), rtol=0, atol=1e-5)
        assert list(answers[0]["probabilities"]) == ["negative", "positive"]  # the run's class names
    assert zoo.load(model_dir).predict([]) == []
    with pytest.raises(TypeError, match=r"a list of strings, e\.g\. \['dull'\]"):
        run.predict("dull")


# Run in a fresh process: 4,000 texts of 1 to 700 words classified in one call of predict; prints the peak memory.
PREDICT_PEAK = """
import json, random, resource, sys
import zoo
classifier = zoo.load(sys.argv[1])
words = "the a film story moving dull long witty gorgeous and far too of it is was not".split()
rng = random.Random(0)
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 700))) for _ in range(4000)]
answers = classifier.predict(texts)
print(json.dumps({"answers": len(answers), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def test_a_long_list_of_long_texts_is_predicted_within_4_gb(trained, tmp_path):
    # The export reads 512 tokens a text (FLAGS): as one batch, 4,000 texts' attention scores alone,
    # (4000, 2 heads, 512, 512) float32, take 8.4 GB; 32 texts at a time, 67 MB.
    _, _, export_dir = trained("sentiment")
    measured = data_path_peak(PREDICT_PEAK, tmp_path, export_dir)
    assert measured["answers"] == 4000 and measured["peak_mb"] < 4096, measured


def test_a_translation_run_and_its_export_translate_as_the_saved_model(trained):
    run, model_dir, export_dir = trained("translate")
    texts = ["Ein Mann fährt Fahrrad.", "", "Zwei Hunde spielen im Schnee."]
    served = signatures(export_dir)["serving_default"](text=tf.constant(texts))["translation"].numpy()
    served = [t.decode() for t in served]
    exported = zoo.load(export_dir)
    assert isinstance(exported, Translator) and exported.decode.beam_size == 2  # the export's own search
    assert run.translate(texts, beam_size=2) == exported.translate(texts) == served and served[1] == ""
    assert len(run.translate(texts, beam_size=1)) == 3  # a run searches as asked: its own server for greedy search
    with pytest.raises(ValueError, match="beam_size=2, length_penalty=0.6, fixed when it was exported"):
        exported.translate(texts, beam_size=1)


def test_a_language_model_run_and_its_export_generate_and_score_as_the_saved_model(trained):
    run, model_dir, export_dir = trained("lm")
    prompts = ["the company said", ""]
    own = signatures(export_dir)
    settings = {"max_new_tokens": 6, "top_k": 5, "temperature": 0.8, "seed": 7}
    served = own["generate"](prompt=tf.constant(prompts), max_new_tokens=tf.constant(6), top_k=tf.constant(5),
                             temperature=tf.constant(0.8), seed=tf.constant(7))
    exported = zoo.load(export_dir)
    assert isinstance(exported, LanguageModel)
    served = [t.decode() for t in served["continuation"].numpy()]
    assert run.generate(prompts, **settings) == exported.generate(prompts, **settings) == served
    scored = own["score"](text=tf.constant(prompts))
    for model in (run, exported):
        answers = model.score(prompts)
        assert [a["tokens"] for a in answers] == scored["tokens"].numpy().tolist()
        np.testing.assert_allclose([a["log_likelihood"] for a in answers], scored["log_likelihood"], atol=1e-5)
        np.testing.assert_allclose([a["perplexity"] for a in answers], scored["perplexity"], rtol=1e-5)
    for model in (run, exported):  # the graph's own check, as a ValueError naming the argument
        with pytest.raises(ValueError, match=r"generate: top_k must be <= \d+, the vocabulary's size"):
            model.generate(prompts, top_k=100_000)


def test_a_pretraining_run_and_its_export_encode_and_fill_masks_as_the_saved_model(trained):
    run, model_dir, export_dir = trained("pretrain")
    texts = ["a <mask> film", "", "no mask here, but a long text " * 20]
    own = signatures(export_dir)
    pooled = own["encode"](text=tf.constant(texts))["pooled"].numpy()
    filled = own["fill_mask"](text=tf.constant(texts), top_k=tf.constant(3))
    exported = zoo.load(export_dir)
    assert isinstance(run, Encoder) and isinstance(exported, Encoder)
    for model in (run, exported):
        np.testing.assert_allclose(model.encode(texts), pooled, rtol=0, atol=1e-5)
        answers = model.fill_mask(texts, top_k=3)
        assert [len(masks) for masks in answers] == filled["mask_count"].numpy().tolist() == [1, 0, 0]
        assert [a["token"] for a in answers[0][0]] == [t.decode() for t in filled["tokens"].numpy()[0, 0]]
        np.testing.assert_allclose([a["probability"] for a in answers[0][0]], filled["probabilities"][0, 0],
                                   rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="top_k=0 must be between 1 and"):  # the zoo's check
        exported.fill_mask(texts, top_k=0)
    with pytest.raises(ValueError, match=r"fill_mask: top_k must be <= \d+, the pieces"):  # the graph's check
        exported.fill_mask(texts, top_k=100_000)


def test_a_path_that_is_neither_a_run_nor_an_export_is_refused_saying_what_each_holds(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist: give a run folder"):
        zoo.load(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"neither a trained run nor an export: .*config\.json.*saved_model\.pb"):
        zoo.load(tmp_path / "empty")
    tf.saved_model.save(tf.Module(), str(tmp_path / "plain" / "3"))
    with pytest.raises(ValueError, match=r"plain/3 holds a SavedModel but no ops_manifest\.json"):
        zoo.load(tmp_path / "plain")  # its newest version, which is no export of the zoo
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text(json.dumps({"recipe": "chess"}))
    with pytest.raises(ValueError, match="holds a 'chess' model; zoo.load knows the recipes sentiment, translate"):
        zoo.load(tmp_path / "other")


def test_averaging_is_refused_for_an_export(trained):
    _, _, export_dir = trained("sentiment")
    with pytest.raises(ValueError, match="averages a run's checkpoints, but .* is an export"):
        zoo.load(export_dir, average=2)
