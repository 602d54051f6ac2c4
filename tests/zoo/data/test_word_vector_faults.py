"""Word-vector files named right (issue 58): a path that names no file (empty, a folder) is refused naming the config
field, through zoo.train too, before the run folder gets a file; a word2vec header whose dimension is not the rows'
names both; random bytes are said to be no vectors file; vectors of another language are refused by the vocabulary's
repeated words they cover (zoo.data.word_vectors.check_language), not only by the tokens."""

import gzip
import os

import numpy as np
import pytest

import zoo
from zoo.core.config import ConfigError
from zoo.data import word_embedding, word_tokenizer, word_vectors
from zoo.data.word_vectors import CoverageError, VectorsFileError, read_vectors

ROWS = {f"w{i}": np.arange(50, dtype=np.float32) / 7 + i for i in range(3)}


def header_file(path, header_dim, binary, packed):
    """A word2vec file of ROWS (50 values each) whose header says `header_dim`."""
    if binary:
        body = b"".join(w.encode() + b" " + v.astype("<f4").tobytes() + b"\n" for w, v in ROWS.items())
    else:
        body = "".join(f"{w} {' '.join(repr(float(x)) for x in v)}\n" for w, v in ROWS.items()).encode()
    data = f"3 {header_dim}\n".encode() + body
    path.write_bytes(gzip.compress(data) if packed else data)
    return str(path)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("header_dim", [60, 40])
def test_a_header_whose_dimension_is_not_the_rows_names_both(tmp_path, header_dim, binary, packed):
    path = header_file(tmp_path / "vectors", header_dim, binary, packed)
    with pytest.raises(VectorsFileError) as raised:
        read_vectors(path, ["w1"])
    message = str(raised.value)
    if binary:
        expected = f"{path}:1: the header says {header_dim} dimensions but the binary records hold 50"
    else:
        expected = f"{path}:2: a row of 50 values where the header (line 1) says {header_dim}"
    assert message.startswith(expected) and "correct the header's dimension" in message, message
    assert "\n" not in message
    assert read_vectors(header_file(tmp_path / "right", 50, binary, packed), ["w1"]).found.tolist() == [True]


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_random_bytes_are_no_vectors_file(tmp_path, packed):
    data = np.random.default_rng(0).bytes(200_000)
    path = tmp_path / "noise.txt"
    path.write_bytes(gzip.compress(data) if packed else data)
    with pytest.raises(VectorsFileError) as raised:
        read_vectors(str(path), ["the"])
    message = str(raised.value)
    assert message.startswith(f"{path}: not a word-vectors file") and "dimension of 0" not in message, message
    assert "GloVe text, word2vec text or binary, or fastText .vec" in message


def test_a_folder_or_an_empty_path_names_the_field(tmp_path):
    (tmp_path / "glove.6B.50d.txt.gz").write_bytes(b"")
    with pytest.raises(VectorsFileError, match=rf"^model.source_vectors={tmp_path} is a folder: give one word-vectors "
                                               rf"file .*, e.g. model.source_vectors={tmp_path}/glove.6B.50d.txt.gz"):
        read_vectors(str(tmp_path), ["the"], "model.source_vectors")
    with pytest.raises(VectorsFileError, match=r"^model.word_vectors='' names no file: give the path of a "):
        read_vectors("", ["the"])
    with pytest.raises(VectorsFileError, match=r"^model.word_vectors=.*nothing.txt: no such file"):
        read_vectors(str(tmp_path / "nothing.txt"), ["the"])


def sentiment_files(folder):
    """A tiny csv: dataset of two splits, for runs refused before any training."""
    rows = "".join(f"a {'good' if i % 2 else 'bad'} film number {i},{i % 2}\n" for i in range(40))
    for split in ("train", "validation"):
        (folder / f"{split}.csv").write_text("text,label\n" + rows)
    return f"csv:{folder}/{{split}}.csv"


@pytest.mark.parametrize("given, error, message", [
    ("folder", ValueError, r"^model.word_vectors=.* is a folder: give one word-vectors file"),
    ("", ConfigError, r"^model.word_vectors='' names no file"),
])
def test_zoo_train_refuses_a_folder_or_an_empty_path_before_writing(tmp_path, given, error, message):
    dataset = sentiment_files(tmp_path)
    (tmp_path / "vectors").mkdir()
    run = tmp_path / "run"
    run.mkdir()
    path = str(tmp_path / "vectors") if given == "folder" else given
    with pytest.raises(error, match=message):
        zoo.train("sentiment", model_dir=run, dataset=dataset, word_vectors=path, preset="tiny", train_steps=1,
                  mode="train")
    assert os.listdir(run) == []


