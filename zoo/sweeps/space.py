"""The space file of a hyper-parameter search (docs/sweep.md): how to search (grid, random or bayesian), the figure
to optimize, and, for each dotted config field searched, its values (a list) or its range.

    method: grid                    # grid | random | bayesian
    metric: validation.accuracy     # SPLIT.FIGURE of metrics.json (zoo.sweeps.metrics); goal from its kind
    max_trials: 12                  # random / bayesian (a grid runs every point)
    space:
      train.learning_rate: [1.0e-4, 2.0e-4, 5.0e-4]
      train.warmup_steps: {min: 0, max: 800, step: 200}
      train.weight_decay: {min: 1.0e-5, max: 1.0e-1, scale: log}

Read strictly (zoo.core.strict_yaml: a key given twice is refused, not kept last) and checked here for what the
file alone can say: the keys, an empty list, min above max, a log scale from 0, a search of more than MAX_TRIALS
trials (a grid's points counted, not built). Whether each value suits its field is the config's to say
(zoo.sweeps.trials.check), with the recipe known.
"""

import dataclasses
import itertools
import math
import re
from collections.abc import Mapping

from zoo.core import config as cfg
from zoo.sweeps import metrics

METHODS = ("grid", "random", "bayesian")
GOALS = ("max", "min")
KEYS = ("method", "metric", "goal", "max_trials", "seed", "space")
RANGE_KEYS = ("min", "max", "step", "scale")
SCALES = ("linear", "log")
EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
MAX_CHECKED = 4096  # points whose configs are built before a random or bayesian search (else each value alone)
# The most trials a sweep runs: a grid's points, or max_trials. Each trial is a whole training run, and a grid's every
# point is built as a config before the first trial (about 1 ms each): more is surely a mistyped step or list.
MAX_TRIALS = 10_000
SPACE_FILE_HOLDS = "a mapping of a space file's keys (method:, metric:, space: ...; docs/sweep.md)"
NUMBERS = {int: int, int | None: int, float: float, float | None: float}  # a field's type as written -> its number


class SpaceError(cfg.ConfigError):
    """A space file that cannot be searched; the message names the key or the field."""


@dataclasses.dataclass(frozen=True)
class Range:
    """A field's range: `low` to `high` (both included), every `step` (None: any value between), on a log scale
    or not. Whole numbers or not as the field's type says (`whole`, set once the field is known)."""

    low: float
    high: float
    step: float | None = None
    log: bool = False
    whole: bool = False

    def count(self):
        """How many values a grid takes (`grid`), counted without making them: math.inf past what a float counts."""
        span = (self.high - self.low) / self.step
        return math.floor(span + 1e-9) + 1 if span < 2 ** 52 else math.inf

    def grid(self):
        """The values a grid takes: low, low + step ... up to high."""
        values = [self.low + k * self.step for k in range(self.count())]
        return [int(round(v)) for v in values] if self.whole else [round(v, 12) for v in values]

    def ends(self):
        return [int(v) for v in (self.low, self.high)] if self.whole else [float(self.low), float(self.high)]

    def as_data(self):
        data = {"min": self.low, "max": self.high}
        if self.step is not None:
            data["step"] = self.step
        if self.log:
            data["scale"] = "log"
        return data


@dataclasses.dataclass(frozen=True)
class Space:
    """A space file, read: `fields` maps each dotted field to its values (a tuple) or its Range, in file order."""

    method: str
    metric: str
    goal: str
    max_trials: int | None
    seed: int
    fields: Mapping

    @property
    def trials(self):
        """How many trials the search runs: every point of a grid (counted, not made), else max_trials."""
        return math.prod(self.sizes()) if self.method == "grid" else self.max_trials

    def sizes(self):
        """How many values each field takes in a grid."""
        return [len(values) if isinstance(values, tuple) else values.count() for values in self.fields.values()]

    def points(self):
        """A grid's points, each {field: value}, the first field varying slowest."""
        choices = [values if isinstance(values, tuple) else tuple(values.grid()) for values in self.fields.values()]
        return [dict(zip(self.fields, combination)) for combination in itertools.product(*choices)]

    def corners(self):
        """The points whose configs are built before any trial: a grid's, else every list value and every range's
        two ends against each other (each value alone when there are more than MAX_CHECKED of those)."""
        if self.method == "grid":
            return self.points()
        choices = self.edges()
        if math.prod(len(values) for values in choices.values()) > MAX_CHECKED:
            return [{name: value} for name, values in choices.items() for value in values]
        return [dict(zip(choices, combination)) for combination in itertools.product(*choices.values())]

    def edges(self):
        """{field: its list's values, or its range's two ends}."""
        return {name: values if isinstance(values, tuple) else values.ends() for name, values in self.fields.items()}

    def as_data(self):
        """The space as a space file holds it (sweep_dir/space.yaml, and the study's record of it)."""
        data = {"method": self.method, "metric": self.metric, "goal": self.goal}
        if self.max_trials is not None:
            data["max_trials"] = self.max_trials
        if self.method != "grid":
            data["seed"] = self.seed
        data["space"] = {name: list(values) if isinstance(values, tuple) else values.as_data()
                         for name, values in self.fields.items()}
        return data


