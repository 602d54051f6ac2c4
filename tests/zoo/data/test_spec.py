"""zoo.data.spec: a dataset string parsed once into a DatasetSpec (each form, built-in and tfds: names, the
refusals), its splits' files, and each recipe's config as the one place its dataset is parsed: the readers take
the config's spec and parse nothing again."""

import pytest

from zoo.classifier import data as classifier_data
from zoo.classifier.run_config import SentimentData, SentimentRunConfig
from zoo.core import config as cfg
from zoo.data import spec as dataset_spec
from zoo.data.datasets import DatasetError
from zoo.language_model import data as lm_data
from zoo.language_model.run_config import LMData, LMRunConfig
from zoo.pretraining import data as pretraining_data
from zoo.pretraining.run_config import PretrainData, PretrainRunConfig
from zoo.sentiment import recipe as sentiment
from zoo.translation import data as translation_data, recipe as translation
from zoo.translation.run_config import TranslateRunConfig, TranslationData


@pytest.mark.parametrize("name, form, pattern, has_splits", [
    ("csv:tickets/{split}.csv", "csv", "tickets/{split}.csv", True),
    ("tsv:pairs/*.tsv", "tsv", "pairs/*.tsv", False),
    ("jsonl:reviews.jsonl.gz", "jsonl", "reviews.jsonl.gz", False),
    ("folder:aclImdb/{split}", "folder", "aclImdb/{split}", True),
    ("text:corpus/{split}.{lang}", "text", "corpus/{split}.{lang}", True),
    ("text:c:/data/a:b.txt", "text", "c:/data/a:b.txt", False),  # the first colon alone ends the form
])
def test_each_form_parses_into_its_files(name, form, pattern, has_splits):
    spec = dataset_spec.parse(name, dataset_spec.FORMS)
    assert (spec.form, spec.pattern, spec.has_splits, spec.files) == (form, pattern, has_splits, True)
    assert str(spec) == name and spec.columns == dataset_spec.Columns()


@pytest.mark.parametrize("name", ["imdb", "sst2_tune", "tfds:glue/sst2", "multi30k"])
def test_a_built_in_or_tfds_name_is_a_spec_without_files(name):
    spec = dataset_spec.parse(name, ("csv",))
    assert (spec.name, spec.form, spec.pattern, spec.files, spec.has_splits) == (name, None, None, False, False)
    assert dataset_spec.default_split(spec) == "test"
    assert dataset_spec.parse(None, ("csv",)) is None and dataset_spec.parse("", ("csv",)) is None


def test_refusals_name_the_forms_the_recipe_reads():
    with pytest.raises(DatasetError, match=r"^--dataset=text:x.txt: this recipe reads csv:, tsv:, jsonl:, folder: "
                                           r"files, not text:\.$"):
        dataset_spec.parse("text:x.txt", classifier_data.FORMS)
    with pytest.raises(DatasetError, match=r"^--dataset=csv: names no files: give a path or glob after 'csv:'\.$"):
        dataset_spec.parse("csv:", classifier_data.FORMS)


def test_a_parsed_spec_is_taken_as_it_is_and_a_string_parsed():
    spec = dataset_spec.parse("csv:a.csv", ("csv",), dataset_spec.Columns(text="body"))
    assert dataset_spec.given(spec, ("csv",)) is spec
    assert dataset_spec.given("csv:a.csv", ("csv",), dataset_spec.Columns(text="body")) == spec


def test_splits_of_the_files(tmp_path):
    for split in ("train", "test"):
        (tmp_path / f"{split}.csv").write_text("text,label\na,b\n")
    spec = dataset_spec.parse(f"csv:{tmp_path}/{{split}}.csv", ("csv",))
    assert dataset_spec.paths(spec, "test") == [f"{tmp_path}/test.csv"]
    assert dataset_spec.holds_out(spec)  # no validation file: train's held-out share
    assert dataset_spec.paths(spec, "validation") == [f"{tmp_path}/train.csv"]
    assert dataset_spec.default_split(spec) == "test"
    whole = dataset_spec.parse(f"csv:{tmp_path}/*.csv", ("csv",))
    assert dataset_spec.default_split(whole) == "validation"
    with pytest.raises(DatasetError, match="has no test split"):
        dataset_spec.check_split(whole, "test")
    keep = dataset_spec.in_split(whole, "train")
    assert [keep(i) for i in range(40)] == [not dataset_spec.held_out(i) for i in range(40)]


