r"""Where a CPU training step's time went: the memory allocator.

Each recipe's benchmark model trains for --steps steps twice in fresh processes, in the same
program: with TensorFlow's allocator settings as they are (ZOO_TF_ALLOCATOR=1) and with the zoo's
(TensorFlow's BFC allocator for CPU tensors, `recipes.common`, and glibc's mmap and trim
thresholds restored after tf.data lowers them, `zoo.training.runtime.keep_freed_memory`). Reports the
steady tokens/s (the first log interval, which traces the step, left out), the share of the
process's CPU time spent in the kernel (where page faults are served), and the model's training FLOP/s
(`benchmarks/common/costs.py`; for translation averaged over the run's tokenized training pairs) as a
share of the dtype's matmul peak measured in the same program (`benchmarks/common/peak.py`).

  python -m benchmarks.allocator
  python -m benchmarks.allocator --recipes=translate --steps=100
  python -m benchmarks.allocator --quick   # a smoke run: the language model's tiny preset, 20 steps each way
"""

import os
import resource
import tempfile

from absl import app, flags

from benchmarks.common import quick, recipe_flags, runs
from benchmarks.common.costs import flops_per_token
from benchmarks.common.peak import matmul_flops
from benchmarks.common.report import read_record, write_section

flags.DEFINE_list("recipes", ["translate", "lm", "pretrain"], "Recipes to measure.")
flags.DEFINE_integer("steps", 60, "Training steps per measurement (logged every 10).")
FLAGS = flags.FLAGS

SETTINGS = {"TensorFlow's": {"ZOO_TF_ALLOCATOR": "1"}, "the zoo's": {}}


def measure(name, env, steps):
    """(steady tokens/s, kernel share of CPU time, the run's typed config, its command, the model's training
    FLOPs per counted token or None) of one fresh training run."""
    module, flags_ = recipe_flags.step_flags(name)  # the recipe's module is its name
    flags_ = quick.training(flags_)  # the step count and logging below replace the quick run's
    with tempfile.TemporaryDirectory() as model_dir:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        metrics = runs.run_recipe(module, model_dir, *flags_, "--mode=train", f"--train_steps={steps}", "--log_every=10",
                                  f"--checkpoint_every={steps}", env={**os.environ, **env})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        train, config = metrics["train"], read_record(model_dir).config
        per_token = flops_per_token(name, config, model_dir)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    command = " ".join(["python -m", f"recipes.{module}", *flags_])
    return train["steady_tokens_per_second"], system / (user + system), config, command, per_token


def main(argv):
    del argv
    quick.shrink(recipes=["lm"], steps=20)
    peak = {dtype: matmul_flops(dtype) for dtype in ("float32", "bfloat16")}
    lines = [f"Matmul peak (2048 x 2048 x 2048, this program): float32 {peak['float32'] / 1e9:.0f} GFLOP/s, "
             f"bfloat16 {peak['bfloat16'] / 1e9:.0f} GFLOP/s.", "",
             "| recipe | dtype (auto) | allocator settings | steady tokens/s | kernel share of CPU time | speed-up "
             "| model GFLOP/s (share of the dtype's peak) |",
             "|---|---|---|---|---|---|---|"]
    commands = []
    for name in FLAGS.recipes:
        results = {}
        for setting, env in SETTINGS.items():
            results[setting] = measure(name, env, FLAGS.steps)
            print(f"{name}, {setting} allocator: {results[setting][0]:.0f} tokens/s", flush=True)
        base = results["TensorFlow's"][0]
        for setting, (speed, kernel, config, command, per_token) in results.items():
            dtype = config.train.mixed_precision
            achieved = "—" if per_token is None else (
                f"{speed * per_token / 1e9:.0f} ({speed * per_token / peak[dtype]:.0%})")
            lines.append(f"| {name} | {dtype} | {setting} | {speed:.0f} | {kernel:.0%} | {speed / base:.2f}x "
                         f"| {achieved} |")
        commands.append(f"- {name}: `{command} --train_steps={FLAGS.steps}`")
    note = ("Model GFLOP/s: steady tokens/s times the model's training FLOPs per counted token "
            "(`benchmarks/common/costs.py`: 6 x the forward multiply-adds, padding's work left out). Translation "
            "counts each pair's source tokens (with </s>) and decoder inputs (<s> + target); its FLOPs per token are "
            "those of all the run's tokenized training pairs over all their counted tokens (`seq2seq_multiply_adds`, "
            "self-attention's full square counted).")
    body = "\n".join(lines + ["", note, "", "Training commands (each run in a fresh process and a fresh --model_dir):",
                              *commands])
    write_section("CPU allocator", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
