"""Hyper-parameter search over any dotted config field (docs/sweep.md): `zoo.sweep(recipe, sweep_dir, space=...)`
from Python, `python -m recipes.sweep` from the command line.

- space.py: the space file read and checked (method, metric, goal, max_trials, the fields' values and ranges);
- metrics.py: the figures each recipe writes to metrics.json, and whether higher or lower is better;
- trials.py: what every trial shares, the space checked against the typed config, one trial run as a run folder;
- folder.py: the sweep folder's own files, its record (naming its study) and locks;
- journal.py: a study journal checked before Optuna reads it, a line cut by a kill set aside;
- study.py: the Optuna study in its storage, found or made with its trials enqueued (a random search's drawn);
- claims.py: a worker's claim on a trial, taken with Optuna's ask and told with its tell, failed ones run again;
- results.py: results.csv, results.md, plot.png and best;
- worker.py: one worker's loop over the trials.
"""
