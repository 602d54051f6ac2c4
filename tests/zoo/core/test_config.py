"""zoo.core.config: typed configs from files, dotted overrides and keywords, each error naming its field."""

import dataclasses
import json

import pytest

from zoo.core import config as cfg, strict_yaml
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


def test_a_key_given_twice_is_refused_naming_its_lines_where_yaml_would_keep_the_last(tmp_path):
    (tmp_path / "exp.yaml").write_text("train:\n  seed: 1\nmodel:\n  num_layers: 2\n  num_layers: 4\n")
    with pytest.raises(cfg.ConfigError, match=r"exp.yaml, line 5: 'num_layers' is given twice in one mapping "
                                              r"\(first at line 4\)"):
        cfg.read_file(tmp_path / "exp.yaml")
    (tmp_path / "run.json").write_text('{"train": {"seed": 1, "seed": 2}}')
    with pytest.raises(cfg.ConfigError, match=r"run.json, line 1: 'seed' is given twice"):
        cfg.read_file(tmp_path / "run.json")
    name, raw = cfg.parse_override("data.classes={a: 1, a: 2}")
    with pytest.raises(cfg.ConfigError, match="'a' is given twice"):
        cfg.from_dict(Run, cfg.nested({name: raw}))
    merged = strict_yaml.load("model:\n  <<: {num_layers: 2}\n  hidden_dim: 64\n", "merge")  # a merge key repeats none
    assert merged == {"model": {"num_layers": 2, "hidden_dim": 64}}


BOMB = "".join(f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


def test_an_alias_bomb_is_refused_at_once_in_a_short_message(tmp_path):
    """Billion laughs: nine levels of nine aliases hold 9**9 values, which a config's checks would walk and its
    error show (one line of 58 MB); it is refused before it is built."""
    import time

    (tmp_path / "bomb.yaml").write_text("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB +
                                        "data: {classes: *i}\n")
    start = time.perf_counter()
    with pytest.raises(cfg.ConfigError) as error:
        cfg.from_dict(Run, cfg.read_file(tmp_path / "bomb.yaml"))
    assert time.perf_counter() - start < 5 and len(str(error.value)) < 300
    assert f"{tmp_path / 'bomb.yaml'} expands to more than 100,000 values through its aliases" in str(error.value)
    (tmp_path / "loop.yaml").write_text("data: &d {classes: [*d]}\n")
    with pytest.raises(cfg.ConfigError, match="holds an alias inside the value it names"):
        cfg.read_file(tmp_path / "loop.yaml")
    (tmp_path / "fine.yaml").write_text("data: {classes: &c [neg, pos]}\nother: *c\n")  # aliases that stay small
    assert cfg.read_file(tmp_path / "fine.yaml")["other"] == ["neg", "pos"]


def test_a_long_value_is_shown_cut_short():
    with pytest.raises(cfg.ConfigError) as error:
        cfg.from_dict(Run, {"data": {"dataset": ["review"] * 100_000}})
    assert str(error.value).startswith("data.dataset=['review', 'review',") and len(str(error.value)) < 200


def test_a_file_that_is_not_utf8_is_named_with_the_line_of_its_first_bad_byte(tmp_path):
    (tmp_path / "latin1.yaml").write_bytes("train:\n  seed: 1\n  # café\n".encode("latin-1"))
    with pytest.raises(cfg.ConfigError, match=rf"^{tmp_path / 'latin1.yaml'} is not UTF-8 text: byte 0xe9 at line 3 "):
        cfg.read_file(tmp_path / "latin1.yaml")
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbftrain: {seed: 2}\n")  # UTF-8 with a BOM is UTF-8
    assert cfg.read_file(tmp_path / "bom.yaml") == {"train": {"seed": 2}}
