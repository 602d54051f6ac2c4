"""One trial of a sweep: an ordinary run folder (`<sweep_dir>/trial-007/`) trained and evaluated in this process
through the driver `zoo.train` and the recipes use, with the trial's point (its searched fields) over what every
trial shares (`Fixed`), and its outcome: the metric, the steps reached, the wall time, or the one line of the
error that ended it. Also the check of a space against the typed config before any trial (`check`), and of
what every trial shares by preparing the first one's run without training it (`prepare_first`)."""

import contextlib
import dataclasses
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping

from zoo.core import config as cfg
from zoo.runs import checkpoints
from zoo.sweeps import metrics, space as spaces
from zoo.sweeps.metrics import shown
from zoo.training import driver, run_settings
from zoo.training.distribute import make_strategy

MODE = "train_and_eval"  # a trial evaluates: the metric is the evaluation's
DEVICES = ("setup.strategy", "setup.cpu_replicas", "setup.tpu")  # the machine's, not hyper-parameters
ERROR_CHARACTERS = 300  # of a failed trial's one line
MANY = 1000  # points whose configs take a few seconds to check (about 1.5 ms each): said before it starts


@dataclasses.dataclass(frozen=True)
class Fixed:
    """What every trial of a sweep shares: the recipe (a zoo.training.driver.Recipe) and its config's sources
    (preset < config < overrides < the shortcuts `given`, as zoo.train takes them), and --epochs."""

    recipe: object
    preset: str | None = None
    config: object = None
    overrides: tuple = ()
    given: Mapping = dataclasses.field(default_factory=dict)
    epochs: float | None = None

    def settings(self, point, model_dir=None):
        """The RunSettings of the trial at `point` ({field: value}) trained in `model_dir`."""
        return driver.settings(self.recipe, MODE, model_dir, preset=self.preset, config=self.config,
                               overrides=[*self.overrides, *point.items()], given=self.given, epochs=self.epochs)

    def fields(self):
        """{dotted field: how it is given} of the overrides and shortcuts: a searched field may be neither."""
        names = run_settings.training_shortcuts(self.recipe)  # each shortcut is one field
        given = {names[name]: f"--{name}" for name in self.given if name in names}
        for item in self.overrides:
            name = cfg.parse_override(item)[0] if isinstance(item, str) else item[0]
            given[name] = f"--config.{name}"
        return given

    def record(self, config, space):
        """What the sweep's trials share, for its identity: the resolved config less the searched fields and the
        reason of its dtype (said per machine), and the epochs."""
        shared = cfg.to_dict(config)
        for name in [*space.fields, "train.precision_reason"]:
            *path, last = name.split(".")
            section = shared
            for part in path:
                section = section.get(part, {})
            section.pop(last, None)
        return {"recipe": self.recipe.name, "config": shared, "epochs": self.epochs}


def check(fixed, space, where):
    """The space typed by the recipe's config and checked before anything is written: its fields not given by a
    flag or override, each value alone, every corner (a grid's every point), the metric against each corner's run
    (all of one kind), and the first point's run prepared (`prepare_first`). Returns (the typed space, the settings
    of its first point); raises a ConfigError naming the field."""
    fixed_fields = fixed.fields()
    for name in space.fields:
        if name in fixed_fields:
            raise spaces.SpaceError(f"{name} is searched by {where} and set by {fixed_fields[name]} too: leave one "
                                    "out.")
        if name in DEVICES:
            raise spaces.SpaceError(f"{where}: {name} sets the devices, not a hyper-parameter: give it as a flag.")
    space = spaces.with_types(space, fixed.recipe.config_class)
    single = [{name: value} for name, values in space.edges().items() for value in values]
    for point in single:  # an unknown field or a wrong value named alone, before any combination
        _settings(fixed, point, where)
    first, kinds, corners = None, [], space.corners()
    if len(corners) > MANY:
        print(f"Checking the configs of the {len(corners):,} points before any trial ...", file=sys.stderr, flush=True)
    for point in corners:
        settings = _settings(fixed, point, where, combined=len(point) > 1)
        metrics.check_trial(fixed.recipe, space.metric, settings.config, point)
        kinds.append(settings.config)
        first = first or settings
    metrics.check_kinds(fixed.recipe, space.metric, kinds)
    if first.config.setup.strategy == "multi_worker_mirrored":
        raise spaces.SpaceError("setup.strategy=multi_worker_mirrored: each worker of a sweep trains trials of its "
                                "own; give mirrored (every device of this machine) and start one sweep worker per "
                                "machine (docs/sweep.md).")
    point = {name: values[0] for name, values in space.edges().items()}  # a grid's first point too
    metrics.check_trial(fixed.recipe, space.metric, prepare_first(fixed, point, where), point)  # an LM's level known
    return space, first


