"""Fault injection, data: a corrupt, truncated or undecodable data file gets one DatasetError that
names the file (no EOFError or IndexError from deep inside a reader); an unknown TFDS name is one
line with the closest names, not TFDS's whole catalog."""

import os
import shutil

import pytest

from zoo.data import datasets
from zoo.language_model import corpora as lm_corpora
from zoo.translation import corpora as translation_corpora
from zoo.pretraining import data as pretraining_data

SHARED = os.environ["ZOO_DATA_DIR"]


@pytest.fixture(name="data_dir")
def data_dir_fixture(tmp_path, monkeypatch):
    """A private copy of the small data files, for damaging."""
    for folder in ("sst2", "multi30k", "ptb"):
        shutil.copytree(os.path.join(SHARED, folder), tmp_path / folder)
        for name in os.listdir(tmp_path / folder):
            os.chmod(tmp_path / folder / name, 0o644)
    os.makedirs(tmp_path / "tinyshakespeare")
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path))
    return tmp_path


def truncate(path, keep=0.5):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * keep)])


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
@pytest.mark.parametrize("folder, name, load", [
    ("sst2", "train.tsv.gz", lambda: datasets.load_classification("sst2", "train")),
    ("multi30k", "train.de.gz", lambda: translation_corpora.load_translation("multi30k", "train", "de", "en")),
    ("ptb", "ptb.train.txt.gz", lambda: lm_corpora.load_corpus("ptb", "train")),
])
def test_a_damaged_gzip_file_is_named(data_dir, damage, folder, name, load):
    path = data_dir / folder / name
    if damage == "truncated":
        truncate(path)
    else:
        path.write_bytes(os.urandom(5000))
    with pytest.raises(datasets.DatasetError, match=f"{path} cannot be read .*corrupt, truncated"):
        load()


def test_a_tsv_cut_in_the_middle_of_a_line_is_refused_when_read(data_dir):
    path = data_dir / "sst2" / "dev.tsv"
    text = path.read_text()
    path.write_text(text[: text.index("\n", len(text) // 2) + 20])
    with pytest.raises(datasets.DatasetError, match=rf"{path}, line \d+: expected 'sentence<TAB>label'"):
        datasets.check_split("sst2", "validation")  # what a recipe calls before training


def test_random_bytes_as_text_name_the_file(data_dir):
    path = data_dir / "tinyshakespeare" / "input.txt"
    path.write_bytes(bytes(range(128, 256)) * 40)
    with pytest.raises(datasets.DatasetError, match=f"{path} cannot be read .*UnicodeDecodeError"):
        lm_corpora.load_corpus("tinyshakespeare", "train")


def test_a_truncated_unlabeled_imdb_archive_is_named(data_dir):
    os.makedirs(data_dir / "imdb")
    path = data_dir / "imdb" / "aclImdb_v1_unsup.tar.gz"
    with open(os.path.join(SHARED, "imdb", "aclImdb_v1_unsup.tar.gz"), "rb") as f:
        path.write_bytes(f.read(200_000))
    with pytest.raises(datasets.DatasetError, match=f"{path} cannot be read"):
        pretraining_data.load_documents("imdb_unsup")


def test_a_failed_download_says_what_to_do(monkeypatch):
    import keras

    def offline(*args, **kwargs):
        raise Exception("URL fetch failure on https://example.invalid: None -- [Errno -2] Name or service not known")

    monkeypatch.delenv("ZOO_DATA_DIR")
    monkeypatch.setattr(keras.utils, "get_file", offline)
    with pytest.raises(datasets.DatasetError) as caught:
        datasets.load_classification("sst2", "validation")
    message = str(caught.value)
    assert datasets.SST2_DEV.url in message and "ZOO_DATA_DIR" in message and "sst2/ holds dev.tsv" in message


@pytest.mark.parametrize("recipe, damaged, flags", [
    ("lm", "ptb/ptb.test.txt", ["--dataset=ptb", "--preset=tiny", "--batch_size=8"]),
    ("translate", "multi30k/test_2016_flickr.de.gz", ["--dataset=multi30k", "--source=de", "--target=en",
                                                      "--preset=tiny", "--max_examples=200", "--vocab_size=300"]),
])
def test_a_damaged_evaluation_file_fails_before_training(data_dir, tmp_path, recipe, damaged, flags, probe_recipe):
    path = data_dir / damaged
    path.write_bytes(bytes(range(128, 256)) * 40)
    model_dir = tmp_path / "run"
    result = probe_recipe(recipe, *flags, "--mode=train_and_eval", "--eval_split=test", "--train_steps=5",
                          f"--model_dir={model_dir}", env={"ZOO_DATA_DIR": str(data_dir)})
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"{path} cannot be read" in result.stderr.strip().splitlines()[-1]
    assert "step " not in result.stdout and not list(model_dir.glob("ckpt-*"))


@pytest.mark.parametrize("name, load, meant", [
    ("tfds:imdb_reviewz", lambda name: datasets.load_classification(name, "train"), "tfds:imdb_reviews"),
    ("tfds:imdb_reviewz", lambda name: datasets.check_split(name, "train"), "tfds:imdb_reviews"),
    ("tfds:ted_hrlr_translat/pt_to_en", lambda name: translation_corpora.load_translation(name, "train", "pt", "en"),
     "tfds:ted_hrlr_translate/pt_to_en"),
])
def test_an_unknown_tfds_name_is_one_line_with_the_closest_names_not_the_catalog(name, load, meant):
    with pytest.raises(datasets.DatasetError) as unknown:
        load(name)
    message = str(unknown.value)
    dataset = name[len("tfds:") :].split("/")[0]
    assert message.startswith(f"TFDS has no dataset {dataset!r}. Did you mean {meant}") and "\n" not in message
    assert message.endswith(f"Its catalog: {datasets.TFDS_CATALOG}.")


@pytest.mark.parametrize("entry", ["symlink loop", "broken link", "fifo", "socket"])
def test_a_class_folder_entry_that_is_not_a_file_is_named_in_one_line(tmp_path, entry):
    import socket

    from zoo.classifier import data as classifier_data

    for label in ("neg", "pos"):
        os.makedirs(tmp_path / "train" / label)
        (tmp_path / "train" / label / "1.txt").write_text(f"a {label} text")
    odd = tmp_path / "train" / "pos" / "odd"
    if entry == "symlink loop":
        os.symlink(odd, odd)
    elif entry == "broken link":
        os.symlink(tmp_path / "gone", odd)
    elif entry == "fifo":
        os.mkfifo(odd)
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(odd))
    said = {"symlink loop": "too many levels of symbolic links", "broken link": "no such file or directory",
            "fifo": "a fifo", "socket": "a socket"}[entry]
    with pytest.raises(datasets.DatasetError, match=rf"pos holds 1 entry that cannot be read as texts: odd \({said}\)\. "
                                                    "Remove them"):
        classifier_data.load(f"folder:{tmp_path}/{{split}}", "train")
