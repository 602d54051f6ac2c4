"""A recipe's shortcut flags, made from its typed config: each is another name of exactly one dotted field
(zoo.training.run_settings.shortcuts: the shared SHORTCUTS its config has, and the recipe's own), so a field means
the same from a flag, a config file, a dotted override, zoo.train's keyword and a sweep's space.

A flag takes its field's type (int, float, str, bool, a comma-separated list for a tuple) or, for a field whose
class names its values in `CHOICES`, an enum of that very list; its help is the field's dotted name, its note and
the recipe's default. Its default is None, meaning "the config's": a flag not given sets nothing. No flag has
bounds of its own: the config's checks refuse a bad value, naming the dotted field (one `error:` line, exit status
2), whichever way it was given.
"""

import types
import typing

from absl import flags

from zoo.core import config as cfg
from zoo.training import run_settings

# What a recipe's default config holds for each of its shortcuts (`define`): the default its help shows.
DEFAULTS = {}


def define(recipe, flag_values=flags.FLAGS):
    """Defines the shortcut flags of `recipe` (a zoo.training.driver.Recipe); its default config (the small
    preset's, with the recipe's training defaults) is the one the help shows."""
    defaults = recipe.base(None, None, None)
    for name, field in run_settings.shortcuts(recipe).items():
        owner, kind = cfg.field_type(recipe.config_class, field)
        leaf = field.rpartition(".")[2]
        value = run_settings.UNSET.get(field, value_of(defaults, field))
        DEFAULTS[name] = value
        note = cfg.field_notes(owner).get(leaf) or "see docs/configuration.md"
        help_text = f"{field}: {note} (default: {shown(value)})"
        definer(kind, getattr(owner, "CHOICES", {}).get(leaf))(name, help_text, flag_values)


def definer(kind, choices):
    """(name, help, flag_values) -> the absl flag of a field of type `kind` (None allowed or not), default None."""
    kind = plain(kind)
    if choices is not None:
        return lambda name, text, values: flags.DEFINE_enum(name, None, list(choices), text, flag_values=values)
    if typing.get_origin(kind) is tuple:
        return lambda name, text, values: flags.DEFINE_list(name, None, text, flag_values=values)
    define_flag = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
                   str: flags.DEFINE_string}.get(kind)
    if define_flag is None:
        raise TypeError(f"A shortcut flag cannot be made for a field of type {kind}.")
    return lambda name, text, values: define_flag(name, None, text, flag_values=values)


def plain(kind):
    """`kind` without None (int | None -> int)."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        (kind,) = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    return kind


def value_of(config, field):
    """The value of the dotted `field` of a typed config."""
    for part in field.split("."):
        config = getattr(config, part)
    return config


def shown(value):
    """A default as the help shows it: a list comma-separated, as the flag takes it."""
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "none"
    return value
