r"""Where a CPU training step's time goes, at the benchmark models' shapes.

Each benchmark model (`recipe_flags.step_flags`) trains --steps steps in a fresh process, the last
--profiled of them traced by TensorFlow's profiler (the recipes' `--profile_steps`). The trace's kernel
time (each op's self time on TensorFlow's compute threads, summed over the threads) is grouped by kind:
matrix products, softmax, layout (transposes, slices, gathers, scatters), the optimizer's updates, the
other element-wise ops and reductions, and the runtime (the executor's own work between kernels). The
model's counted training FLOPs (`benchmarks/costs.py`, all of them matrix products) over the share of
time spent in matrix products gives the rate the matrix products themselves ran at, against the matmul
peak of the same dtype measured in the same program (`benchmarks/peak.py`).

  python -m benchmarks.profile
  python -m benchmarks.profile --recipes=lm --steps=40 --profiled=10
"""

import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

from absl import app, flags

from benchmarks import recipe_flags
from benchmarks.costs import flops_per_token
from benchmarks.peak import matmul_flops
from benchmarks.report import ROOT, write_section

flags.DEFINE_list("recipes", ["translate", "lm", "pretrain"], "Benchmark models to profile.")
flags.DEFINE_integer("steps", 40, "Training steps per model (logged every 10).")
flags.DEFINE_integer("profiled", 10, "The last this many steps are traced (at most --steps minus the first 10).")
FLAGS = flags.FLAGS

KINDS = ("matrix products", "softmax", "layout", "optimizer", "element-wise and reductions", "runtime")
LAYOUT = ("Transpose", "Slice", "StridedSlice", "Concat", "Pad", "Tile", "Gather", "Scatter", "SegmentSum", "Reshape",
          "Pack", "Unpack", "Split", "Identity", "Bitcast", "Fill", "ZerosLike", "BroadcastTo", "Range", "OneHot")
OPTIMIZER = ("ApplyAdam", "AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp", "ReadVariableOp")


def kind(op_type):
    """The kind of work a TensorFlow op type does (oneDNN's kernels carry an _Mkl prefix)."""
    name = op_type.removeprefix("_Mkl").removeprefix("_MklNative").removeprefix("Native")
    if not op_type or "::" in op_type or op_type in ("ParallelFor", "ThreadpoolListener"):
        return "runtime"
    if "MatMul" in name or "Einsum" in name or "Conv" in name:
        return "matrix products"
    if "Softmax" in name:
        return "softmax"
    if name.startswith(OPTIMIZER) or "Apply" in name:
        return "optimizer"
    if any(part in name for part in LAYOUT):
        return "layout"
    return "element-wise and reductions"


def self_times(xplane_path):
    """{op type: self time in seconds} on TensorFlow's compute threads of one profiler trace: each event's
    duration less that of the events nested in it (an op's kernel inside the executor's step, say)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    times = collections.Counter()
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            open_events = []  # (end, op type) of the events enclosing the current one
            for event in sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps)):
                metadata = plane.event_metadata[event.metadata_id]
                op_type = metadata.display_name or metadata.name
                while open_events and open_events[-1][0] <= event.offset_ps:
                    open_events.pop()
                if open_events:
                    times[open_events[-1][1]] -= event.duration_ps / 1e12
                times[op_type] += event.duration_ps / 1e12
                open_events.append((event.offset_ps + event.duration_ps, op_type))
    return times


def profile(name, steps, profiled):
    """(op self times, the run's config.json, its steady tokens/s (every interval after the first, the traced
    one included), the model's training FLOPs per counted token or None, the command) of one fresh training run
    of the benchmark model `name`."""
    module, flags_ = recipe_flags.step_flags(name)
    with tempfile.TemporaryDirectory() as model_dir:
        command = [sys.executable, "-m", f"recipes.{module}", *flags_, "--mode=train", f"--train_steps={steps}",
                   "--log_every=10", f"--checkpoint_every={steps}", f"--profile_steps={steps - profiled + 1},{steps}",
                   f"--model_dir={model_dir}"]
        subprocess.run(command, cwd=ROOT, check=True)
        (trace,) = glob.glob(os.path.join(model_dir, "train", "plugins", "profile", "*", "*.xplane.pb"))
        with open(os.path.join(model_dir, "config.json")) as f:
            run = json.load(f)
        with open(os.path.join(model_dir, "metrics.json")) as f:
            rate = json.load(f)["train"]["steady_tokens_per_second"]
        times = self_times(trace)
        per_token = flops_per_token(name, run, model_dir)
    shown = " ".join(["python -m", f"recipes.{module}", *flags_, f"--train_steps={steps}",
                      f"--profile_steps={steps - profiled + 1},{steps}"])
    return times, run, rate, per_token, shown


def main(argv):
    del argv
    if not 0 < FLAGS.profiled <= FLAGS.steps - 10:
        raise app.UsageError(f"--profiled={FLAGS.profiled} must leave the first 10 of --steps={FLAGS.steps} "
                             "untraced (they trace the training loop).")
    peaks = {}
    header = "| model | dtype | " + " | ".join(KINDS) + " | matrix products' rate (share of the dtype's peak) |"
    lines, top_lines, commands = [header, "|---|---|" + "---|" * (len(KINDS) + 1)], [], []
    for name in FLAGS.recipes:
        times, run, rate, per_token, command = profile(name, FLAGS.steps, FLAGS.profiled)
        dtype = run["train"]["mixed_precision"]
        if dtype not in peaks:
            peaks[dtype] = matmul_flops(dtype)
        by_kind = collections.Counter()
        for op_type, seconds in times.items():
            by_kind[kind(op_type)] += seconds
        total = sum(by_kind.values())
        share = {k: by_kind[k] / total for k in KINDS}
        if per_token is None:
            products = "—"
        else:
            products_rate = rate * per_token / share["matrix products"]
            products = f"{products_rate / 1e9:.0f} GFLOP/s ({products_rate / peaks[dtype]:.0%})"
        lines.append(f"| {name} | {dtype} | " + " | ".join(f"{share[k]:.0%}" for k in KINDS) + f" | {products} |")
        top = ", ".join(f"{op} {seconds / total:.0%}" for op, seconds in times.most_common(8))
        top_lines.append(f"- {name}: {top}.")
        commands.append(f"- {name}: `{command}`")
    peak_text = ", ".join(f"{dtype} {flops / 1e9:.0f} GFLOP/s" for dtype, flops in peaks.items())
    body = "\n".join([
        f"Kernel time of {FLAGS.profiled} traced training steps (after {FLAGS.steps - FLAGS.profiled} untraced), "
        "each op's self time on TensorFlow's compute threads summed over the threads, by kind of work. Matrix "
        "products' rate: the model's counted training FLOPs (`benchmarks/costs.py`, all in matrix products) at the "
        "run's steady tokens/s (every log interval after the first), over the matrix products' share of the time; "
        f"matmul peak (2048³, this program): {peak_text}.",
        "",
        *lines,
        "",
        "The op types that took the most time (oneDNN's kernels carry an `_Mkl` prefix):",
        "",
        *top_lines,
        "",
        "Training commands (each run in a fresh process and a fresh --model_dir):",
        *commands,
    ])
    write_section("Where the step time goes", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
