"""Serving faults: the four exports the zoo writes (sentiment, translation, the Transformer-XL
language model, the pretraining encoder), each built by its recipe with the tiny preset and one
training step, loaded in a fresh Python process that imports TensorFlow (and TensorFlow Text only
when the export's ops manifest asks for it), as a server would.

README, "Reliability": every signature answers an empty batch with an empty batch and refuses
out-of-range arguments with a clear message on the first call. Each out-of-range argument is the
first call of a freshly loaded export (a check that only holds from the second call on fails here),
made again a few times there (a check that races the search it guards loses some of the calls), and
a valid call to the same loaded export must still work afterwards. The exports are trained and written
by zoo.train in the test's own process; one fresh process makes the calls of those whose manifest asks for
TensorFlow Text, another those of the rest, each session on its own load, so the suite starts TensorFlow
twice here.
"""

import json
import os

import pytest

import zoo
from tests.conftest import HANG, fresh_process_json

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

# What each recipe trains to write its export (zoo.train's recipe and keywords): the tiny preset, small
# slices, one training step.
RECIPES = {
    "sentiment": ("sentiment", {"dataset": "sst2", "max_examples": 200, "vocab_size": 300, "batch_size": 8}),
    "translation": ("translate", {"dataset": "multi30k", "source": "de", "target": "en", "max_examples": 200,
                                  "vocab_size": 300, "max_tokens": 512}),
    "lm": ("lm", {"dataset": "ptb", "batch_size": 4}),
    "pretrain": ("pretrain", {"corpus": ["sst2"], "vocab_size": 300, "sequence_length": 32, "batch_size": 4}),
}

# Every signature of each export and its inputs; the text input of each is a batch of strings.
SIGNATURES = {
    "sentiment": {"serving_default": ["text"]},
    "translation": {"serving_default": ["text"]},
    "lm": {
        "serving_default": ["prompt"],
        "generate": ["max_new_tokens", "prompt", "seed", "temperature", "top_k"],
        "score": ["text"],
    },
    "pretrain": {"serving_default": ["text"], "encode": ["text"], "fill_mask": ["text", "top_k"]},
}
TEXT_INPUTS = {"text", "prompt"}
TEXTS = {
    "sentiment": "a wonderful, moving film",
    "translation": "Ein Mann fährt Fahrrad.",
    "lm": "the company said",
    "pretrain": "a <mask> film",
}
# An in-range value of each scalar argument, used wherever the call is not about that argument.
VALID = {"max_new_tokens": 3, "temperature": 1.0, "top_k": 2, "seed": 0}

# (export, signature, argument, out-of-range value). LanguageModelServer's limit on max_new_tokens
# is 2048; NaN is no positive temperature, infinity no finite one; PTB's vocabulary has 10,001 tokens.
OUT_OF_RANGE = [
    ("lm", "generate", "max_new_tokens", -1),
    ("lm", "generate", "max_new_tokens", 0),
    ("lm", "generate", "max_new_tokens", 2049),
    ("lm", "generate", "temperature", 0.0),
    ("lm", "generate", "temperature", float("nan")),
    ("lm", "generate", "temperature", float("inf")),
    ("lm", "generate", "top_k", -1),
    ("lm", "generate", "top_k", 10_002),
    ("pretrain", "fill_mask", "top_k", 0),
    ("pretrain", "fill_mask", "top_k", -1),
]
# Scalar arguments every value of their type is valid for.
ANY_VALUE = {("lm", "generate", "seed")}
# How many times a process makes its out-of-range call, the first call of the process included.
REFUSED_CALLS = 10

# Run in a fresh process: for each session (an export's version folder and a list of calls), loads the export
# again and makes the session's calls in order; prints, per session, each call's output shapes or its error, and
# every signature's input names.
PROGRAM = """
import json
import tensorflow as tf
{imports}

def serve(version_dir, calls):
    model = tf.saved_model.load(version_dir)
    answers = []
    for signature, arguments in calls:
        function = model.signatures[signature]
        specs = function.structured_input_signature[1]
        try:
            outputs = function(**{{name: tf.constant(value, specs[name].dtype) for name, value in arguments.items()}})
            answers.append({{"shapes": {{name: output.shape.as_list() for name, output in outputs.items()}}}})
        except tf.errors.OpError as error:
            answers.append({{"error": type(error).__name__, "message": error.message}})
    inputs = {{name: sorted(function.structured_input_signature[1]) for name, function in model.signatures.items()}}
    return {{"answers": answers, "inputs": inputs}}

print(json.dumps([serve(version_dir, calls) for version_dir, calls in json.loads({sessions!r})]))
"""


