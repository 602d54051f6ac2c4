"""Hyper-parameter search over any dotted config field (docs/sweep.md): `zoo.sweep(recipe, sweep_dir, space=...)`
from Python, `python -m recipes.sweep` from the command line.

- space.py: the space file read and checked (method, metric, goal, max_trials, the fields' values and ranges);
- metrics.py: the figures each recipe writes to metrics.json, and whether higher or lower is better;
- trials.py: what every trial shares, the space checked against the typed config, one trial run as a run folder;
- study.py: the Optuna study in its storage, its trials enqueued, taken and told, a worker's claim on a trial;
- results.py: results.csv, results.md, plot.png and best;
- worker.py: one worker's loop over the trials.
"""