def test_a_config_refuses_a_form_its_recipe_does_not_read_with_the_same_message():
    with pytest.raises(cfg.ConfigError) as refused:
        cfg.from_dict(SentimentRunConfig, {"data": {"dataset": "text:x.txt"}})
    assert str(refused.value) == "--dataset=text:x.txt: this recipe reads csv:, tsv:, jsonl:, folder: files, not text:."
    with pytest.raises(cfg.ConfigError, match=r"^--dataset=folder:x: this recipe reads text:, csv:, jsonl:"):
        cfg.from_dict(LMRunConfig, {"data": {"dataset": "folder:x"}})
    with pytest.raises(cfg.ConfigError, match=r"^--dataset=csv:x.csv: this recipe reads text:, tsv: files"):
        cfg.from_dict(TranslateRunConfig, {"data": {"dataset": "csv:x.csv"}})
    with pytest.raises(cfg.ConfigError, match=r"^--dataset=csv: names no files"):
        cfg.from_dict(PretrainRunConfig, {"data": {"corpus": ["imdb_unsup", "csv:"]}})


def test_the_sentiment_spec_carries_the_columns_and_the_label_shape():
    data = SentimentData(dataset="csv:q.csv", text_column="question1", text_pair_column="question2",
                         label_column="tags", label_separator=";", classes=("a", "b"), bad_rows="skip")
    config = cfg.from_dict(SentimentRunConfig, {"data": cfg.to_dict(data),
                                                "model": {"problem_type": "multi_label_classification"}})
    assert config.data == data
    assert config.dataset_spec.columns == dataset_spec.Columns(
        "question1", "tags", "skip", ("a", "b"), "multi_label_classification", ";", "question2")


@pytest.fixture
def parses(monkeypatch):
    """The names zoo.data.spec.parse is called with, from now on."""
    calls, parse = [], dataset_spec.parse

    def counted(name, *args, **kwargs):
        calls.append(name)
        return parse(name, *args, **kwargs)

    monkeypatch.setattr(dataset_spec, "parse", counted)
    return calls


def write_rows(tmp_path, rows=40):
    path = tmp_path / "t.csv"
    path.write_text("text,label\n" + "".join(f"text {i},{'ab'[i % 2]}\n" for i in range(rows)))
    return path


def test_sentiment_parses_once(tmp_path, parses):
    config = SentimentRunConfig(data=SentimentData(dataset=f"csv:{write_rows(tmp_path)}"))
    spec = config.dataset_spec
    assert config.dataset_spec is spec and parses == [config.data.dataset]
    classifier_data.check_split(spec, "validation")
    train = classifier_data.load(spec, "train")
    classifier_data.load(spec, "validation", class_names=train.class_names)
    assert parses == [config.data.dataset]  # the readers took the config's spec
    assert train.key["spec"] == config.data.dataset  # the token cache's key as before the spec


def test_sentiment_check_reads_the_config_spec(tmp_path, parses):
    """The recipe's check of a training run's evaluated split reads the config's spec (issue 59: the Settings
    classes and make_settings went; the mode's options are the config's)."""
    from zoo.runs.run_dir import RunDir
    from zoo.training.run_settings import RunSettings

    config = SentimentRunConfig(data=SentimentData(dataset=f"csv:{write_rows(tmp_path)}"))
    sentiment.check(RunSettings("train_and_eval", RunDir(str(tmp_path / "run")), config), config)
    assert parses == [config.data.dataset]


def test_language_model_parses_once(tmp_path, parses):
    (tmp_path / "a.txt").write_text("".join(f"line {i}\n" for i in range(40)))
    config = LMRunConfig(data=LMData(dataset=f"text:{tmp_path}/a.txt"))
    spec = config.dataset_spec
    assert lm_data.default_split(spec) == "validation"
    lm_data.check_split(spec, "validation")
    lm_data.load(spec, "train")
    lm_data.load(spec, "validation", bad_rows="skip")
    assert parses == [config.data.dataset]


def test_translation_parses_once(tmp_path, parses):
    (tmp_path / "p.tsv").write_text("".join(f"satz {i}\tsentence {i}\n" for i in range(40)))
    config = TranslateRunConfig(data=TranslationData(dataset=f"tsv:{tmp_path}/p.tsv"))
    spec = config.dataset_spec
    assert translation.default_split(spec) == "validation"
    translation_data.check_split(spec, "validation", "de", "en")
    translation_data.load(spec, "train", "de", "en")
    assert translation_data.held_out(spec, "de")
    assert parses == [config.data.dataset]


def test_pretraining_parses_each_corpus_once(tmp_path, parses):
    (tmp_path / "a.txt").write_text("one document\nanother\n")
    (tmp_path / "b.jsonl").write_text('{"content": "a third"}\n')
    corpus = (f"text:{tmp_path}/a.txt", f"jsonl:{tmp_path}/b.jsonl")
    config = PretrainRunConfig(data=PretrainData(corpus=corpus, text_column="content"))
    documents = pretraining_data.load_corpora(config.corpus_specs)
    assert list(documents) == ["one document", "another", "a third"]
    assert documents.key["corpus"] == list(corpus) and documents.key["text_column"] == "content"
    assert parses == list(corpus)
