"""A sweep's state: its Optuna study, in a journal file in the sweep folder (`study.journal`, Optuna's
JournalFileBackend, which several processes and, on a shared file system, several machines append to under
its own lock) or in the database `--storage` names (an RDB URL: sqlite:///..., postgresql://...).

Every trial is in the study from the start: a grid's points, enqueued with their values, or a random or
bayesian search's max_trials trials, enqueued empty and given their values by the sampler when they start. A
worker takes a waiting trial by moving it to RUNNING, which the storage lets one worker do (Optuna's own
`Study.ask` pops enqueued trials the same way), so no point runs twice and no search runs more trials than
asked, however many workers share it (Optuna's GridSampler alone can hand one point to two workers).

While a worker runs a trial it holds the trial's claim, an exclusive flock(2) on `claims/trial-007.lock` in the
sweep folder. The kernel lets go of a dead process's locks (over NFS, the server, once the client is gone), so
a RUNNING trial whose claim can be taken was cut (kill -9, a crash, a reboot): the next worker takes it and runs
it again in the same folder, where the run resumes from its checkpoints. Optuna's heartbeats and
RetryFailedTrialCallback would instead fail the cut trial and start a copy under a new number, in a new folder,
from step 0.
"""

import contextlib
import fcntl
import os
import warnings

from zoo.core import config as cfg

JOURNAL = "study.journal"
LOCK = "sweep.lock"  # held while the study is made and while the results are written
CLAIMS = "claims"
STARTUP_SHARE = 3  # a bayesian search samples its first max_trials // STARTUP_SHARE trials at random (2 .. 10)


def optuna_module():
    try:
        import optuna
    except ImportError:
        raise ValueError("A sweep needs Optuna: pip install 'transformer-zoo[sweep]' (or pip install optuna).") \
            from None
    return optuna


def trial_name(number):
    return f"trial-{number:03d}"


def open_storage(sweep_dir, storage=None):
    """The study's storage: the journal file `storage` names (default sweep_dir/study.journal), or the database
    of an RDB URL."""
    optuna = optuna_module()
    if storage and "://" in storage:
        try:
            return optuna.storages.RDBStorage(storage)
        except Exception as error:  # noqa: BLE001 - SQLAlchemy's, or the driver's: the URL is the user's to fix
            raise ValueError(f"--storage={storage} cannot be opened ({type(error).__name__}: "
                             f"{str(error).splitlines()[0] if str(error) else ''}): give an RDB URL such as "
                             "sqlite:///sweeps/a.db or postgresql://user@host/db, or a journal file's path.") from None
    path = storage or os.path.join(sweep_dir, JOURNAL)
    return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))


def study_name(sweep_dir):
    """The study's name in its storage: the sweep folder's name (a database may hold several sweeps)."""
    return os.path.basename(os.path.realpath(sweep_dir))


