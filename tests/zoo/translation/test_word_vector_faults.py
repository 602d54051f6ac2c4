"""Word vectors in translation refused before anything is written (issue 58): English GloVe 6B as the vectors of a
German source covers most of its tokens (its function words, numbers and punctuation) but few of its words, and is
refused by them; a vocab_size one side's text cannot make leaves no other side's words file; a folder given for the
vectors is one `error:` line naming the flag's field. Runs refused on the real Multi30k and GloVe 6B 50d, none
trained."""

import os
import re

import pytest

import zoo
from zoo.data.word_vectors import CoverageError

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

GLOVE = os.path.join(os.environ.get("ZOO_DATA_DIR", ""), "glove", "glove.6B.50d.txt.gz")
QUICK = {"dataset": "multi30k", "preset": "tiny", "train_steps": 1, "mode": "train", "shared_vocabulary": False}


@pytest.fixture(name="folder")
def folder_fixture(tmp_path):
    if not os.path.exists(GLOVE):
        pytest.skip(f"{GLOVE} is not here")
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("max_examples, tokens, words", [(200, "75.6", "64.9"), (None, "73.7", "24.2")],
                         ids=["200 pairs", "all pairs"])
def test_english_glove_for_a_german_source_is_refused_by_the_words_it_lacks(folder, max_examples, tokens, words):
    with pytest.raises(CoverageError) as raised:
        zoo.train("translate", model_dir=folder, source="de", target="en", source_vectors=GLOVE,
                  max_examples=max_examples, **QUICK)
    message = str(raised.value)
    assert message.startswith(f"{GLOVE}: word vectors cover {tokens}% of training tokens but only ")
    assert f"words seen twice or more ({words}%), under 75%" in message
    assert message.endswith("is this the right file or language? (lower the threshold with --min_vector_coverage)")
    assert os.listdir(folder) == []


def test_a_vocab_size_the_target_cannot_make_leaves_no_source_words_file(folder):
    with pytest.raises(ValueError, match="SentencePiece can make at most .* pieces from it"):
        zoo.train("translate", model_dir=folder, source="en", target="de", source_vectors=GLOVE, max_examples=200,
                  vocab_size=8000, **QUICK)
    assert os.listdir(folder) == []  # no source.words.txt


def test_the_command_line_says_a_folder_in_one_error_line(folder, probe_recipe):
    result = probe_recipe("translate", "--dataset=multi30k", "--preset=tiny", "--max_examples=50", "--train_steps=1",
                          f"--source_vectors={os.path.dirname(GLOVE)}", "--noshared_vocabulary",
                          f"--model_dir={folder}")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert re.search(rf"^error: model.source_vectors={re.escape(os.path.dirname(GLOVE))} is a folder: give one "
                     rf"word-vectors file .*, e\.g\. model.source_vectors={re.escape(GLOVE)}\.$", result.stderr, re.M)
    assert os.listdir(folder) == []
