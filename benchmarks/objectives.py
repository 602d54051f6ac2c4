r"""Which pretraining objective `recipes.pretrain` defaults to: masked LM and ELECTRA pretrained for
about the same wall clock on the same corpus, each encoder fine-tuned with the same flags, compared
on validation splits only (IMDB's held-out 5% of train; sst2_tune, SST-2's train with every 20th
sentence held out). No test split is read.

A shorter budget than benchmarks.transfer's (sequences of 128 tokens; fewer ELECTRA steps, since each one
also runs the generator), so that both objectives fit one session.

  python -m benchmarks.objectives
  python -m benchmarks.objectives --quick   # a smoke run: masked LM alone, sst2_tune alone, a few steps each
"""

import os
import time

from absl import app, flags

from benchmarks.common import quick, runs
from benchmarks.common.recipe_flags import PRETRAIN_SHORT, with_values
from benchmarks.common.report import ROOT, write_section
from benchmarks.transfer import FINE_TUNE_FLAGS, PRETRAIN_FLAGS

flags.DEFINE_list("objectives", ["mlm", "electra"], "Objectives to compare.")
flags.DEFINE_string("run_dir", None, "Where the runs go (default runs/bench_objectives).")
FLAGS = flags.FLAGS

STEPS = {"mlm": 3000, "electra": 2000}
# Fine-tuning: IMDB's flags of benchmarks.transfer (chosen on its validation split), for both tasks.
TASKS = {"IMDB validation": "imdb", "sst2_tune validation": "sst2_tune"}


def pretrain_flags(objective):
    flags_ = with_values(PRETRAIN_FLAGS, {**PRETRAIN_SHORT, "train_steps": STEPS[objective], "objective": objective})
    return quick.training(flags_, **quick.PRETRAINING)


def main(argv):
    del argv
    quick.shrink(objectives=["mlm"])
    run_dir = FLAGS.run_dir or (quick.folder("objectives") if quick.active() else
                                os.path.join(ROOT, "runs", "bench_objectives"))
    tasks = {"sst2_tune validation": "sst2_tune"} if quick.active() else TASKS
    rows, commands = [], []
    for objective in FLAGS.objectives:
        pretrain_dir = os.path.join(run_dir, f"pretrain_{objective}")
        flags_ = pretrain_flags(objective)
        runs.train_unless_finished("pretrain", pretrain_dir, flags_)
        pretrained = runs.run_recipe("pretrain", pretrain_dir, "--mode=eval")
        held_out = pretrained["eval_held_out"]
        commands.append(f"- pretraining ({objective}): `python -m recipes.pretrain {' '.join(flags_)} "
                        f"--model_dir={pretrain_dir}`")
        accuracies = []
        for name, dataset in tasks.items():
            tune_dir = os.path.join(run_dir, f"{objective}_{dataset}")
            tune_flags = [f"--dataset={dataset}", *FINE_TUNE_FLAGS["imdb"], f"--init_from={pretrain_dir}"]
            tune_flags = quick.training(tune_flags, max_examples=quick.EXAMPLES)
            began = time.time()
            runs.train_unless_finished("sentiment", tune_dir, tune_flags)
            metrics = runs.run_recipe("sentiment", tune_dir, "--mode=eval", "--eval_split=validation")
            accuracies.append(f"{metrics['eval_validation']['accuracy']:.2%} ({(time.time() - began) / 60:.1f} min)")
            commands.append(f"- {name} ({objective}): `python -m recipes.sentiment {' '.join(tune_flags)} "
                            f"--model_dir={tune_dir}`")
        figures = ", ".join(f"{k} {v:.4f}" for k, v in held_out.items() if isinstance(v, float))
        rows.append(
            f"| {objective} | {held_out['step']} | {pretrained['train']['seconds'] / 60:.1f} min "
            f"({pretrained['train']['tokens_per_second']:.0f} tokens/s) | {figures} | {' | '.join(accuracies)} |"
        )
    body = "\n".join([
        "| objective | steps | pretraining | held-out | " + " | ".join(f"fine-tuned: {t}" for t in tasks) + " |",
        "|---|---|---|---|" + "---|" * len(tasks),
        *rows, "", "Commands:", *commands,
    ])
    write_section("Transfer learning: objectives", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
