"""Typed configs from plain data: a recipe's frozen, nested dataclasses made from a YAML or JSON file (read by
zoo.core.strict_yaml), dotted overrides (`model.num_layers=6`) and Python keywords, checked field by field, and
written back; zoo.training.run_settings.resolve applies their precedence.

Every error names the dotted field (`model.num_heads=5 does not divide model.hidden_dim=384`), an unknown field
the nearest valid names. An override's value is one YAML scalar or list (`true`, `6`, `1e-4`, `null`, `[11, 20]`),
but a string field takes the text as written (`--config.data.target=no` is Norwegian). docs/configuration.md says
why this module, not ml_collections' `config_flags`.
"""

import dataclasses
import difflib
import inspect
import math
import re
import reprlib
import types
import typing

import yaml

from zoo.core import strict_yaml

MAX_FILE_BYTES = 4 << 20  # a config file's size: a run's config.json is a few kB


class ConfigError(ValueError):
    """A config field that is unknown, of the wrong type or out of range; the message names it."""


def to_dict(config):
    """The config as plain data (nested dicts, lists for tuples): what config.json and --mode=config hold."""
    return _plain(dataclasses.asdict(config))


def _plain(value):
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def to_yaml(config):
    return yaml.safe_dump(to_dict(config), sort_keys=False, default_flow_style=False, width=100)


def from_dict(cls, data, prefix=""):
    """An instance of the dataclass `cls` from `data` (a mapping holding any subset of its fields; the others
    keep their defaults), nested dataclasses from nested mappings, each value checked against its field's type
    and the class's own checks (__post_init__) named by dotted field."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'the config'} must be a mapping of fields, not {_show(data)}.")
    fields = {field.name: field for field in dataclasses.fields(cls) if field.init}
    hints = typing.get_type_hints(cls)
    unknown = [name for name in data if name not in fields]
    if unknown:
        raise ConfigError(_unknown(prefix, unknown[0], fields))
    values = {name: _value(hints[name], data[name], _join(prefix, name)) for name in data}
    try:
        return cls(**values)
    except ConfigError:
        raise
    except (ValueError, TypeError) as error:
        raise ConfigError(_named(str(error), prefix, fields)) from None


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix else name


def _unknown(prefix, name, fields):
    near = difflib.get_close_matches(str(name), list(fields), n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(_join(prefix, n) for n in near)}? " if near else ""
    return (f"{_join(prefix, name)} is not a config field: {hint}the fields of {prefix or 'the config'} are "
            f"{', '.join(fields)}.")


def _named(message, prefix, fields):
    """A class's own check's message with its field names made dotted (`hidden_dim=` -> `model.hidden_dim=`, and a
    nested section's `encoder.vocab_size=` -> `model.encoder.vocab_size=`)."""
    if not prefix:
        return message
    pattern = r"(?<![\w.])(" + "|".join(map(re.escape, fields)) + r")(?==|\.[\w.]+=)"
    return re.sub(pattern, lambda m: f"{prefix}.{m.group(1)}", message)


_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 60
_BRIEF.maxlist = _BRIEF.maxtuple = _BRIEF.maxdict = 6
_BRIEF.maxlevel = 2


def _show(value):
    """A value as an error shows it: its repr, cut short (an error message stays one readable line)."""
    return f"{_BRIEF.repr(value)} ({type(value).__name__})"


class Raw(str):
    """An override's value as typed on the command line, read by its field's type (`_value`)."""


def _value(kind, value, name):
    """`value` as a field of type `kind`, or ConfigError naming `name`."""
    if isinstance(value, Raw):
        value = _raw(kind, value, name)
    if dataclasses.is_dataclass(kind):
        return from_dict(kind, value, name)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [arg for arg in args if arg is not type(None)]
        if len(options) == 1:
            return _value(options[0], value, name)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name}={_show(value)} must be a list.")
        items = args if args and args[-1] is not Ellipsis else (args[0] if args else typing.Any,) * len(value)
        if len(items) != len(value):
            raise ConfigError(f"{name}={_BRIEF.repr(list(value))} must hold {len(items)} values.")
        return tuple(_value(item, v, f"{name}[{i}]") for i, (item, v) in enumerate(zip(items, value)))
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{name}={_show(value)} must be true or false.")
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if not -2**63 <= value < 2**63:  # what TensorFlow's and NumPy's integers hold
                raise ConfigError(f"{name}={value} is out of range: a whole number of the config fits 64 bits "
                                  "(-2**63 .. 2**63-1).")
            return value
        raise ConfigError(f"{name}={_show(value)} must be a whole number.")
    if kind is float:
        return _float(value, name)
    if kind is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):  # a label or column named by a number
            return str(value)
        raise ConfigError(f"{name}={_show(value)} must be a string.")
    return value


def _raw(kind, text, name):
    """An override's text as YAML reads it, but as written for a string field (YAML 1.1 would make `no` false)."""
    options = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    stringly = kind is str or (typing.get_origin(kind) in (typing.Union, types.UnionType) and options == [str])
    if stringly and text.strip() not in ("null", "~", ""):
        return str(text)
    try:
        return strict_yaml.load(text, f"{name}={_BRIEF.repr(str(text))}") if text.strip() else ""
    except strict_yaml.Refused as error:
        raise ConfigError(str(error)) from None
    except yaml.YAMLError:
        return str(text)  # a string YAML would not read (e.g. 'a: b'): the field's type decides