def build_export(tmp_path_factory, name):
    """Trains the recipe one step and exports it; the version folder."""
    base = tmp_path_factory.mktemp(name)
    export_dir = str(base / "export")
    recipe, keywords = RECIPES[name]
    zoo.train(recipe, base / "run", preset="tiny", train_steps=1, mode="train", export_dir=export_dir, **keywords)
    return os.path.join(export_dir, "1")


def serve_in_fresh_process(sessions, text_ops):
    """Makes each session's calls ([version folder, [[signature, {input: value}], ...]]) on its own load of its
    export, all in one new process importing TensorFlow (and TensorFlow Text with `text_ops`); the JSON answer of
    each session."""
    imports = "import tensorflow_text" if text_ops else ""
    program = PROGRAM.format(imports=imports, sessions=json.dumps(sessions))
    return fresh_process_json(program, timeout=HANG)


def sessions_of(export):
    """(key, calls) of each session of `export`: "empty", an empty batch to every signature; and per out-of-range
    case (signature, argument, repr(value)) the out-of-range call made REFUSED_CALLS times, then a valid call."""
    text = [TEXTS[export]]
    yield "empty", [[signature, arguments(export, signature, [])] for signature in sorted(SIGNATURES[export])]
    for e, s, a, v in OUT_OF_RANGE:
        if e == export:  # repr: NaN is not equal to itself
            yield (s, a, repr(v)), [[s, arguments(export, s, text, **{a: v})]] * REFUSED_CALLS + [
                [s, arguments(export, s, text)]]


@pytest.fixture(scope="module", name="served")
def served_fixture(tmp_path_factory):
    """export -> {session key: what it answered} (sessions_of), or the error that stopped it: the four exports
    built, then served by one fresh process for those whose manifest lists ops beside TensorFlow's and one for
    the rest."""
    answers, kinds = {}, {}
    for export in sorted(RECIPES):
        try:
            version_dir = build_export(tmp_path_factory, export)
            with open(os.path.join(version_dir, "ops_manifest.json")) as f:
                kinds.setdefault(bool(json.load(f)["non_core_ops"]), []).append((export, version_dir))
        except Exception as error:  # kept, and raised by each test of this export
            answers[export] = error
    for text_ops, exports in kinds.items():
        keys, sessions = [], []
        for export, version_dir in exports:
            for key, calls in sessions_of(export):
                keys.append((export, key))
                sessions.append([version_dir, calls])
        try:
            for (export, key), answer in zip(keys, serve_in_fresh_process(sessions, text_ops), strict=True):
                answers.setdefault(export, {})[key] = answer
        except Exception as error:
            answers.update((export, error) for export, _ in exports)

    def served(export):
        if isinstance(answers[export], Exception):
            raise answers[export]
        return answers[export]

    return served


def arguments(export, signature, text_batch, **changed):
    """Every input of `signature`: the text input `text_batch`, the scalars in range but `changed`."""
    return {name: text_batch if name in TEXT_INPUTS else changed.get(name, VALID[name])
            for name in SIGNATURES[export][signature]}


@pytest.mark.parametrize("export", sorted(SIGNATURES))
def test_every_signature_answers_an_empty_batch_with_an_empty_batch(served, export):
    empty = served(export)["empty"]
    assert empty["inputs"] == SIGNATURES[export], "the export's signatures changed: probe the new ones here"
    probed = {(e, s, a) for e, s, a, _ in OUT_OF_RANGE} | ANY_VALUE
    scalars = {(export, s, a) for s, names in empty["inputs"].items() for a in names if a not in TEXT_INPUTS}
    assert scalars <= probed, f"scalar arguments without an out-of-range probe: {sorted(scalars - probed)}"
    for signature, answer in zip(sorted(SIGNATURES[export]), empty["answers"]):
        assert "error" not in answer, f"{export} {signature} on an empty batch: {answer}"
        assert answer["shapes"] and all(shape[0] == 0 for shape in answer["shapes"].values()), (signature, answer)


@pytest.mark.parametrize(
    "export, signature, argument, value", OUT_OF_RANGE, ids=[f"{e}-{s}-{a}={v}" for e, s, a, v in OUT_OF_RANGE]
)
def test_an_out_of_range_argument_is_refused_by_name_from_the_first_call_on_and_a_valid_call_then_works(
    served, export, signature, argument, value
):
    *refused, valid = served(export)[signature, argument, repr(value)]["answers"]
    for call, answer in enumerate(refused, 1):
        assert answer.get("error") == "InvalidArgumentError", f"call {call}: {argument}={value} not refused: {answer}"
        assert f"{argument} must" in answer["message"], f"call {call}: {answer['message']}"
    assert "error" not in valid, f"a valid call after the refused ones failed: {valid}"
    assert all(shape[0] == 1 for shape in valid["shapes"].values()), valid