@contextlib.contextmanager
def locked(sweep_dir):
    """The sweep folder's lock, waited for: one worker at a time makes the study or writes the results."""
    with open(os.path.join(sweep_dir, LOCK), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def find(sweep_dir, storage=None):
    """The sweep's study if it has one yet, else None; nothing is written unless a journal exists already."""
    optuna = optuna_module()
    journal = storage is None or "://" not in storage
    if journal and not os.path.exists(storage or os.path.join(sweep_dir, JOURNAL)):
        return None
    try:
        return optuna.load_study(study_name=study_name(sweep_dir), storage=open_storage(sweep_dir, storage))
    except KeyError:
        return None


def check_same(study, identity, sweep_dir):
    """Refuses to go on with a sweep begun with another space or other settings, naming each difference."""
    recorded = study.user_attrs.get("sweep")
    if recorded is None:
        raise ValueError(f"The study {study.study_name!r} in the storage of {sweep_dir} is not a zoo sweep's: give "
                         "another --sweep_dir (the study takes the folder's name) or --storage.")
    differ = cfg.differences(recorded, identity)
    if differ:
        raise ValueError(f"{sweep_dir} holds a sweep of another space or other settings ({'; '.join(differ)}): "
                         "run it again with the same space file and flags, or give another --sweep_dir.")


def start(sweep_dir, storage, space, identity):
    """The sweep's study: made with every trial enqueued (its identity recorded), or found and checked to be the
    same sweep. Several workers starting at once make it once (the sweep folder's lock)."""
    optuna = optuna_module()
    os.makedirs(sweep_dir, exist_ok=True)
    with locked(sweep_dir):
        found = find(sweep_dir, storage)
        if found is not None:
            check_same(found, identity, sweep_dir)
            return found
        direction = "maximize" if space.goal == "max" else "minimize"
        study = optuna.create_study(study_name=study_name(sweep_dir), storage=open_storage(sweep_dir, storage),
                                    direction=direction, sampler=sampler(space, 0))
        study.set_user_attr("sweep", identity)
        points = space.points() if space.method == "grid" else [{}] * space.max_trials
        for point in points:
            study.enqueue_trial(point)
        return study


def sampler(space, number):
    """The sampler that gives trial `number` its values: seeded by the space's seed and the trial's number, so a
    search draws the same points however many workers run it. A grid's values are fixed when enqueued."""
    optuna = optuna_module()
    seed = space.seed + number
    if space.method == "bayesian":
        startup = max(2, min(10, space.max_trials // STARTUP_SHARE))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # constant_liar
            return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, constant_liar=True)
    return optuna.samplers.RandomSampler(seed=seed)


def claim_next(study, sweep_dir):
    """The next trial for this worker, held (`Claim`): a cut trial (RUNNING, its claim free) first, then a
    waiting one; None when every trial is finished or held by another worker."""
    optuna = optuna_module()
    running, waiting = optuna.trial.TrialState.RUNNING, optuna.trial.TrialState.WAITING
    storage = study._storage  # noqa: SLF001 - the storage's own API: taking a waiting trial is atomic there
    trials = study.get_trials(deepcopy=False, states=(running, waiting))
    for trial in sorted(trials, key=lambda t: (t.state != running, t.number)):
        trial_id = trial._trial_id  # noqa: SLF001 - a FrozenTrial's id in its storage
        if trial.state == waiting:
            try:
                if not storage.set_trial_state_values(trial_id, running):
                    continue  # another worker took it first
            except optuna.exceptions.UpdateFinishedTrialError:
                continue
        handle = hold(os.path.join(sweep_dir, CLAIMS), trial_name(trial.number))
        if handle is None:
            continue  # its worker is at work
        if storage.get_trial(trial_id).state != running:  # finished while this worker looked
            handle.close()
            continue
        return Claim(study, trial.number, trial_id, handle, resumed=trial.state == running)
    return None


def hold(folder, name):
    """An open file holding the exclusive flock of `folder/name.lock`, or None while another process holds it."""
    os.makedirs(folder, exist_ok=True)
    handle = open(os.path.join(folder, f"{name}.lock"), "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


class Claim:
    """A trial this worker runs, held until `release`: its number, and whether it was cut before (`resumed`)."""

    def __init__(self, study, number, trial_id, handle, resumed):
        self.study, self.number, self.trial_id, self.handle, self.resumed = study, number, trial_id, handle, resumed
        self.trial = None

    @property
    def name(self):
        return trial_name(self.number)

    def point(self, space):
        """The trial's values ({field: value}): a grid's as enqueued, else drawn by the space's sampler (a trial
        cut after it drew them keeps them)."""
        optuna = optuna_module()
        study = optuna.load_study(study_name=self.study.study_name, storage=self.study._storage,  # noqa: SLF001
                                  sampler=sampler(space, self.number))
        self.trial = optuna.trial.Trial(study, self.trial_id)
        return {name: suggest(self.trial, name, values, space.method) for name, values in space.fields.items()}

    def tell(self, outcome, folder):
        """Records the trial's outcome (zoo.sweeps.trials.Outcome): complete with its metric, or failed."""
        optuna = optuna_module()
        attrs = {"folder": folder, "steps": outcome.steps, "seconds": round(outcome.seconds, 3),
                 "error": outcome.error}
        for key, value in attrs.items():
            self.trial.set_user_attr(key, value)
        if outcome.error is None:
            self.trial.study.tell(self.trial, outcome.value)
        else:
            self.trial.study.tell(self.trial, state=optuna.trial.TrialState.FAIL)

    def release(self):
        self.handle.close()


def suggest(trial, name, values, method):
    """The trial's value of the field `name`: one of a list, or in a Range (a grid's ranges are lists of points)."""
    if isinstance(values, tuple) or method == "grid":
        return trial.suggest_categorical(name, list(values) if isinstance(values, tuple) else values.grid())
    if values.whole:
        return trial.suggest_int(name, int(values.low), int(values.high), step=int(values.step or 1), log=values.log)
    return trial.suggest_float(name, float(values.low), float(values.high), step=values.step, log=values.log)


def describe(space):
    """The method in words, for the first line of a worker."""
    if space.method == "grid":
        return f"a grid of {space.trials} points"
    return f"{space.method} search, {space.max_trials} trials"