def _float(value, name):
    if isinstance(value, str):  # YAML 1.1 reads 1e-4 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} must be a number.") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name}={_show(value)} must be a number.")
    if not math.isfinite(value):
        raise ConfigError(f"{name}={value} must be a finite number.")
    return float(value)


def read_file(path, holds="a mapping of fields (data:, model:, train:, setup:)"):
    """The mapping a YAML or JSON config file holds (UTF-8, at most MAX_FILE_BYTES); `holds` says what it must hold
    (a sweep's space file reads as a config file does)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"Cannot read the config file {path} ({error.strerror}): give a YAML or JSON file.") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_FILE_BYTES >> 20} MB, too large for a config file (a run's "
                          "config.json is a few kB): give a YAML or JSON file of config fields.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ConfigError(f"{path} is not UTF-8 text: byte 0x{data[error.start]:02x} at line {line} (offset "
                          f"{error.start}) is not UTF-8. Save the file as UTF-8.") from None
    try:
        data = strict_yaml.load(text, str(path))
    except strict_yaml.Refused as error:
        raise ConfigError(str(error)) from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}" if where else ""
        raise ConfigError(f"{path} is not valid YAML or JSON{at}: {getattr(error, 'problem', error)}.") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold {holds}, not {type(data).__name__}.")
    return data


def parse_override(text):
    """'model.num_layers=6' -> ('model.num_layers', Raw('6')): the value read by its field's type (`_value`)."""
    name, equals, raw = text.partition("=")
    if not equals or not name or any(not part for part in name.split(".")):
        raise ConfigError(f"--config.{text} must be --config.FIELD.PATH=VALUE, e.g. --config.model.num_layers=6.")
    return name, Raw(raw)


def nested(overrides):
    """{'model.num_layers': 6} -> {'model': {'num_layers': 6}}."""
    tree = {}
    for name, value in overrides.items():
        *path, last = name.split(".")
        node = tree
        for part in path:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{name} and {part} are both set: {part} is a field, not a section.")
            node = child
        node[last] = value
    return tree


def merge(*layers):
    """Mappings merged in order, later ones winning, section by section."""
    result = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            if isinstance(value, dict) and isinstance(result.get(key), dict):
                result[key] = merge(result[key], value)
            else:
                result[key] = value
    return result


def field_type(cls, dotted):
    """(the class holding it, its type) of the field `dotted` ('model.encoder.vocab_size') of the config class `cls`
    (its type as written, e.g. int | None); ConfigError if `cls` has no such field."""
    *sections, name = dotted.split(".")
    for section in sections:
        cls = typing.get_type_hints(cls).get(section) if dataclasses.is_dataclass(cls) else None
    fields = {field.name for field in dataclasses.fields(cls) if field.init} if dataclasses.is_dataclass(cls) else ()
    if name not in fields:
        raise ConfigError(f"{dotted} is not a config field.")
    return cls, typing.get_type_hints(cls)[name]


def follow(cls, asked):
    """`asked` (nested fields, as `merge` gives) with each field of `cls.FOLLOWS` ({dotted field: the dotted field
    whose value it takes unless set}) that is not asked for set to the one it follows, where that one is: the
    base's value of a follower (a preset's sequence_length, equal to its max_length) would otherwise stay."""
    for follower, leader in getattr(cls, "FOLLOWS", {}).items():
        found, value = _lookup(asked, leader)
        if found and not _lookup(asked, follower)[0]:
            asked = merge(asked, nested({follower: value}))
    return asked


def _lookup(tree, dotted):
    """(whether the nested mapping `tree` holds the field `dotted`, its value)."""
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return False, None
        tree = tree[part]
    return True, tree


def preset(cls, presets, name, **sections):
    """`cls` with the model of `presets[name]` and the other sections given (a recipe's base), or ConfigError."""
    if name not in presets:
        raise ConfigError(f"Unknown preset {name!r}: use one of {', '.join(presets)}.")
    return cls(model=presets[name], **sections)


def differences(before, after, skip=()):
    """'field: before -> after' for every dotted field where two configs (or their dicts) differ, less `skip`."""
    before, after = (config if isinstance(config, dict) else to_dict(config) for config in (before, after))
    return [f"{name}: {before_value!r} -> {after_value!r}"
            for name, before_value, after_value in _pairs(before, after, "") if name not in skip]


def _pairs(before, after, prefix):
    for key in list(before) + [k for k in after if k not in before]:
        name, a, b = _join(prefix, key), before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            yield from _pairs(a, b, name)
        elif a != b:
            yield name, a, b


def field_rows(config, prefix=""):
    """(dotted name, type, default, note) of every field of the config instance `config` (a recipe's defaults),
    nested sections flattened: the table of docs/configuration.md."""
    hints, notes = typing.get_type_hints(type(config)), field_notes(type(config))
    rows = []
    for field in dataclasses.fields(config):
        value, name = getattr(config, field.name), _join(prefix, field.name)
        if dataclasses.is_dataclass(value):
            rows += field_rows(value, name)
        elif field.init:
            rows.append((name, _type_name(hints[field.name]), value, notes.get(field.name, "")))
    return rows


def _type_name(kind):
    text = getattr(kind, "__name__", None) if typing.get_origin(kind) is None else None
    return text or str(kind).replace("typing.", "")


def field_notes(cls):
    """The trailing comment of each field in the class's source (`name: type = default  # note`)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    matches = (re.match(r"\s+(\w+): [^#]+#\s*(.+)$", line) for line in source.splitlines())
    return {match.group(1): match.group(2).strip() for match in matches if match}
