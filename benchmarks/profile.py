r"""Where a CPU training step's time goes, at the benchmark models' shapes.

Each benchmark model (`recipe_flags.step_flags`) trains --steps steps in a fresh process, the last
--profiled of them traced by TensorFlow's profiler (the recipes' `--profile_steps`). The trace's kernel
time (each op's self time on TensorFlow's compute threads, summed over the threads) is grouped by kind:
matrix products, softmax, layout (transposes, slices, gathers, scatters), the optimizer's updates, the
other element-wise ops and reductions, and the runtime (the executor's own work between kernels). The
model's counted training FLOPs (`benchmarks/common/costs.py`, all of them matrix products) over the share of
time spent in matrix products gives the rate the matrix products themselves ran at, against the matmul
peak of the same dtype measured in the same program (`benchmarks/common/peak.py`).

  python -m benchmarks.profile
  python -m benchmarks.profile --recipes=lm --steps=40 --profiled=10
  python -m benchmarks.profile --quick   # a smoke run: the language model's tiny preset, 12 steps, 2 traced
"""

import glob
import os
import tempfile

from absl import app, flags

from benchmarks.common import quick, recipe_flags, runs
from benchmarks.common.costs import flops_per_token
from benchmarks.common.peak import matmul_flops
from benchmarks.common.report import ROOT, read_record, write_section
from benchmarks.common.traces import KINDS, OTHER_PART, PARTS, by_kind, by_part, by_type, self_times

DEFAULT_RECIPES = ["translate", "lm", "pretrain"]
flags.DEFINE_list("recipes", DEFAULT_RECIPES, "Benchmark models to profile (also finetune: IMDB fine-tuning of the "
                  "published MiniLM checkpoint); other lists than the default get a section of their own.")
flags.DEFINE_integer("steps", 40, "Training steps per model (logged every 10).")
flags.DEFINE_string("trace_dir", None, "Keep each model's run (its trace under train/plugins/profile) in "
                    "<trace_dir>/<model>, to read further or open in TensorBoard; default: a temporary folder.")
flags.DEFINE_integer("profiled", 10, "The last this many steps are traced (at most --steps minus the first 10).")
FLAGS = flags.FLAGS


def profile(name, steps, profiled, keep_in=None):
    """(op self times, the run's typed config, its steady tokens/s (every interval after the first, the traced
    one included), the model's training FLOPs per counted token or None, the command) of one fresh training run
    of the benchmark model `name`."""
    module, flags_ = recipe_flags.step_flags(name)
    flags_ = quick.training(flags_)  # the step count and logging below replace the quick run's
    window = f"--profile_steps={steps - profiled + 1},{steps}"
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = os.path.join(keep_in, name) if keep_in else scratch
        if keep_in and os.path.exists(model_dir):
            raise app.UsageError(f"{model_dir} already exists: give a --trace_dir without a '{name}' folder.")
        metrics = runs.run_recipe(module, model_dir, *flags_, "--mode=train", f"--train_steps={steps}",
                                  "--log_every=10", f"--checkpoint_every={steps}", window)
        (trace,) = glob.glob(os.path.join(model_dir, "train", "plugins", "profile", "*", "*.xplane.pb"))
        config = read_record(model_dir).config
        rate = metrics["train"]["steady_tokens_per_second"]
        times = self_times(trace)
        per_token = flops_per_token(name, config, model_dir)
    shown = " ".join(["python -m", f"recipes.{module}", *flags_, f"--train_steps={steps}", window])
    shown = shown.replace(ROOT + os.sep, "")
    return times, config, rate, per_token, shown


def main(argv):
    del argv
    quick.shrink(recipes=["lm"], steps=12, profiled=2)
    if not 0 < FLAGS.profiled <= FLAGS.steps - 10:
        raise app.UsageError(f"--profiled={FLAGS.profiled} must leave the first 10 of --steps={FLAGS.steps} "
                             "untraced (they trace the training loop).")
    peaks = {}
    header = "| model | dtype | " + " | ".join(KINDS) + " | matrix products' rate (share of the dtype's peak) |"
    lines, top_lines, commands = [header, "|---|---|" + "---|" * (len(KINDS) + 1)], [], []
    parts = [name for name, _ in PARTS] + [OTHER_PART]
    part_lines = ["| model | " + " | ".join(parts) + " |", "|---|" + "---|" * len(parts)]
    for name in FLAGS.recipes:
        times, config, rate, per_token, command = profile(name, FLAGS.steps, FLAGS.profiled, FLAGS.trace_dir)
        dtype = config.train.mixed_precision
        if dtype not in peaks:
            peaks[dtype] = matmul_flops(dtype)
        kinds = by_kind(times)
        total = sum(kinds.values())
        share = {k: kinds[k] / total for k in KINDS}
        if per_token is None or not share["matrix products"]:
            products = "—"
        else:
            products_rate = rate * per_token / share["matrix products"]
            products = f"{products_rate / 1e9:.0f} GFLOP/s ({products_rate / peaks[dtype]:.0%})"
        lines.append(f"| {name} | {dtype} | " + " | ".join(f"{share[k]:.0%}" for k in KINDS) + f" | {products} |")
        in_parts = by_part(times)
        part_total = sum(in_parts.values())
        part_lines.append(f"| {name} | " + " | ".join(f"{in_parts[p] / part_total:.0%}" for p in parts) + " |")
        top = ", ".join(f"{op} {seconds / total:.0%}" for op, seconds in by_type(times).most_common(8))
        top_lines.append(f"- {name}: {top}.")
        commands.append(f"- {name}: `{command}`")
    peak_text = ", ".join(f"{dtype} {flops / 1e9:.0f} GFLOP/s" for dtype, flops in peaks.items())
    body = "\n".join([
        f"Kernel time of {FLAGS.profiled} traced training steps (after {FLAGS.steps - FLAGS.profiled} untraced), "
        "each op's self time on TensorFlow's compute threads summed over the threads, by kind of work. Matrix "
        "products' rate: the model's counted training FLOPs (`benchmarks/common/costs.py`, all in matrix products) "
        "at the run's steady tokens/s (every untraced log interval after the first), over the matrix products' share "
        "of the summed time (an estimate: it takes that share of thread time for a share of wall time); matmul peak "
        f"(2048³, this program): {peak_text}. Optimizer: the ops under Adam's or AdamW's name scope (Keras 3 runs the update "
        "as plain element-wise ops); runtime: the executor's work between kernels and waits for the input.",
        "",
        *lines,
        "",
        "The same kernel time by part of the step, from each op's name scope (forward and backward together; the "
        "runtime's own events left out; a layer's dropout and norm counted as dropout and norm):",
        "",
        *part_lines,
        "",
        "The op types that took the most time (oneDNN's kernels carry an `_Mkl` prefix):",
        "",
        *top_lines,
        "",
        "Training commands (each run in a fresh process and a fresh --model_dir):",
        *commands,
    ])
    own = "" if FLAGS.recipes == DEFAULT_RECIPES else ": " + ", ".join(FLAGS.recipes)
    write_section(f"Where the step time goes{own}", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