def read(source, recipe):
    """The Space of `source` (a space file's path, or its mapping) for a sweep of `recipe` runs (a
    zoo.training.driver.Recipe, or its name in zoo.registry)."""
    where = "the space" if isinstance(source, Mapping) else str(source)
    if isinstance(recipe, str):
        from zoo.registry import RECIPES

        recipe = RECIPES[recipe]
    if isinstance(source, Mapping):
        data = dict(source)
    elif not (data := cfg.read_file(source, SPACE_FILE_HOLDS)):  # strict: UTF-8, a key twice refused, aliases bounded
        raise SpaceError(f"{source} is empty: a space file holds method, metric and space (docs/sweep.md).")
    unknown = [key for key in data if key not in KEYS]
    if unknown:
        raise SpaceError(f"{where}: {unknown[0]!r} is not a key of a space file: it holds {', '.join(KEYS)}.")
    method = data.get("method")
    if method not in METHODS:
        raise SpaceError(f"{where}: method={method!r} must be one of {', '.join(METHODS)}.")
    if "metric" not in data:
        raise SpaceError(f"{where}: no metric: name the figure to optimize, e.g. metric: "
                         f"{metrics.example(recipe)} ({recipe.name} runs write {', '.join(metrics.names(recipe))}).")
    metric = metrics.check(recipe, data["metric"], where)
    goal = data["goal"] if "goal" in data else metrics.goal(metric)
    if goal not in GOALS:
        raise SpaceError(f"{where}: goal={goal!r} must be max or min.")
    fields = _fields(data.get("space"), where)
    max_trials = _whole(data, "max_trials", where)
    seed = _whole(data, "seed", where, 0) or 0
    if method != "grid" and max_trials is None:
        raise SpaceError(f"{where}: a {method} search needs max_trials (how many trials to run).")
    space = Space(method, metric, goal, max_trials, seed, fields)
    if method == "grid":
        for name, values in fields.items():
            if isinstance(values, Range) and values.step is None:
                raise SpaceError(f"{where}: {name}: a grid takes a list of values or a range with a step, not "
                                 f"{values.as_data()}.")
        check_size(space, where)
        if max_trials is not None and max_trials < space.trials:
            raise SpaceError(f"{where}: max_trials={max_trials} is less than the grid's {space.trials} points, and a "
                             "grid runs every point: leave max_trials out, or give fewer values.")
    elif max_trials > MAX_TRIALS:
        raise SpaceError(f"{where}: max_trials={max_trials:,} is more than the {MAX_TRIALS:,} trials a sweep runs, "
                         "each a training run: give fewer.")
    return space


def check_size(space, where):
    """Refuses a grid of more than MAX_TRIALS points, counted from each field's size (no point is made)."""
    sizes = space.sizes()
    total = math.prod(sizes)
    if total > MAX_TRIALS:
        counted = "more points than can be counted" if total == math.inf else f"{total:,} points"
        shape = " x ".join("past counting" if size == math.inf else f"{size:,}" for size in sizes)
        raise SpaceError(f"{where}: the grid has {counted} (its fields' values: {shape}), more than the "
                         f"{MAX_TRIALS:,} trials a sweep runs, each a training run: give fewer values or a larger "
                         "step, or draw max_trials points of it with method: random.")


def _whole(data, key, where, low=1):
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SpaceError(f"{where}: {key}={value!r} must be a whole number, at least {low}.")
    return value


