"""A run's record (config.json) as its typed config, and a run's config made from its sources.

config.json holds `format`, `recipe`, the typed config's sections (data, model, train, setup) and `derived`:
what the run found out rather than was told (class names, the files' digest, replicas, the strategy's
class). `from_record` gives a run's record back as its typed config (through RunDir.read_record), and
`source_layer` reads a config given as a file, a mapping or a typed object (zoo.training.run_settings.resolve
layers them). Nothing else reads config.json's sections by name.
"""

import dataclasses
import os

from zoo.core import config as cfg

FORMAT = 2
RECORD_KEYS = ("format", "recipe", "derived")  # config.json's keys that are not config sections


@dataclasses.dataclass(frozen=True)
class Record:
    """A run's record read back: its typed config and what it derived."""

    recipe: str
    config: object
    derived: dict
    fields: frozenset  # the dotted fields the record holds: a format-1 record lacks some, which hold defaults


def as_record(recipe, config, derived):
    """config.json's contents for `config` (a recipe's typed config) and `derived`."""
    return {"format": FORMAT, "recipe": recipe, **cfg.to_dict(config), "derived": derived}


def from_record(data, recipe, cls, where):
    """The Record of config.json's contents `data` (read from `where`), typed as `cls`."""
    data = upgrade(data) if is_format_1(data) else data
    sections = as_layer(data, recipe, where)
    try:
        config = cfg.from_dict(cls, sections)
    except cfg.ConfigError as error:
        raise cfg.ConfigError(f"{where} does not hold a valid {recipe} config ({error}): it was written by another "
                              "version of the zoo, or edited; fix that field, or train again.") from None
    return Record(recipe, config, dict(data.get("derived") or {}), frozenset(dotted_names(sections)))


def dotted_names(tree, prefix=""):
    """The dotted names of the leaves of nested mappings."""
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from dotted_names(value, name)
        else:
            yield name


def is_format_1(data):
    """Whether `data` is a record written before records held typed configs: a recipe named, no format, no setup
    section, and the data settings at the top level."""
    return ("recipe" in data and "format" not in data and "setup" not in data
            and any(key in data for key in ("dataset", "corpus")))


def as_layer(data, recipe, where):
    """The config sections of a mapping given as a config (a file, a run's config.json, a dict): a record
    of another recipe is refused, and one written before records held typed configs is named as such."""
    if "recipe" in data and data["recipe"] != recipe:
        raise cfg.ConfigError(f"{where} is the record of a {data['recipe']!r} run, not of a {recipe!r} one.")
    if is_format_1(data):
        data = upgrade(data)
    if "format" in data and data["format"] != FORMAT:
        raise cfg.ConfigError(f"{where} was written by another zoo (config.json format {data['format']!r}; this zoo "
                              f"reads {FORMAT} and 1): train with the zoo that wrote it, or copy its fields into a "
                              "YAML file (docs/configuration.md).")
    return {key: value for key, value in data.items() if key not in RECORD_KEYS}


def upgrade(old):
    """A record of format 1 (before records held typed configs) as format 2: its data settings, spread over the
    record's top level, its files' columns and its "data" (which then held sizes and devices), gathered into the
    data section, init_from into setup, what the run derived into derived."""
    sizes, files = old.get("data") or {}, old.get("files") or {}
    data = {key: old[key] for key in ("dataset", "source", "target", "level", "corpus", "document_per_file",
                                      "eval_fraction", "text_column") if old.get(key) is not None}
    columns = files.get("columns") or {}
    data.update({f"{key}_column": columns[key] for key in ("text", "label") if key in columns})
    data.update({key: value for key, value in ((k, columns.get(k, sizes.get(k))) for k in ("bad_rows", "classes"))
                 if value is not None})
    if files.get("text_column"):
        data["text_column"] = files["text_column"]
    data.update({key: sizes[key] for key in ("max_examples", "random_offset") if sizes.get(key) is not None})
    derived = {key: sizes[key] for key in ("replicas", "strategy", "sequences", "segments_per_pass") if key in sizes}
    derived.update({key: old[key] for key in ("class_names", "example") if key in old})
    if files:
        derived["files"] = {key: files[key] for key in ("digest", "bad_rows_skipped") if key in files}
        # Files without {split} held out a share then too: 1 in 20 rows, or for a language model 1 in 20 lines.
        if "{split}" not in str(data.get("dataset", "{split}")):
            derived["held_out"] = "lines" if old["recipe"] == "lm" else True
    setup = {"init_from": old["init_from"]} if old.get("init_from") else {}
    return {"format": FORMAT, "recipe": old["recipe"], "data": data, "model": old.get("model") or {},
            "train": old.get("train") or {}, "setup": setup, "derived": derived}


def source_layer(source, recipe, cls):
    """A config source as a mapping: a path to a YAML or JSON file, a mapping, or a typed config of `cls`."""
    if source is None:
        return {}
    if isinstance(source, cls):
        return cfg.to_dict(source)
    if dataclasses.is_dataclass(source):
        raise cfg.ConfigError(f"config={type(source).__name__}(...) is not a {recipe} config: give a {cls.__name__}, "
                              "a mapping or a file.")
    if isinstance(source, (str, os.PathLike)):
        return as_layer(cfg.read_file(os.fspath(source)), recipe, os.fspath(source))
    if isinstance(source, dict):
        return as_layer(source, recipe, "the config given")
    raise cfg.ConfigError(f"config={source!r} must be a file path, a mapping or a {cls.__name__}.")