def covered_by(tmp_path, vectors_words, counts):
    """The Coverage of a GloVe file holding `vectors_words` for the vocabulary of `counts`."""
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} 0.1 0.2\n" for w in vectors_words))
    vocabulary = ["<pad>", *counts]
    return word_vectors.coverage(read_vectors(str(path), vocabulary), counts), str(path)


def test_vectors_covering_the_tokens_but_few_repeated_words_are_another_language(tmp_path):
    """As English GloVe on German text: the frequent function words and punctuation are found (most tokens), the
    language's other words are not."""
    counts = {"der": 300, ".": 250, "die": 200, "ein": 100, **{f"wort{i}": 2 for i in range(40)}, "einmal": 1}
    covered, path = covered_by(tmp_path, ["der", ".", "die", "ein", "einmal"], counts)
    assert covered.share > 0.8 and (covered.repeated_found, covered.repeated) == (4, 44)
    word_vectors.check_coverage(covered, 0.2, path, "--min_vector_coverage")  # the tokens alone pass
    with pytest.raises(CoverageError) as raised:
        word_vectors.check_language(covered, 0.2, path, "--min_vector_coverage")
    message = str(raised.value)
    assert message.startswith(f"{path}: word vectors cover 91.4% of training tokens but only 4 of the vocabulary's "
                              "44 words seen twice or more (9.1%), under 75%")
    assert message.endswith("is this the right file or language? (lower the threshold with --min_vector_coverage)")
    word_vectors.check_language(covered, 0.02, path, "--min_vector_coverage")  # lowered: 7.5%
    word_vectors.check_language(covered, 0.0, path, "--min_vector_coverage")  # off
    assert word_vectors.language_bound(0.2) == word_vectors.language_bound(0.5) == 0.75


def test_the_texts_own_language_passes_and_words_seen_once_are_not_judged(tmp_path):
    counts = {"the": 300, ".": 250, **{f"word{i}": 3 for i in range(40)}, **{f"name{i}": 1 for i in range(100)}}
    covered, path = covered_by(tmp_path, ["the", ".", *(f"word{i}" for i in range(36))], counts)
    assert covered.words_found / covered.words < 0.3 and covered.repeated_share == 38 / 42
    word_vectors.check_language(covered, 0.2, path, "--min_vector_coverage")
    plan = word_embedding.plan_vocabulary(["<pad>", "<unk>", "<s>", "</s>", *counts], counts, path, 0.2,
                                          language=True, coverage_setting="--min_vector_coverage")
    assert plan.matrix.shape == (len(counts) + 4, 2)


def test_the_published_glove_file_refuses_german_and_takes_english():
    """Multi30k's first 1,000 training pairs, a vocabulary of at most 2,000 words: English GloVe 6B covers 99.9% of
    the English side's repeated words and 47.1% of the German side's (docs/word_vectors.md, "Coverage")."""
    data = os.environ["ZOO_DATA_DIR"]
    glove = os.path.join(data, "glove", "glove.6B.50d.txt.gz")
    if not os.path.exists(glove) or not os.path.isdir(os.path.join(data, "multi30k")):
        pytest.skip("GloVe 6B or Multi30k is not here")
    for language, refused in (("en", False), ("de", True)):
        with gzip.open(os.path.join(data, "multi30k", f"train.{language}.gz"), "rt", encoding="utf-8") as f:
            texts = [next(f).strip() for _ in range(1000)]
        counts = word_embedding.count_words(texts)
        words = word_tokenizer.build_vocabulary(counts, 2000)
        plan = lambda: word_embedding.plan_vocabulary(words, counts, glove, 0.2, language=True,  # noqa: E731
                                                      coverage_setting="--min_vector_coverage")
        if refused:
            with pytest.raises(CoverageError, match=r"cover 7\d\.\d% of training tokens but only 376 of the "
                                                    r"vocabulary's 799 words seen twice or more \(47.1%\)"):
                plan()
        else:
            assert plan().derived["words_found"] > 1800


def test_counting_the_words_and_reading_the_vectors_each_say_so_first(tmp_path, capsys):
    """Issue 58: 17 s passed in silence before the coverage line (the words counted, the file read)."""
    path = tmp_path / "vectors.txt"
    path.write_text("good 0.1 0.2\nfilm 0.3 0.4\n")
    plan = word_embedding.plan_words(["a good film", "good"], 100, str(path))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "word vocabulary: counting the training text's words ..."
    assert printed[1] == f"word vectors: reading {path} for {len(plan.words):,} words ..."

