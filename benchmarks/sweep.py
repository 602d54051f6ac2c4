r"""The hyper-parameter search's own figures (issue 50): a grid from one command (recipes.sweep), its best trial
against the preset's defaults (a point of the same grid, so the same run), both then evaluated once on the split
the grid never saw, and the sweep's own bookkeeping per trial (its wall time less its trials').

The grid tunes on `--dataset`'s validation split (sst2_tune: every 20th SST-2 training sentence held out) and
reports `--report_dataset`'s `--report_split` (SST-2's dev set, GLUE's test labels being hidden) for the best
trial and the defaults' trial, read from each trial's `--mode=eval` (metrics.json's eval_<dataset>_<split>).
A finished sweep folder is reused (the sweep resumes and runs nothing), so the report can be made again.
`--init_from=minilm` fine-tunes the published all-MiniLM-L6-v2 (benchmarks.common.minilm) in every trial instead
of a `--preset` from scratch; the defaults' trial is then the published-checkpoint defaults' point.

`--workers=N` measures instead what N workers buy: the same sweep command run in <sweep_dir>_1worker by one
process, then in <sweep_dir>_<N>workers by N processes started together (each a fresh folder), wall times compared.

  python -m benchmarks.sweep --space=spaces/sst2_grid.yaml --sweep_dir=runs/sweeps/sst2_grid --epochs=1
  python -m benchmarks.sweep --space=spaces/minilm_sst2.yaml --sweep_dir=runs/sweeps/minilm_sst2 --init_from=minilm \
      --max_examples=8000 --extra=--max_length=128,--warmup_steps=25
  python -m benchmarks.sweep --space=spaces/sst2_grid.yaml --sweep_dir=runs/sweeps/workers --workers=2 \
      --extra=--train_steps=150
  python -m benchmarks.sweep --quick   # a smoke run: QUICK_SPACE's two trials of the tiny preset, 2 steps each
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import time

from absl import app, flags

from benchmarks.common import quick
from benchmarks.common.report import write_section

flags.DEFINE_string("space", "spaces/sst2_grid.yaml", "The space file.")
flags.DEFINE_string("sweep_dir", "runs/sweeps/sst2_grid", "The sweep's folder (reused: a finished sweep runs nothing).")
flags.DEFINE_string("dataset", "sst2_tune", "What every trial trains and is judged on (its validation split).")
flags.DEFINE_string("report_dataset", "sst2", "The data the best and the defaults' trials are reported on, once.")
flags.DEFINE_string("report_split", "validation", "Its split.")
flags.DEFINE_string("preset", "small", "The model preset of every trial (not with --init_from).")
flags.DEFINE_string("init_from", None, "Fine-tune this checkpoint in every trial; `minilm`: the published "
                    "all-MiniLM-L6-v2 (benchmarks.common.minilm).")
flags.DEFINE_float("epochs", 1.0, "Training passes of every trial.")
flags.DEFINE_integer("max_examples", None, "Train every trial on this many examples (a seeded choice).")
flags.DEFINE_integer("workers", None, "Measure N workers against one on the grid instead (fresh folders).")
flags.DEFINE_list("extra", [], "More recipe flags for every trial, e.g. --extra=--max_length=64.")
FLAGS = flags.FLAGS

# A quick run's grid (written into its temporary sweep folder) and its trials' flags.
QUICK_SPACE = "method: grid\nmetric: validation.accuracy\nspace:\n  train.learning_rate: [5.0e-4, 1.0e-3]\n"
QUICK_EXTRA = ["--train_steps=2", "--checkpoint_every=2", "--warmup_steps=1", f"--vocab_size={quick.VOCABULARY}"]


def shrink_to_quick():
    """With --quick: QUICK_SPACE in a fresh temporary sweep folder, the tiny preset on a few examples."""
    if not quick.active():
        return
    quick.shrink(sweep_dir=os.path.join(quick.folder("sweep"), "grid"), preset="tiny", max_examples=quick.EXAMPLES,
                 extra=QUICK_EXTRA)
    if not FLAGS["space"].present:
        FLAGS.space = os.path.join(os.path.dirname(FLAGS.sweep_dir), "quick_space.yaml")
        with open(FLAGS.space, "w") as f:
            f.write(QUICK_SPACE)


def init_from():
    if FLAGS.init_from == "minilm":
        from benchmarks.common.minilm import minilm_folder

        return os.path.relpath(minilm_folder())
    return FLAGS.init_from


def sweep_command(sweep_dir=None):
    start = [f"--init_from={init_from()}"] if FLAGS.init_from else [f"--preset={FLAGS.preset}"]
    sample = [f"--max_examples={FLAGS.max_examples}"] if FLAGS.max_examples else []
    # --extra=--train_steps=N sets the trials' length instead of --epochs (the recipe takes one of them)
    length = [] if any(f.startswith("--train_steps=") for f in FLAGS.extra) else [f"--epochs={FLAGS.epochs:g}"]
    return [sys.executable, "-m", "recipes.sweep", "--recipe=sentiment", f"--space={FLAGS.space}",
            f"--sweep_dir={sweep_dir or FLAGS.sweep_dir}", f"--dataset={FLAGS.dataset}", *start,
            *length, *sample, *FLAGS.extra]


def read_results():
    with open(os.path.join(FLAGS.sweep_dir, "results.csv"), newline="") as f:
        return list(csv.DictReader(f))


def defaults_trial(rows, fields):
    """The row whose point holds the recipe's own defaults for every searched field (None: not in the grid)."""
    from recipes.shortcuts import value_of
    from zoo.sentiment.recipe import SENTIMENT

    config = SENTIMENT.base(None if FLAGS.init_from else FLAGS.preset, init_from())
    wanted = {field: value_of(config, field) for field in fields}
    for row in rows:
        if all(float(row[field]) == float(value) for field, value in wanted.items()):
            return row
    return None


