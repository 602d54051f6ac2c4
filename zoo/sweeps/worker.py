"""One worker of a sweep (`run`): the space checked before anything is written, the sweep's study made or joined,
then trial after trial taken, run in its folder and recorded, one line printed as each ends, until no trial is left
for it. The same command started again resumes a sweep; started on several processes or machines at once, they
share it (zoo.sweeps.study)."""

import collections
import dataclasses
import os
from collections.abc import Mapping

import yaml

from zoo.core import disk
from zoo.runs import outputs
from zoo.runs.run_dir import RunDir
from zoo.sweeps import claims, folder as folders, results as sweep_results, space as spaces, study as studies, trials


class SweepFailed(ValueError):
    """Every trial of the sweep failed; the message gives the error they share. `results`: the sweep's Results."""

    def __init__(self, message, results):
        super().__init__(message)
        self.results = results


def run(fixed, source, sweep_dir, storage=None, retry_failed=False):
    """Runs trials of the sweep in `sweep_dir` until none is left for this worker; returns its
    zoo.sweeps.results.Results. `fixed`: what every trial shares (zoo.sweeps.trials.Fixed); `source`: the space file's
    path, or its mapping; `storage`: a journal file or an RDB URL (default sweep_dir/study.journal); `retry_failed`: run
    the failed trials again, each in its folder. A bad space, value or folder raises a ValueError naming it before
    anything is written; a sweep whose every trial failed raises SweepFailed once the results are written."""
    where = "the space" if isinstance(source, Mapping) else str(source)
    check_folder(sweep_dir)  # the cheap refusal first: checking the space prepares the first trial's data
    space, first = trials.check(fixed, spaces.read(source, fixed.recipe.name), where)
    identity = {**space.as_data(), **fixed.record(first.config, space)}
    sweep = studies.start(sweep_dir, storage, space, identity)
    with folders.locked(sweep_dir):  # a copy for the eye: the study holds the space it was made with
        disk.write_atomically(os.path.join(sweep_dir, folders.SPACE_FILE),
                              yaml.safe_dump(space.as_data(), sort_keys=False).encode(), "the space")
    print(f"Sweep {sweep_dir}: {studies.describe(space)} of {fixed.recipe.name} runs, {space.metric} "
          f"({'highest' if space.goal == 'max' else 'lowest'} best); study {sweep.name} in "
          f"{storage or os.path.join(sweep_dir, studies.JOURNAL)}.", flush=True)
    if retry_failed:
        again = claims.retry_failed(sweep)
        print(f"Running {len(again)} failed trials again{': ' + ', '.join(again) if again else ''}.", flush=True)
    while (claim := claims.take(sweep, space)) is not None:
        try:
            print(f"{claim.name}{' (resumed)' if claim.resumed else ''}: {trials.shown(claim.values)}", flush=True)
            folder = os.path.join(sweep_dir, claim.name)
            outcome = trials.run(fixed, claim.values, folder, space.metric)
            claim.tell(dataclasses.replace(outcome, seconds=training_seconds(folder)))
        finally:
            claim.release()
        results = sweep_results.collect(sweep.study(), space)
        sweep_results.write(sweep_dir, results, space)
        print(progress(results, claim.name, outcome), flush=True)
    results = sweep_results.collect(sweep.study(), space)
    sweep_results.write(sweep_dir, results, space)
    print(sweep_results.summary(sweep_dir, results), flush=True)
    if results.rows and len(results.failed()) == len(results.rows):
        raise SweepFailed(all_failed(sweep_dir, results), results)
    return results


def training_seconds(folder):
    """The trial's training time as its metrics.json records it (`train.seconds`), None when it has none."""
    try:
        seconds = (RunDir(folder).read_metrics().get("train") or {}).get("seconds")
    except ValueError:  # no readable metrics.json: the trial failed before training ended
        return None
    return seconds if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None


def all_failed(sweep_dir, results):
    """The line of a sweep whose every trial failed: the error most of them share (each trial's folder name, which
    a run's error may give, written trial-NNN)."""
    errors = collections.Counter((row["error"] or "no error recorded").replace(row["trial"], "trial-NNN")
                                 for row in results.rows)
    error, count = errors.most_common(1)[0]
    share = "every one" if count == len(results.rows) else f"{count} of them"
    return (f"every trial of {sweep_dir} failed ({len(results.rows)} trials; {share}: {error}). A setting every "
            f"trial shares is the likely cause: fix it and start the sweep in a new --sweep_dir (or delete "
            f"{sweep_dir}); if the cause has passed (out of memory, a lost machine), run it again with "
            "--retry_failed (retry_failed=True from Python).")


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
