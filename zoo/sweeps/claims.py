"""A worker's claim on a trial: the next trial taken, through Optuna's public API, under the sweep folder's lock
(`take`), told how it ended (`Claim.tell`), and failed trials enqueued again for their own folders
(`retry_failed`). While a worker runs a trial it holds the trial's claim (zoo.sweeps.folder.hold). The kernel lets
go of a dead process's locks (over NFS, the server, once the client is gone), so a RUNNING trial whose claim can be
taken was cut (kill -9, a crash, a reboot): it is taken again under its own number, with its values, and run in its
folder, where the run resumes from its checkpoints."""

from zoo.sweeps import folder as folders, study as studies

CUT_EARLY = "cut before its values were drawn; its folder takes a new trial"


class Claim:
    """A trial this worker runs, held until `release`: the Optuna trial's `number`, its folder's `name`, its
    `values` ({field: value}), and whether it was cut before (`resumed`)."""

    def __init__(self, sweep, number, name, values, handle, resumed):
        self.sweep, self.number, self.name, self.values = sweep, number, name, values
        self.handle, self.resumed = handle, resumed

    def tell(self, outcome):
        """Records the trial's outcome (zoo.sweeps.trials.Outcome): complete with its metric, or failed."""
        seconds = None if outcome.seconds is None else round(outcome.seconds, 3)
        _tell(self.sweep.study(), self.number, outcome.steps, seconds, outcome.error, outcome.value)

    def release(self):
        self.handle.close()


def _tell(study, number, steps, seconds, error, value=None):
    """Ends trial `number`: its steps, seconds and error go in the study's user attribute `outcome-N` (a trial
    taken again after a cut has no Optuna Trial object to set them on)."""
    study.set_user_attr(f"{studies.OUTCOME}{number}", {"steps": steps, "seconds": seconds, "error": error})
    if error is None:
        study.tell(number, value)
    else:
        study.tell(number, state=studies.optuna_module().trial.TrialState.FAIL)


def take(sweep, space):
    """The next trial for this worker, held (a Claim): a cut trial (RUNNING, its claim free) first, then a waiting one,
    asked of Optuna with its values drawn; None when every trial is finished or held by another worker."""
    trial_state = studies.optuna_module().trial.TrialState
    with folders.locked(sweep.folder):
        while True:
            study = sweep.study()
            trials = study.get_trials(deepcopy=False, states=(trial_state.RUNNING, trial_state.WAITING))
            for trial in trials:
                claim = _cut(sweep, study, trial, space) if trial.state == trial_state.RUNNING else None
                if claim is not None:
                    return claim
            waiting = [trial.number for trial in trials if trial.state == trial_state.WAITING]
            if not waiting:
                return None
            # Asked while a trial waits, under the folder's lock: Optuna pops the lowest-numbered one, and never
            # makes a trial of its own. Its sampler is seeded by that number (zoo.sweeps.study.sampler).
            asked = sweep.study(studies.sampler(space, min(waiting))).ask(studies.distributions(space))
            name = studies.folder_of(asked)
            handle = folders.hold(sweep.folder, name)
            if handle is not None:  # else its folder is held by a worker of another version: taken once free
                return Claim(sweep, asked.number, name, dict(asked.params), handle, resumed=False)


def _cut(sweep, study, trial, space):
    """The Claim of a RUNNING trial whose claim is free (it was cut), else None. One cut before its values were
    drawn (nothing of it ran) is failed, and a new trial enqueued for its folder."""
    name = studies.folder_of(trial)
    handle = folders.hold(sweep.folder, name)
    if handle is None:
        return None  # its worker is at work
    values = studies.values_of(trial)
    if set(space.fields) <= set(values):
        return Claim(sweep, trial.number, name, {field: values[field] for field in space.fields}, handle, True)
    _tell(study, trial.number, 0, None, CUT_EARLY)
    study.enqueue_trial({}, user_attrs={"folder": name})
    handle.close()
    return None


def latest(study):
    """{folder: its latest Optuna trial (a FrozenTrial)}, in the folders' order."""
    return {studies.folder_of(trial): trial for trial in study.get_trials(deepcopy=False)}


def retry_failed(sweep):
    """Enqueues each failed trial's values again for its own folder (where its run resumes from its newest
    checkpoint, as a cut trial's does); returns those folders' names."""
    fail = studies.optuna_module().trial.TrialState.FAIL
    with folders.locked(sweep.folder):
        study = sweep.study()
        failed = {name: trial for name, trial in latest(study).items() if trial.state == fail}
        for name, trial in failed.items():
            study.enqueue_trial(studies.values_of(trial), user_attrs={"folder": name})
    return list(failed)