def report_accuracy(trial):
    """The trial's accuracy on the report split: its --mode=eval, run once (metrics.json keeps it)."""
    folder = os.path.join(FLAGS.sweep_dir, trial)
    key = f"eval_{FLAGS.report_dataset}_{FLAGS.report_split}"
    with open(os.path.join(folder, "metrics.json")) as f:
        if key not in json.load(f):
            subprocess.run([sys.executable, "-m", "recipes.sentiment", "--mode=eval", f"--model_dir={folder}",
                            f"--dataset={FLAGS.report_dataset}", f"--eval_split={FLAGS.report_split}"], check=True)
    with open(os.path.join(folder, "metrics.json")) as f:
        return json.load(f)[key]["accuracy"]


def compare_workers(count):
    """Wall time of the grid by one worker, then by `count` workers started together, each in a fresh folder."""
    walls = {}
    for workers in (1, count):
        folder = f"{FLAGS.sweep_dir}_{workers}worker{'s' if workers > 1 else ''}"
        shutil.rmtree(folder, ignore_errors=True)
        command = sweep_command(folder)
        print("$ " + " ".join(command) + (f"  (x{workers}, together)" if workers > 1 else ""), flush=True)
        started = time.time()
        processes = [subprocess.Popen(command) for _ in range(workers)]
        if any(process.wait() for process in processes):
            raise SystemExit(f"a worker of {folder} failed")
        walls[workers] = (time.time() - started, folder)
    rows = []
    for workers, (wall, folder) in walls.items():
        with open(os.path.join(folder, "results.csv"), newline="") as f:
            done = [row for row in csv.DictReader(f) if row["status"] == "done"]
        each = sum(float(row["seconds"]) for row in done) / len(done)
        rows.append(f"| {workers} | {len(done)} | {wall / 60:.1f} min | {each:.0f} s | "
                    f"{walls[1][0] / wall:.2f}x |")
    body = (f"The same grid ({FLAGS.space}) from a fresh folder, by one worker, then by {count} started together on "
            f"this machine; a trial's time is its own wall time (its share of the cores when workers overlap).\n\n"
            "| workers | trials done | sweep wall time | mean trial time | speed-up |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\n- each worker: `python " + " ".join(sweep_command(FLAGS.sweep_dir + "_N")[1:])
            + "`")
    write_section(f"Sweep: {count} workers against one", body)
    print(body)


def main(argv):
    del argv
    shrink_to_quick()
    if FLAGS.workers:
        return compare_workers(FLAGS.workers)
    started = time.time()
    print("$ " + " ".join(sweep_command()), flush=True)
    subprocess.run(sweep_command(), check=True)
    wall = time.time() - started
    rows = read_results()
    metric = next(name for name in rows[0] if name.startswith("validation."))
    fields = [name for name in rows[0] if name not in ("trial", metric, "steps", "seconds", "status", "error")]
    done = [row for row in rows if row["status"] == "done"]
    best = max(done, key=lambda row: float(row[metric]))
    default = defaults_trial(rows, fields)
    trial_seconds = sum(float(row["seconds"]) for row in done)
    lines = [f"| {row['trial']} | " + " | ".join(row[field] for field in fields)
             + f" | {float(row[metric]):.2%} | {float(row['seconds']) / 60:.1f} min |" for row in done]
    header = "| trial | " + " | ".join(fields) + f" | {metric} | time |\n|" + "---|" * (len(fields) + 3)
    report = [f"| best ({best['trial']}) | {float(best[metric]):.2%} | **{report_accuracy(best['trial']):.2%}** |"]
    if default is not None:
        report.append(f"| the {'published-checkpoint' if FLAGS.init_from else 'preset'}'s defaults ({default['trial']}) | {float(default[metric]):.2%} | "
                      f"**{report_accuracy(default['trial']):.2%}** |")
    split = f"{FLAGS.report_dataset} {FLAGS.report_split}"
    start = f"fine-tunes {init_from()}" if FLAGS.init_from else f"trains the {FLAGS.preset} preset"
    sample = f" ({FLAGS.max_examples:,} examples)" if FLAGS.max_examples else ""
    body = (f"{len(done)} of {len(rows)} trials done; each trial {start} on {FLAGS.dataset}{sample} for "
            f"{FLAGS.epochs:g} epoch(s), judged on its validation split ({metric}).\n\n{header}\n" + "\n".join(lines)
            + f"\n\nReported once on {split}, which no trial was judged on:\n\n| trial | {metric} | {split} |\n"
            "|---|---|---|\n" + "\n".join(report)
            + f"\n\nSweep wall time {wall / 60:.1f} min, its trials' {trial_seconds / 60:.1f} min: the sweep's own "
            f"work (starting, the study, results files, plot) {(wall - trial_seconds) / max(len(done), 1):.1f} s a "
            "trial (a reused sweep folder: only this run's part).\n\n- sweep: `python "
            + " ".join(sweep_command()[1:]) + "`")
    write_section(f"Sweep: {os.path.basename(FLAGS.sweep_dir)}", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
