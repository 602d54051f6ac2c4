r"""Which pretraining objective `recipes.pretrain` defaults to: masked LM and ELECTRA pretrained for
about the same wall clock on the same corpus, each encoder fine-tuned with the same flags, compared
on validation splits only (IMDB's held-out 5% of train; sst2_tune, SST-2's train with every 20th
sentence held out). No test split is read.

A shorter budget than benchmarks.transfer's (sequences of 128 tokens; fewer ELECTRA steps, since each one
also runs the generator), so that both objectives fit one session.

  python -m benchmarks.objectives
"""

import os
import time

from absl import app, flags

from benchmarks.common.recipe_flags import PRETRAIN_SHORT, with_values
from benchmarks.common.report import ROOT, finished_run, write_section
from benchmarks.transfer import FINE_TUNE_FLAGS, PRETRAIN_FLAGS, recipe

flags.DEFINE_list("objectives", ["mlm", "electra"], "Objectives to compare.")
flags.DEFINE_string("run_dir", None, "Where the runs go (default runs/bench_objectives).")
FLAGS = flags.FLAGS

STEPS = {"mlm": 3000, "electra": 2000}
# Fine-tuning: IMDB's flags of benchmarks.transfer (chosen on its validation split), for both tasks.
TASKS = {"IMDB validation": "imdb", "sst2_tune validation": "sst2_tune"}


def pretrain_flags(objective):
    return with_values(PRETRAIN_FLAGS, {**PRETRAIN_SHORT, "train_steps": STEPS[objective], "objective": objective})


def main(argv):
    del argv
    run_dir = FLAGS.run_dir or os.path.join(ROOT, "runs", "bench_objectives")
    rows, commands = [], []
    for objective in FLAGS.objectives:
        pretrain_dir = os.path.join(run_dir, f"pretrain_{objective}")
        flags_ = pretrain_flags(objective)
        if not finished_run(pretrain_dir, flags_):
            recipe("pretrain", flags_, pretrain_dir, "--mode=train")
        pretrained = recipe("pretrain", [], pretrain_dir, "--mode=eval")
        held_out = pretrained["eval_held_out"]
        commands.append(f"- pretraining ({objective}): `python -m recipes.pretrain {' '.join(flags_)} "
                        f"--model_dir={pretrain_dir}`")
        accuracies = []
        for name, dataset in TASKS.items():
            tune_dir = os.path.join(run_dir, f"{objective}_{dataset}")
            tune_flags = [f"--dataset={dataset}", *FINE_TUNE_FLAGS["imdb"], f"--init_from={pretrain_dir}"]
            began = time.time()
            if not finished_run(tune_dir, tune_flags):
                recipe("sentiment", tune_flags, tune_dir, "--mode=train")
            metrics = recipe("sentiment", [], tune_dir, "--mode=eval", "--eval_split=validation")
            accuracies.append(f"{metrics['eval_validation']['accuracy']:.2%} ({(time.time() - began) / 60:.1f} min)")
            commands.append(f"- {name} ({objective}): `python -m recipes.sentiment {' '.join(tune_flags)} "
                            f"--model_dir={tune_dir}`")
        figures = ", ".join(f"{k} {v:.4f}" for k, v in held_out.items() if isinstance(v, float))
        rows.append(
            f"| {objective} | {held_out['step']} | {pretrained['train']['seconds'] / 60:.1f} min "
            f"({pretrained['train']['tokens_per_second']:.0f} tokens/s) | {figures} | {' | '.join(accuracies)} |"
        )
    body = "\n".join([
        "| objective | steps | pretraining | held-out | " + " | ".join(f"fine-tuned: {t}" for t in TASKS) + " |",
        "|---|---|---|---|" + "---|" * len(TASKS),
        *rows, "", "Commands:", *commands,
    ])
    write_section("Transfer learning: objectives", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
