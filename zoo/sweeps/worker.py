"""One worker of a sweep (`run`): the space and every value it names checked before anything is written, the
sweep's study made or joined, then trial after trial taken, run in its folder and recorded, the results
refreshed and one line printed as each ends, until no trial is left for it. The same command started again
resumes a sweep; started on several processes or machines at once, they share it (zoo.sweeps.study)."""

import os
from collections.abc import Mapping

import yaml

from zoo.core import disk
from zoo.runs import outputs
from zoo.sweeps import results as sweep_results, space as spaces, study as studies, trials

SPACE_FILE = "space.yaml"


def run(fixed, source, sweep_dir, storage=None):
    """Runs trials of the sweep in `sweep_dir` until none is left for this worker; returns its
    zoo.sweeps.results.Results. `fixed`: what every trial shares (zoo.sweeps.trials.Fixed); `source`: the
    space file's path, or its mapping; `storage`: a journal file or an RDB URL (default sweep_dir/study.journal).
    A bad space, value or folder raises a ValueError naming it before anything is written."""
    where = "the space" if isinstance(source, Mapping) else str(source)
    space, first = trials.check(fixed, spaces.read(source, fixed.recipe.name), where)
    check_folder(sweep_dir)
    identity = {**space.as_data(), **fixed.record(first.run.config, space)}
    found = studies.find(sweep_dir, storage)
    if found is not None:  # another sweep's folder is refused before this one writes there
        studies.check_same(found, identity, sweep_dir)
    study = studies.start(sweep_dir, storage, space, identity)
    with studies.locked(sweep_dir):  # a copy for the eye: the study holds the space it was made with
        disk.write_atomically(os.path.join(sweep_dir, SPACE_FILE),
                              yaml.safe_dump(space.as_data(), sort_keys=False).encode(), "the space")
    print(f"Sweep {sweep_dir}: {studies.describe(space)} of {fixed.recipe.name} runs, {space.metric} "
          f"({'highest' if space.goal == 'max' else 'lowest'} best); study in "
          f"{storage or os.path.join(sweep_dir, studies.JOURNAL)}.", flush=True)
    while (claim := studies.claim_next(study, sweep_dir)) is not None:
        try:
            point = claim.point(space)
            print(f"{claim.name}{' (resumed)' if claim.resumed else ''}: {trials.shown(point)}", flush=True)
            outcome = trials.run(fixed, point, os.path.join(sweep_dir, claim.name), space.metric)
            claim.tell(outcome, claim.name)
        finally:
            claim.release()
        results = sweep_results.collect(study, space)
        sweep_results.write(sweep_dir, results, space)
        print(progress(results, claim.name, outcome), flush=True)
    results = sweep_results.collect(study, space)
    sweep_results.write(sweep_dir, results, space)
    return results


def check_folder(sweep_dir):
    """The sweep folder may be made or used: not a file, not a run folder, not inside a run's own files."""
    if os.path.exists(sweep_dir) and not os.path.isdir(sweep_dir):
        raise ValueError(f"--sweep_dir={sweep_dir} is a file, not a folder: give a folder path (it is made if "
                         "missing).")
    if outputs.holds_run(sweep_dir):
        raise ValueError(f"--sweep_dir={sweep_dir} holds a run (its config.json): give the sweep a folder of its own; "
                         "its trials are run folders inside it.")
    outputs.check_folders(os.path.join(sweep_dir, studies.trial_name(0)), None, True)


def progress(results, name, outcome):
    """`trial 3/12 done: trial-002 validation.accuracy 0.8123 (best 0.8211, trial-001)`."""
    count = f"trial {results.finished()}/{len(results.rows)}"
    best = results.best
    so_far = f" (best {sweep_results.shown(best[results.metric])}, {best['trial']})" if best else ""
    if outcome.error is not None:
        return f"{count} failed: {name} {outcome.error}{so_far}"
    return f"{count} done: {name} {results.metric} {sweep_results.shown(outcome.value)}{so_far}"
