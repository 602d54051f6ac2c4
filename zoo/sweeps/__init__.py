"""Hyper-parameter search over any dotted config field (docs/sweep.md): `zoo.sweep(recipe, sweep_dir, space=...)`
from Python, `python -m recipes.sweep` from the command line. worker.py runs a worker's loop: the space read
(space.py, its metrics metrics.py) and checked against the typed config (trials.py), the study found or made in the
sweep folder (folder.py, journal.py, study.py), then each trial claimed (claims.py), run (trials.py) and written into
results.csv, results.md, plot.png and best (results.py)."""
