"""zoo.core.config: typed configs from files, dotted overrides and keywords, each error naming its field."""

import dataclasses
import json

import pytest

from zoo.core import config as cfg
from zoo.classifier.model import ClassifierConfig
from zoo.training.config import TrainConfig


@dataclasses.dataclass(frozen=True)
class Data:
    dataset: str | None = None
    classes: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Run:
    data: Data = Data()
    model: ClassifierConfig = ClassifierConfig()
    train: TrainConfig = TrainConfig()


def test_round_trip_through_yaml_and_json(tmp_path):
    run = cfg.from_dict(Run, {"model": {"num_layers": 6, "norm_first": True}, "data": {"classes": ["a", "b"]}})
    assert run.model.num_layers == 6 and run.model.norm_first and run.data.classes == ("a", "b")
    (tmp_path / "a.yaml").write_text(cfg.to_yaml(run))
    (tmp_path / "a.json").write_text(json.dumps(cfg.to_dict(run)))
    assert cfg.from_dict(Run, cfg.read_file(tmp_path / "a.yaml")) == run
    assert cfg.from_dict(Run, cfg.read_file(tmp_path / "a.json")) == run


def test_precedence_of_layers():
    base = Run(model=ClassifierConfig(num_layers=2, hidden_dim=128))
    file = {"model": {"num_layers": 4, "hidden_dim": 256}}
    dotted = cfg.nested(dict([cfg.parse_override("model.num_layers=6")]))
    shortcut = {"model": {"dropout": 0.3}}
    run = cfg.from_dict(Run, cfg.merge(cfg.to_dict(base), file, dotted, shortcut))
    assert (run.model.num_layers, run.model.hidden_dim, run.model.dropout) == (6, 256, 0.3)
    assert run.model.num_heads == base.model.num_heads


@pytest.mark.parametrize("text, value", [
    ("train.learning_rate=1e-4", 1e-4), ("train.learning_rate=0.001", 0.001), ("model.norm_first=true", True),
    ("model.activation=gelu", "gelu"), ("model.embedding_dim=null", None), ("train.profile_steps=[11, 20]", (11, 20)),
    ("data.dataset=no", "no"), ("data.dataset=123", "123"), ("data.dataset=null", None),
    ("data.classes=[0, 1]", ("0", "1")),
])
def test_override_values_are_typed(text, value):
    name, raw = cfg.parse_override(text)
    run = cfg.from_dict(Run, cfg.nested({name: raw}))
    section, field = name.split(".")
    assert getattr(getattr(run, section), field) == value


@pytest.mark.parametrize("data, message", [
    ({"model": {"num_layres": 6}}, "model.num_layres is not a config field: did you mean model.num_layers"),
    ({"modle": {}}, "modle is not a config field: did you mean model?"),
    ({"model": {"num_layers": "six"}}, "model.num_layers='six' (str) must be a whole number"),
    ({"model": {"num_layers": 2.5}}, "model.num_layers=2.5 (float) must be a whole number"),
    ({"model": {"norm_first": "yes"}}, "model.norm_first='yes' (str) must be true or false"),
    ({"model": {"dropout": float("nan")}}, "model.dropout=nan must be a finite number"),
    ({"model": {"hidden_dim": 384, "num_heads": 5}}, "model.num_heads=5 does not divide model.hidden_dim=384"),
    ({"train": {"learning_rate": -1}}, "train.learning_rate=-1.0 must be positive"),
    ({"model": 3}, "model must be a mapping of fields"),
    ({"train": {"profile_steps": [1]}}, "train.profile_steps=[1] must hold 2 values"),
])
def test_every_error_names_the_dotted_field(data, message):
    with pytest.raises(cfg.ConfigError) as error:
        cfg.from_dict(Run, data)
    assert message in str(error.value)


def test_malformed_override_and_file(tmp_path):
    with pytest.raises(cfg.ConfigError, match="--config.FIELD.PATH=VALUE"):
        cfg.parse_override("model.num_layers")
    (tmp_path / "bad.yaml").write_text("model: [1, 2\n")
    with pytest.raises(cfg.ConfigError, match="not valid YAML or JSON at line"):
        cfg.read_file(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(cfg.ConfigError, match="must hold a mapping"):
        cfg.read_file(tmp_path / "list.yaml")
    with pytest.raises(cfg.ConfigError, match="Cannot read the config file"):
        cfg.read_file(tmp_path / "missing.yaml")


def test_differences_name_dotted_fields():
    a, b = Run(), Run(model=ClassifierConfig(num_layers=6), data=Data("sst2"))
    assert cfg.differences(a, b) == ["data.dataset: None -> 'sst2'", "model.num_layers: 2 -> 6"]
    assert cfg.differences(a, b, skip=("data.dataset",)) == ["model.num_layers: 2 -> 6"]


def test_field_rows_flatten_sections_with_notes():
    rows = {name: (kind, default, note) for name, kind, default, note in cfg.field_rows(Run())}
    assert rows["model.num_layers"][:2] == ("int", 2)
    assert "head and tail" in rows["model.max_length"][2]
    assert rows["data.classes"][0] == "tuple[str, ...] | None"
