"""A sweep's state: its Optuna study, in a journal file in the sweep folder (`study.journal`, Optuna's
JournalFileBackend, which several processes and, on a shared file system, several machines append to under
its own lock) or in the database `--storage` names (an RDB URL: sqlite:///..., postgresql://...). The study's
name is the one the folder's record holds (zoo.sweeps.folder), so a copied folder continues its own study.

Every trial is in the study from the start, enqueued: a grid's points and a random search's draws (`draws`) with
their values, a bayesian search's trials empty, given their values by Optuna's TPESampler as they start. Only
Optuna's public API is used: a worker takes the next waiting trial with `Study.ask` (zoo.sweeps.claims) and ends
it with `Study.tell(number, ...)`; no search runs more trials than enqueued, since a worker asks only while a trial
waits, under the sweep folder's lock. A failed trial is run again (--retry_failed) as a trial enqueued with its
values for its own folder (the user attribute `folder`): a finished Optuna trial cannot be reopened.
"""

import dataclasses
import math
import os
import warnings

import numpy as np

from zoo.core import config as cfg
from zoo.sweeps import folder as folders, journal
from zoo.sweeps.journal import optuna_module

JOURNAL = folders.JOURNAL
STARTUP_SHARE = 3  # a bayesian search samples its first max_trials // STARTUP_SHARE trials at random (2 .. 10)
OUTCOME = "outcome-"  # the study's user attribute `outcome-N`: Optuna trial N's steps, seconds and error


def trial_name(number):
    return f"trial-{number:03d}"


def folder_of(trial):
    """The trial folder of an Optuna trial (a FrozenTrial or the Trial of `ask`): its own number's, or the one
    it was enqueued again for."""
    return trial.user_attrs.get("folder") or trial_name(trial.number)


def values_of(trial):
    """{field: value} of an Optuna trial: those Optuna drew, and those it was enqueued with (a waiting trial's)."""
    return {**trial.system_attrs.get("fixed_params", {}), **trial.params}


def connect(sweep_dir, storage=None):
    """The study's storage: the journal file `storage` names (default sweep_dir/study.journal, checked and a cut
    last line set aside: zoo.sweeps.journal), or the database of an RDB URL."""
    optuna = optuna_module()
    if storage and "://" in storage:
        try:
            return optuna.storages.RDBStorage(storage)
        except Exception as error:  # noqa: BLE001 - SQLAlchemy's, or the driver's: the URL is the user's to fix
            raise ValueError(f"--storage={storage} cannot be opened ({type(error).__name__}: "
                             f"{str(error).splitlines()[0] if str(error) else ''}): give an RDB URL such as "
                             "sqlite:///sweeps/a.db or postgresql://user@host/db, or a journal file's path.") from None
    path = storage or os.path.join(sweep_dir, JOURNAL)
    journal.check(path, "--storage")
    return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A sweep's study: the sweep folder, the study's name and its (Optuna) storage."""

    folder: str
    name: str
    storage: object

    def study(self, sampler=None):
        return optuna_module().load_study(study_name=self.name, storage=self.storage, sampler=sampler)

    @property
    def identity(self):
        """What the sweep was made with (the space and the settings every trial shares); None while it is made."""
        return self.study().user_attrs.get("sweep")


def find(sweep_dir, storage=None):
    """The sweep's study (a Sweep) if it has one yet, else None. A folder holding files no sweep wrote is refused
    (zoo.sweeps.folder.FolderError). Nothing is written, but a journal's cut last line set aside."""
    names = [name for name in folders.entries(sweep_dir) if name != folders.LOCK]
    record = folders.read_record(sweep_dir)  # after the listing: what it lists is older than a record missing here
    if record is not None:
        return _load(sweep_dir, storage, record["study"])
    if not names:
        return None
    foreign = [name for name in names if not folders.ours(name)]
    # The earlier form: no record, the study named after the folder (its workers all made sweep.lock).
    earlier = None
    if not foreign and os.path.exists(os.path.join(sweep_dir, folders.LOCK)):
        earlier = _load(sweep_dir, storage, os.path.basename(os.path.realpath(sweep_dir)))
    if earlier is None or earlier.identity is None:
        folders.refuse_foreign(sweep_dir, foreign or names)
    return earlier


def _load(sweep_dir, storage, name):
    if (storage is None or "://" not in storage) and not os.path.exists(storage or os.path.join(sweep_dir, JOURNAL)):
        return None
    opened = connect(sweep_dir, storage)
    try:
        optuna_module().load_study(study_name=name, storage=opened)
    except KeyError:
        return None
    return Sweep(sweep_dir, name, opened)


def check_same(sweep, identity, sweep_dir):
    """Refuses to go on with a sweep begun with another space or other settings, naming each difference."""
    recorded = sweep.identity
    if recorded is None:
        raise ValueError(f"The study {sweep.name!r} in the storage of {sweep_dir} is not a zoo sweep's: give "
                         "another --sweep_dir or --storage.")
    differ = cfg.differences(recorded, identity)
    if differ:
        raise ValueError(f"{sweep_dir} holds a sweep of another space or other settings ({'; '.join(differ)}): "
                         "run it again with the same space file and flags, or give another --sweep_dir.")