def _fields(space, where):
    if not isinstance(space, Mapping) or not space:
        raise SpaceError(f"{where}: space must map each searched field to its values, e.g. space: "
                         "{train.learning_rate: [1.0e-4, 5.0e-4]}; it holds "
                         f"{'nothing' if not space else type(space).__name__}.")
    fields = {}
    for name, values in space.items():
        if not isinstance(name, str) or "." not in name:
            raise SpaceError(f"{where}: {name!r} is not a dotted config field (e.g. model.dropout).")
        if isinstance(values, list):
            fields[name] = _values(name, values, where)
        elif isinstance(values, Mapping):
            fields[name] = _range(name, values, where)
        else:
            raise SpaceError(f"{where}: {name}: give a list of values ([0.1, 0.3]) or a range ({{min: 0, max: 800, "
                             f"step: 200}}), not {values!r}.")
    return fields


def _values(name, values, where):
    if not values:
        raise SpaceError(f"{where}: {name} has an empty list of values: give at least one.")
    for value in values:
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise SpaceError(f"{where}: {name}: {value!r} is not one value (a number, a string, true/false or null).")
        if isinstance(value, float) and not math.isfinite(value):
            raise SpaceError(f"{where}: {name}: {value} is not a finite number.")
    values = [_finite_text(value) for value in values]
    seen = set()
    for value in values:
        key = (type(value), value)
        if key in seen:
            raise SpaceError(f"{where}: {name} lists {value!r} twice: give each value once.")
        seen.add(key)
    return tuple(values)


def _range(name, values, where):
    unknown = [key for key in values if key not in RANGE_KEYS]
    if unknown:
        raise SpaceError(f"{where}: {name}: {unknown[0]!r} is not a key of a range: it holds min, max, and step or "
                         "scale (linear or log).")
    if "min" not in values or "max" not in values:
        raise SpaceError(f"{where}: {name}: a range needs min and max.")
    low, high = (_finite(name, key, values[key], where) for key in ("min", "max"))
    step = None if values.get("step") is None else _finite(name, "step", values["step"], where)
    scale = values.get("scale", "linear")
    if low > high:
        raise SpaceError(f"{where}: {name}: min={low} is above max={high}.")
    if scale not in SCALES:
        raise SpaceError(f"{where}: {name}: scale={scale!r} must be linear or log.")
    if step is not None and step <= 0:
        raise SpaceError(f"{where}: {name}: step={step} must be above 0.")
    if scale == "log" and low <= 0:
        raise SpaceError(f"{where}: {name}: a log scale needs min above 0, not min={low}.")
    if scale == "log" and step is not None:
        raise SpaceError(f"{where}: {name}: a log scale takes no step (a grid gives its values as a list).")
    return Range(low, high, step, scale == "log")


def _finite_text(value):
    """A number YAML 1.1 reads as a string (1e-4: an exponent without a dot) as the float it means."""
    return float(value) if isinstance(value, str) and EXPONENT.fullmatch(value.strip()) else value


def _finite(name, key, value, where):
    value = _finite_text(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpaceError(f"{where}: {name}: {key}={value!r} must be a finite number.")
    return value


def with_types(space, config_class):
    """`space` with each range typed by its field in `config_class` (the recipe's run config): whole numbers for
    an int field (its ends and step whole too), any number for a float field; a range of another field is
    refused. Fields unknown to the config are left to its own check (zoo.sweeps.trials.check), which names them."""
    fields = {}
    for name, values in space.fields.items():
        try:
            kind = cfg.field_type(config_class, name)[1]
        except cfg.ConfigError:  # an unknown field is the config's to name, with the nearest valid names
            kind = None
        if isinstance(values, Range) and kind is not None:
            if kind not in NUMBERS:
                raise SpaceError(f"{name} is not a number field ({getattr(kind, '__name__', kind)}): give its values "
                                 "as a list.")
            kind = NUMBERS[kind]
            if kind is int:
                for key, value in (("min", values.low), ("max", values.high), ("step", values.step)):
                    if value is not None and float(value) != int(value):
                        raise SpaceError(f"{name} holds whole numbers: its range's {key}={value} must be one too.")
            values = dataclasses.replace(values, whole=kind is int)
        fields[name] = values
    return dataclasses.replace(space, fields=fields)

