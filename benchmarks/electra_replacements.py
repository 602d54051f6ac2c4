r"""What ELECTRA's discriminator learns from each kind of replacement: the same ELECTRA pretraining
(benchmarks.objectives' shorter budget, --steps steps) with the masked positions filled three ways, each run
evaluated on the held-out split with its own kind of replacement:
- generator: ELECTRA's own, samples from the generator's masked-LM softmax;
- uniform: regular tokens drawn uniformly from the vocabulary (mostly rare ones: the token alone gives it away);
- unigram: tokens drawn from the batch's own masked tokens, i.e. from the corpus's unigram distribution, which
  a generator on the masked LM's unigram plateau approaches: only context tells such a token apart.
Everything else is the recipe's: masking, labels (a replacement equal to the original counts as original),
losses, evaluation. Only the proposals change (`zoo.pretraining.model.sample`, replaced in the worker process).

  python -m benchmarks.electra_replacements
  python -m benchmarks.electra_replacements --quick   # a smoke run: uniform replacements, two steps on SST-2
"""

import os
import sys

from absl import app, flags

from benchmarks.common import quick, runs
from benchmarks.common.recipe_flags import PRETRAIN, PRETRAIN_SHORT, with_values
from benchmarks.common.report import ROOT, write_section

KINDS = ("generator", "uniform", "unigram")
WORKER = "--replacements="  # the worker's first argument: `recipes.pretrain` with the proposals replaced

flags.DEFINE_list("kinds", list(KINDS), "Kinds of replacement to compare.")
flags.DEFINE_integer("steps", 600, "Pretraining steps of each run.")
flags.DEFINE_string("out_dir", None, "Where the runs go (default runs/bench_electra_replacements).")
FLAGS = flags.FLAGS


def proposals(kind):
    """A stand-in for `zoo.pretraining.model.sample(logits, seed, first_regular_id)` drawing `kind` replacements:
    (sample, remember), where the Pretrainer's call must hand its batch to remember(batch) first."""
    import tensorflow as tf

    seen = {}

    def sample(logits, seed, first_regular_id):
        shape, seed = tf.shape(logits)[:-1], tf.cast(seed, tf.int64)
        if kind == "uniform":
            return tf.random.stateless_uniform(shape, seed, first_regular_id, tf.shape(logits)[-1], dtype=tf.int32)
        batch = seen["batch"]  # unigram: the chosen positions' original tokens of the whole batch, one drawn for each
        pool = tf.boolean_mask(batch["mask_ids"], batch["mask_weights"] > 0)
        return tf.gather(pool, tf.random.stateless_uniform(shape, seed, 0, tf.shape(pool)[0], dtype=tf.int32))

    return sample, lambda batch: seen.update(batch=batch)


def replace_proposals(kind):
    """Makes every Pretrainer of this process propose `kind` replacements (generator: leaves them as they are)."""
    from zoo.pretraining import model as pretraining

    if kind == "generator":
        return
    sample, remember = proposals(kind)
    call = pretraining.Pretrainer.call

    def remembering_call(self, batch, training=None):
        remember(batch)
        return call(self, batch, training=training)

    pretraining.sample = sample  # Pretrainer.call finds `sample` among its module's globals
    pretraining.Pretrainer.call = remembering_call


def worker(kind):
    """Runs `recipes.pretrain` (the remaining arguments) with `kind` proposals, as `python -m recipes.pretrain`
    runs it (its flags and its main, whatever they are)."""
    import runpy

    replace_proposals(kind)
    runpy.run_module("recipes.pretrain", run_name="__main__", alter_sys=True)


def worker_program(kind):
    """runs.run_recipe's keywords that run this program's worker with `kind` proposals in place of recipes.pretrain
    (the worker's first argument names the kind)."""
    return {"program": ["benchmarks.electra_replacements", f"{WORKER}{kind}"]}


def main(argv):
    del argv
    unknown = set(FLAGS.kinds) - set(KINDS)
    if unknown:
        raise app.UsageError(f"--kinds: unknown {sorted(unknown)}; use {', '.join(KINDS)}.")
    quick.shrink(kinds=["uniform"])
    out_dir = FLAGS.out_dir or (quick.folder("electra") if quick.active() else
                                os.path.join(ROOT, "runs", "bench_electra_replacements"))
    flags_ = with_values(PRETRAIN, {**PRETRAIN_SHORT, "train_steps": FLAGS.steps, "objective": "electra"})
    flags_ = quick.training(flags_, **quick.PRETRAINING)
    rows = ["| replacements | replaced-token recall | detection loss | prior's loss | P(replaced): replaced / "
            "original tokens | generator's masked perplexity |", "|---|---|---|---|---|---|"]
    for kind in FLAGS.kinds:
        model_dir = os.path.join(out_dir, kind)
        runs.train_unless_finished("pretrain", model_dir, flags_, **worker_program(kind))
        h = runs.run_recipe("pretrain", model_dir, "--mode=eval", **worker_program(kind))["eval_held_out"]
        rows.append(f"| {kind} | {h['replaced_recall']:.3f} | {h['detection_loss']:.3f} | "
                    f"{h['detection_prior_loss']:.3f} | {h['replaced_probability']:.2f} / "
                    f"{h['original_probability']:.2f} | {h['masked_perplexity']:.0f} |")
    shown = os.path.relpath(out_dir, ROOT)
    body = "\n".join([
        f"Each run: `python -m benchmarks.electra_replacements --replacements=KIND {' '.join(flags_)} "
        f"--model_dir={shown}/KIND` (`recipes.pretrain` with KIND's proposals), then `--mode=eval` the same way.",
        "", *rows])
    write_section("ELECTRA: replacements", body)
    print(body)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith(WORKER):
        worker(sys.argv.pop(1)[len(WORKER):])
    else:
        app.run(main)