def start(sweep_dir, storage, space, identity):
    """The sweep's study: made with every trial enqueued (the folder's record written first, the identity
    last), or found and checked to be the same sweep. Several workers starting at once make it once (the sweep
    folder's lock). A folder of another's files, or another sweep's, is refused before anything is written."""
    found = find(sweep_dir, storage)
    if found is not None and found.identity is not None:
        check_same(found, identity, sweep_dir)
    if found is None and storage:  # a storage that cannot hold the study is refused before the folder is made
        if "://" in storage:
            connect(sweep_dir, storage)
        else:
            journal.check(storage, "--storage")
    with folders.locked(sweep_dir):
        found, record = find(sweep_dir, storage), folders.read_record(sweep_dir)
        if found is not None and found.identity is not None:
            check_same(found, identity, sweep_dir)
            if record is None:  # the earlier form, recorded now: a copy of it continues its study too
                folders.write_record(sweep_dir, found.name)
            return found
        if found is not None:  # cut while it was being made: made again
            optuna_module().delete_study(study_name=found.name, storage=found.storage)
        elif record is not None and folders.trial_folders(sweep_dir):
            where = f"--storage={storage}" if storage else os.path.join(sweep_dir, JOURNAL)
            raise folders.FolderError(f"{sweep_dir} holds trials of the study {record['study']!r}, which {where} "
                                      "does not hold: give the --storage the sweep was started with (none when "
                                      "its journal was the folder's study.journal).")
        name = record["study"] if record is not None else folders.new_name(sweep_dir)
        if record is None:
            folders.write_record(sweep_dir, name)
        return _make(sweep_dir, storage, name, space, identity)


def _make(sweep_dir, storage, name, space, identity):
    optuna = optuna_module()
    opened = connect(sweep_dir, storage)
    study = optuna.create_study(study_name=name, storage=opened,
                                direction="maximize" if space.goal == "max" else "minimize")
    points = {"grid": space.points, "random": lambda: draws(space)}.get(space.method, lambda: [{}] * space.max_trials)
    for point in points():
        study.enqueue_trial(point)
    study.set_user_attr("sweep", identity)  # last: a study without it was cut while it was made
    return Sweep(sweep_dir, name, opened)


def draws(space):
    """A random search's trials' values ([{field: value}]), all drawn at the start from one stream seeded by the
    space's seed (the same again for the same seed, whichever worker runs each trial). Latin hypercube draws:
    each field's values cut into max_trials equal shares (on its scale: a log range's in the logarithm, a list's
    values as many shares each), one trial drawn uniformly within each share, the shares dealt to the trials in
    an order shuffled for each field. Each value is still uniform, but no part of a range is left out by chance:
    4 trials over a range land one in each of its quarters."""
    rng = np.random.default_rng(space.seed)
    count = space.max_trials
    columns = {}
    for name, values in space.fields.items():
        shares = (rng.permutation(count) + rng.random(count)) / count  # one uniform draw in each share
        columns[name] = [value_at(values, float(share)) for share in shares]
    return [{name: column[trial] for name, column in columns.items()} for trial in range(count)]


def value_at(values, share):
    """The value at `share` (0 <= share < 1) along a list's values or a Range (each whole number, or each step's
    point, its equal part; a log range's share taken in the logarithm)."""
    if isinstance(values, tuple):
        return values[min(int(share * len(values)), len(values) - 1)]
    low, high = float(values.low), float(values.high)
    if values.step is not None or (values.whole and not values.log):
        step = values.step or 1
        points = math.floor((high - low) / step + 1e-9) + 1
        value = low + min(int(share * points), points - 1) * step
        return int(round(value)) if values.whole else round(value, 12)
    if values.log:
        ends = (low - 0.5, high + 0.5) if values.whole else (low, high)  # each whole number its part
        value = math.exp(math.log(ends[0]) + share * (math.log(ends[1]) - math.log(ends[0])))
    else:
        value = low + share * (high - low)
    return min(max(int(round(value)), int(low)), int(high)) if values.whole else min(max(value, low), high)


def sampler(space, number):
    """The sampler that gives trial `number` its values when it was enqueued without them (a bayesian search's;
    a random search's of the earlier form): seeded by the space's seed and the trial's number, so two workers
    drawing at once do not draw alike."""
    optuna = optuna_module()
    seed = space.seed + number
    if space.method == "bayesian":
        startup = max(2, min(10, space.max_trials // STARTUP_SHARE))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # constant_liar
            return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, constant_liar=True)
    return optuna.samplers.RandomSampler(seed=seed)


def distributions(space):
    """{field: Optuna distribution}: a list's values, a grid's range's points, or a range."""
    dists = optuna_module().distributions
    found = {}
    for name, values in space.fields.items():
        if isinstance(values, tuple) or space.method == "grid":
            found[name] = dists.CategoricalDistribution(list(values) if isinstance(values, tuple) else values.grid())
        elif values.whole:
            found[name] = dists.IntDistribution(int(values.low), int(values.high), log=values.log,
                                                step=int(values.step or 1))
        else:
            found[name] = dists.FloatDistribution(float(values.low), float(values.high), log=values.log,
                                                  step=values.step)
    return found


def describe(space):
    """The method in words, for the first line of a worker."""
    if space.method == "grid":
        return f"a grid of {space.trials} points"
    return f"{space.method} search, {space.max_trials} trials"
