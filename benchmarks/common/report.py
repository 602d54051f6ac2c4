"""Writes a benchmark's figures into BENCHMARKS.md, in a section of its own."""

import math
import os
import platform
import re
import shlex
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(ROOT, "BENCHMARKS.md")
HEADER = (
    "# Benchmarks\n\nFigures written by the programs in `benchmarks/` (benchmarks/README.md lists them); each "
    "section names the command that made it, the day and the machine. Peers run in the same program, on the "
    "same data.\n"
)


def cpu_name(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name (Linux), else the architecture: machines of one kind differ in speed."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine():
    cores = os.cpu_count()
    return f"{cpu_name()} ({platform.machine()}), {cores} cores, Python {platform.python_version()}"


def read_record(run_dir):
    """The record of the run in `run_dir` as a `zoo.runs.record.Record` (its typed config, by its recipe's class
    in `zoo.configs.RUN_CONFIGS`, and what it derived); None when there is no config.json."""
    from zoo.configs import RUN_CONFIGS
    from zoo.runs.run_dir import RunDir

    folder = RunDir(run_dir)
    recipe = folder.recipe()
    return None if recipe is None else folder.read_record(recipe, RUN_CONFIGS[recipe])


def finished_run(run_dir, recipe_flags):
    """Whether `run_dir` holds a finished training run (metrics.json has its "train" entry). A
    finished run is reused, so it must be the one the benchmark's command names: each
    `--name=value` of `recipe_flags` found in its record (top level, or any part within it,
    e.g. model, model.encoder, train, data) must hold that value, else ValueError names the flags that differ."""
    from zoo.runs.record import as_record
    from zoo.runs.run_dir import RunDir

    if "train" not in RunDir(run_dir).read_metrics():
        return False
    record = read_record(run_dir)
    if record is None:
        return False
    parts = _dicts(as_record(record.recipe, record.config, record.derived))
    differ = []
    for flag in recipe_flags:
        name, _, value = flag.removeprefix("--").partition("=")
        part = next((p for p in parts if name in p and not isinstance(p[name], dict)), None)
        if part is not None and not _same(part[name], value):
            differ.append(f"--{name}={value} (the run has {part[name]!r})")
    if differ:
        raise ValueError(
            f"{run_dir} holds a finished run trained with other flags than this benchmark's: {', '.join(differ)}. "
            "Give another --run_dir (or move that run away) so the benchmark trains its own."
        )
    return True


def _dicts(record):
    """`record` and every dict inside it, outermost first."""
    found = [record]
    for value in record.values():
        if isinstance(value, dict):
            found.extend(_dicts(value))
    return found


def _same(recorded, flag_value):
    if isinstance(recorded, list):
        return ",".join(map(str, recorded)) == flag_value
    if isinstance(recorded, bool):
        return recorded == (flag_value.lower() in ("true", "1"))
    if isinstance(recorded, (int, float)):
        return math.isclose(recorded, float(flag_value), rel_tol=1e-9)
    if recorded is None:
        return flag_value.lower() in ("", "none")
    return str(recorded) == flag_value


def command_line():
    module = os.path.relpath(os.path.abspath(sys.argv[0]), ROOT).removesuffix(".py").replace(os.sep, ".")
    return " ".join(["python -m", module] + [shlex.quote(a) for a in sys.argv[1:]])


def write_section(name, body):
    """Replaces (or appends) the section `name` of BENCHMARKS.md with `body`; in a --quick run, of the quick report
    (`benchmarks.common.quick`) instead."""
    from benchmarks.common import quick

    path = quick.report_path() if quick.active() else BENCHMARKS
    text = open(path).read() if os.path.exists(path) else HEADER
    stamp = time.strftime("%Y-%m-%d")
    section = (
        f"<!-- {name} -->\n## {name}\n\n`{command_line()}` — {stamp}, {machine()}\n\n{body.strip()}\n<!-- /{name} -->"
    )
    pattern = re.compile(rf"<!-- {re.escape(name)} -->.*?<!-- /{re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    with open(path, "w") as f:
        f.write(text)
    if path != BENCHMARKS:
        print(f"--quick: section {name!r} written to {path}, BENCHMARKS.md left as it is.", flush=True)


def paired(ours, peer, repeats, label="timing"):
    """Times `ours()` and `peer()` alternately, `repeats` times each, so that both see the
    same spells of a noisy machine; every other pair runs the peer first, so that neither
    side always follows the other. Returns (ours' runs, peer's runs, the median of the
    per-pair ratios peer seconds / ours seconds); a run is (seconds, result)."""
    ours_runs, peer_runs = [], []
    for i in range(repeats):
        sides = [(ours, ours_runs), (peer, peer_runs)]
        for function, runs in sides[:: -1 if i % 2 else 1]:
            began = time.time()
            result = function()
            runs.append((time.time() - began, result))
        print(f"{label}: pair {i + 1}/{repeats}: ours {ours_runs[-1][0]:.2f} s, peer {peer_runs[-1][0]:.2f} s", flush=True)
    ratio = statistics.median(b[0] / a[0] for a, b in zip(ours_runs, peer_runs))
    return ours_runs, peer_runs, ratio


def median_seconds(runs):
    return statistics.median(seconds for seconds, _ in runs)
