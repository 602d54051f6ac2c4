"""A sweep's figures, written into its folder from the study whenever a trial ends (each file atomically, one
worker at a time):

- results.csv and results.md: one row a trial folder: its values, the metric, the steps its checkpoints reached,
  `seconds` (its training time as its metrics.json records it, `train.seconds`: of the attempt that reached its
  last step; blank when it trained none), its status (done, failed, running, waiting) and a failed trial's error;
- plot.png: the metric against each searched field (the best trial starred);
- best: the best trial's folder and its metric, `trial-001 validation.accuracy=0.8211`.
"""

import csv
import dataclasses
import io
import os

from zoo.core import disk
from zoo.sweeps import claims, folder as folders, study as studies

STATUS = {"COMPLETE": "done", "FAIL": "failed", "RUNNING": "running", "WAITING": "waiting", "PRUNED": "pruned"}
BEST_FILE = "best"


@dataclasses.dataclass(frozen=True)
class Results:
    """A sweep's trials as rows ({column: value}, the columns of results.csv), and the best one's row (None
    before any trial is done)."""

    metric: str
    goal: str
    fields: tuple
    rows: tuple
    best: dict | None

    @property
    def columns(self):
        return ("trial", *self.fields, self.metric, "steps", "seconds", "status", "error")

    def finished(self):
        return sum(row["status"] in ("done", "failed") for row in self.rows)

    def failed(self):
        return [row for row in self.rows if row["status"] == "failed"]


def collect(study, space):
    """The Results of the study's trial folders, in their order: each folder's latest Optuna trial (a failed
    trial run again is one row)."""
    outcomes = study.user_attrs
    rows = []
    for name, trial in claims.latest(study).items():
        values = studies.values_of(trial)
        attrs = outcomes.get(f"{studies.OUTCOME}{trial.number}") or trial.user_attrs  # the earlier form's
        rows.append({"trial": name, **{field: values.get(field) for field in space.fields},
                     space.metric: trial.value, "steps": attrs.get("steps"), "seconds": attrs.get("seconds"),
                     "status": STATUS.get(trial.state.name, trial.state.name.lower()), "error": attrs.get("error")})
    done = [row for row in rows if row["status"] == "done"]
    sign = 1 if space.goal == "max" else -1
    best = max(done, key=lambda row: (sign * row[space.metric], -rows.index(row)), default=None)
    return Results(space.metric, space.goal, tuple(space.fields), tuple(rows), best)


def write(sweep_dir, results, space):
    """results.csv, results.md, plot.png and best, refreshed."""
    with folders.locked(sweep_dir):
        disk.write_atomically(os.path.join(sweep_dir, "results.csv"), csv_text(results).encode(), "the results")
        disk.write_atomically(os.path.join(sweep_dir, "results.md"), markdown(results, space).encode(), "the results")
        disk.write_atomically(os.path.join(sweep_dir, "plot.png"), plot(results, space), "the plot")
        if results.best is not None:
            line = f"{results.best['trial']} {results.metric}={results.best[results.metric]!r}\n"
            disk.write_atomically(os.path.join(sweep_dir, BEST_FILE), line.encode(), "the best trial")


def summary(sweep_dir, results):
    """The line a worker ends with: how many trials finished, how, and the best one."""
    done = sum(row["status"] == "done" for row in results.rows)
    failed = len(results.failed())
    counts = f"{results.finished()} of {len(results.rows)} trials finished ({done} done, {failed} failed)"
    if results.finished() < len(results.rows):
        counts += "; the others are run by other workers"
    best = results.best
    if best is None:
        return f"Sweep {sweep_dir}: {counts}; no best yet."
    return (f"Sweep {sweep_dir}: {counts}; best {best['trial']} {results.metric} {shown(best[results.metric])} "
            f"({os.path.join(sweep_dir, best['trial'])}).")


def csv_text(results):
    out = io.StringIO()
    writer = csv.DictWriter(out, results.columns, lineterminator="\n")
    writer.writeheader()
    for row in results.rows:
        writer.writerow({key: "" if value is None else value for key, value in row.items()})
    return out.getvalue()


def markdown(results, space):
    lines = [f"# Sweep: {results.metric} ({'highest' if results.goal == 'max' else 'lowest'} best), "
             f"{studies.describe(space)}", ""]
    if results.best is not None:
        lines += [f"Best: {results.best['trial']}, {results.metric} {shown(results.best[results.metric])}.", ""]
    lines += ["| " + " | ".join(results.columns) + " |", "|" + "---|" * len(results.columns)]
    for row in results.rows:
        cells = [shown(row[column]).replace("|", r"\|") for column in results.columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def shown(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.6g}"
    return str(value)


def plot(results, space):
    """PNG bytes: the metric of each done trial against each searched field, one panel a field."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(results.fields)
    figure = Figure(figsize=(4 * len(names), 3.4), dpi=100)
    FigureCanvasAgg(figure)
    done = [row for row in results.rows if row["status"] == "done"]
    for index, name in enumerate(names):
        axes = figure.add_subplot(1, len(names), index + 1)
        values = [row[name] for row in done]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if numeric:
            xs = values
            bounds = [v for v in values if v > 0]
            if getattr(space.fields[name], "log", False) or (bounds and len(bounds) == len(values)
                                                               and max(bounds) / min(bounds) >= 100):
                axes.set_xscale("log")
        else:  # strings, true/false, null: one place each, in the space's order
            order = [str(v) for v in (space.fields[name] if isinstance(space.fields[name], tuple) else values)]
            xs = [order.index(str(v)) for v in values]
            axes.set_xticks(range(len(order)), order)
        axes.scatter(xs, [row[results.metric] for row in done], color="tab:blue")
        if results.best is not None and results.best in done:
            best = done.index(results.best)
            axes.scatter([xs[best]], [done[best][results.metric]], marker="*", s=180, color="tab:orange",
                         label=results.best["trial"])
            axes.legend(loc="best", fontsize=8)
        axes.set_xlabel(name)
        axes.set_ylabel(results.metric if index == 0 else "")
        axes.grid(alpha=0.3)
    figure.suptitle(f"{results.metric}: {len(done)} of {len(results.rows)} trials done", fontsize=10)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