def prepare_first(fixed, point, where):
    """The config of the trial at `point` as its run prepares it (zoo.training.driver.prepare: its data read, its
    tokenizer or vocabulary made, its tokens cached, its batches planned), in a folder of its own, removed after,
    and not trained. What only the data can refuse (a vocab_size above what the text makes, a missing column ...),
    shared by every trial, is refused now in the run's own words, before the sweep folder gets a file. The token
    cache keeps the tokens for the trial that trains on them. Its lines go to stderr: stdout is the trials'."""
    print(f"Preparing a trial's data and tokenizer ({shown(point)}) to check what every trial shares ...",
          file=sys.stderr, flush=True)
    folder = tempfile.mkdtemp(prefix="zoo-sweep-check-")
    try:
        settings = fixed.settings(point, folder)
        setup = settings.config.setup
        with contextlib.redirect_stdout(sys.stderr):
            return driver.prepare(fixed.recipe, settings, make_strategy(setup.strategy, setup.cpu_replicas,
                                                                        setup.tpu)).config
    except (ValueError, OSError) as error:  # what a run refuses in one line (recipes.driver)
        raise cfg.ConfigError(f"{where}: the trial at {shown(point)} cannot train, nor can any trial that shares "
                              f"its settings: {error}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _settings(fixed, point, where, combined=False):
    try:
        return fixed.settings(point)
    except cfg.ConfigError as error:
        at = f" (at the point {shown(point)})" if combined else ""
        raise cfg.ConfigError(f"{where}: {error}{at}") from None
    except ValueError as error:
        raise cfg.ConfigError(f"{where}: {shown(point)}: {error}") from None


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a trial ended: its metric (None when it failed), the steps its checkpoints reached, the wall seconds of
    this attempt and, when it failed, the one line of its error."""

    value: float | None
    steps: int
    seconds: float
    error: str | None = None


def run(fixed, point, folder, metric):
    """Trains and evaluates the trial at `point` in the run folder `folder` (resuming from its checkpoints), and
    reads `metric` from its metrics.json. Any error is the trial's (its Outcome's line): the sweep goes on. A stop
    asked for (SIGTERM, Ctrl-C: zoo.training.stopping.Stopped, KeyboardInterrupt) is the sweep's, and goes up."""
    began = time.time()
    try:
        settings = fixed.settings(point, folder)
        driver.run(fixed.recipe, settings)
        value = metrics.read(fixed.recipe, metric, settings.folder.read_metrics())
        return Outcome(value, steps_of(folder), time.time() - began)
    except Exception as error:  # noqa: BLE001 - a failed trial is recorded, whatever failed
        return Outcome(None, steps_of(folder), time.time() - began, error_line(error))


def steps_of(folder):
    return max(checkpoints.checkpoint_steps(folder), default=0)


def error_line(error):
    """An error as one line: its type and the first line of its message, cut short."""
    text = " ".join(str(error).strip().splitlines()[:1])
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= ERROR_CHARACTERS else line[:ERROR_CHARACTERS - 3] + "..."
