r"""Transfer learning: fine-tune a published checkpoint (default: all-MiniLM-L6-v2, `benchmarks.common.minilm`),
or an encoder the zoo pretrains itself on unlabeled IMDB text, on IMDB and SST-2, against the
strongest peers a user would pick instead, in the same run.

With --checkpoint (the default):
1. Fine-tuning the checkpoint: `recipes.sentiment --init_from` with `recipe_flags.PUBLISHED`, on IMDB
   (test accuracy; its validation split is the held-out 5% of train) and SST-2 (trained on sst2_tune,
   whose held-out 5% is its validation split; dev accuracy reported).
2. Its fine-tuning speed against keras-hub's BertBackbone of the same sizes (`benchmarks.published`).
With --checkpoint= (empty): the zoo's own pretraining, `recipes.pretrain` with PRETRAIN_FLAGS (or a
finished run in --pretrain_dir made with them), its held-out figures, then fine-tuning it with
FINE_TUNE_FLAGS.
Peers on the same splits (--peers): an NBSVM-style linear model (binarized uni+bigram counts weighted
by naive-Bayes log-count ratios, logistic regression; Wang & Manning 2012; needs the `bench` extra:
pip install -e ".[bench]"), the zoo's from-scratch recipe (benchmarks.sentiment's flags) and, with a
checkpoint, the zoo's own pretrained encoder fine-tuned (finished runs reused).

  python -m benchmarks.transfer
  python -m benchmarks.transfer --checkpoint= --objective=electra --peers=
  python -m benchmarks.transfer --quick --checkpoint=   # a smoke run: SST-2 alone, no peers, a few steps each
"""

import os
import time

from absl import app, flags

from benchmarks.common import nbsvm, quick, recipe_flags, runs
from benchmarks.common.minilm import minilm_folder
from benchmarks.common.report import ROOT, write_section

flags.DEFINE_string("checkpoint", "minilm", "The published checkpoint to fine-tune (a folder, hf:ORG/NAME, "
                    "keras_hub:PRESET; minilm: all-MiniLM-L6-v2 from the bench extra); empty: pretrain the zoo's own.")
flags.DEFINE_enum("objective", "mlm", ["mlm", "electra"], "Pretraining objective.")
flags.DEFINE_string("pretrain_dir", None, "Pretraining run directory (default runs/bench_pretrain_<objective>); a "
                    "finished run made with PRETRAIN_FLAGS is reused.")
flags.DEFINE_string("fine_tune_dir", None, "Where the fine-tuning runs go (default runs/bench_transfer_<objective>).")
flags.DEFINE_list("tasks", ["imdb", "sst2"], "Datasets to fine-tune on.")
flags.DEFINE_list("peers", ["nbsvm", "scratch", "pretrained"], "Peers to run in the same program: nbsvm (the "
                  "NBSVM-style linear model), scratch (the zoo's recipe trained from scratch) and, with --checkpoint, "
                  "pretrained (the zoo's own pretrained encoder fine-tuned); empty for none.")
FLAGS = flags.FLAGS

# The compute dtype is --mixed_precision=auto's: bfloat16 where the CPU runs it natively, float32 where it would be
# emulated.
PRETRAIN_FLAGS = recipe_flags.PRETRAIN
# Fewer ELECTRA steps: each one runs the generator besides the discriminator, so both fit one pretraining budget.
PRETRAIN_STEPS = {"mlm": 6000, "electra": 5000}
FINE_TUNE_FLAGS = {
    # Chosen on IMDB's validation split: the from-scratch recipe's rate, no layer decay.
    "imdb": ["--epochs=2", "--batch_size=32", "--learning_rate=1.5e-3", "--warmup_steps=300", "--label_smoothing=0"],
    "sst2": ["--epochs=2", "--batch_size=32", "--learning_rate=3e-4", "--warmup_steps=400", "--schedule=cosine",
             "--layer_decay=0.8", "--label_smoothing=0"],
}
REPORTED_SPLIT = {"imdb": "test", "sst2": "validation"}
SPLIT_NAME = {"imdb": "IMDB test", "sst2": "SST-2 dev"}


def pretrain(run_dir, objective):
    flags_ = quick.training([*PRETRAIN_FLAGS, f"--train_steps={PRETRAIN_STEPS[objective]}", f"--objective={objective}"],
                            **quick.PRETRAINING)
    runs.train_unless_finished("pretrain", run_dir, flags_)
    metrics = runs.run_recipe("pretrain", run_dir, "--mode=eval")
    return metrics, runs.relative(runs.command("pretrain", flags_, run_dir))


def fine_tune(dataset, pretrain_dir, run_dir):
    return fine_tune_with([f"--dataset={dataset}", *FINE_TUNE_FLAGS[dataset], f"--init_from={pretrain_dir}"],
                          dataset, run_dir)


def fine_tune_with(flags_, dataset, run_dir):
    """Trains (or reuses) the sentiment run of `flags_` in run_dir, evaluates its own validation split
    and `dataset`'s reported split (which may be another dataset's: SST-2 dev for sst2_tune)."""
    began = time.time()
    flags_ = quick.training(flags_, max_examples=quick.EXAMPLES)
    runs.train_unless_finished("sentiment", run_dir, flags_)
    validation = evaluation(run_dir, "eval_validation", "--eval_split=validation")
    trained_on = next(f.split("=", 1)[1] for f in flags_ if f.startswith("--dataset="))
    split = REPORTED_SPLIT[dataset]
    reported = f"eval_{split}" if trained_on == dataset else f"eval_{dataset}_{split}"
    accuracy = evaluation(run_dir, reported, f"--dataset={dataset}", f"--eval_split={split}")
    return {
        "validation": validation["accuracy"],
        "accuracy": accuracy["accuracy"],
        "train_seconds": runs.read_metrics(run_dir)["train"]["seconds"],
        "seconds": time.time() - began,
        "command": runs.relative(runs.command("sentiment", flags_, run_dir)),
    }


def evaluation(run_dir, key, *eval_flags):
    """metrics.json's `key` entry of the run in run_dir (eval_validation, eval_test, eval_sst2_validation...),
    evaluated by the recipe with eval_flags unless the run already holds it for its last training step and
    its last checkpoint alone: evaluation is deterministic, and long (IMDB's test split at 512 tokens)."""
    return runs.evaluation("sentiment", run_dir, key, *eval_flags, reuse="current")


def nbsvm_peer(dataset):
    """The NBSVM-style linear model (benchmarks.common.nbsvm) on the dataset's reported split."""
    return nbsvm.accuracy(dataset, REPORTED_SPLIT[dataset], quick.EXAMPLES if quick.active() else None)


def scratch(dataset):
    """The zoo's from-scratch recipe with benchmarks.sentiment's flags."""
    from benchmarks.sentiment import run_zoo

    return run_zoo(dataset, [])


PEERS = {"nbsvm": nbsvm_peer, "scratch": scratch}


def pretrained_peer(dataset):
    """The zoo's own pretrained encoder (this program's --checkpoint= mode) fine-tuned, reusing finished runs."""
    runs_dir = quick.folder("transfer") if quick.active() else os.path.join(ROOT, "runs")
    pretrain_dir = os.path.join(runs_dir, f"bench_pretrain_{FLAGS.objective}")
    pretrain(pretrain_dir, FLAGS.objective)
    return fine_tune(dataset, pretrain_dir, os.path.join(runs_dir, f"bench_transfer_{FLAGS.objective}", dataset))


def published_main(checkpoint):
    """Fine-tunes the published checkpoint on each task beside the peers; then its speed against keras-hub."""
    from benchmarks.common.finetune_speed import speed_lines

    folder = minilm_folder() if checkpoint == "minilm" else checkpoint
    fine_tune_dir = FLAGS.fine_tune_dir or quick_or(os.path.join(ROOT, "runs", "bench_transfer_published"))
    peers = {**PEERS, "pretrained": pretrained_peer}
    shown = os.path.relpath(folder, ROOT) if os.path.isdir(folder) else folder
    lines = [f"Checkpoint: `{shown}`" + (" (sentence-transformers' all-MiniLM-L6-v2, sha256 checked)."
                                         if checkpoint == "minilm" else "."), "",
             "| task | checkpoint fine-tuned | its validation split | fine-tuning | zoo from scratch | "
             "zoo pretrained + fine-tuned | NBSVM-style |", "|---|---|---|---|---|---|---|"]
    commands = []
    for dataset in FLAGS.tasks:
        flags_ = [*recipe_flags.PUBLISHED[dataset], f"--init_from={folder}"]
        tuned = fine_tune_with(flags_, dataset, os.path.join(fine_tune_dir, dataset))
        commands.append(f"- {SPLIT_NAME[dataset]}: `{tuned['command']}`")
        results = {name: "not run" for name in peers}
        for name in FLAGS.peers:
            result = peers[name](dataset)
            results[name] = f"{result['accuracy']:.2%} ({result.get('train_seconds', result['seconds']) / 60:.1f} min)"
        lines.append(f"| {SPLIT_NAME[dataset]} | **{tuned['accuracy']:.2%}** | {tuned['validation']:.2%} | "
                     f"{tuned['train_seconds'] / 60:.1f} min | {results['scratch']} | {results['pretrained']} | "
                     f"{results['nbsvm']} |")
    lines += ["", "Fine-tuning commands:", *commands]
    if "imdb" in FLAGS.tasks:
        lines += ["", latency_line(os.path.join(fine_tune_dir, "imdb"))]
    sizes = dict(batch_size=2, length=16, steps=1) if quick.active() else dict(batch_size=32, length=256, steps=5)
    lines += ["", *speed_lines(folder, **sizes)]
    body = "\n".join(lines)
    write_section("Transfer learning: published checkpoint", body)
    print(body)


def latency_line(run_dir):
    """A sentence: serving latency of the fine-tuned IMDB run's export against a `small` zoo classifier's
    (trained one step: latency does not depend on the weights), each in a fresh TensorFlow process."""
    import tempfile

    from benchmarks.common.latency import export_latency
    from zoo.data import datasets

    reviews = datasets.load_classification("imdb", "test").texts[:64]
    with tempfile.TemporaryDirectory() as scratch:
        tuned_export, small_dir = os.path.join(scratch, "tuned"), os.path.join(scratch, "small")
        runs.run_recipe("sentiment", run_dir, "--mode=export", f"--export_dir={tuned_export}")
        runs.run_recipe("sentiment", small_dir, "--dataset=imdb", "--preset=small", "--train_steps=1",
                        "--max_examples=2000", "--mode=train", f"--export_dir={os.path.join(scratch, 'small_export')}")
        tuned, small = export_latency(tuned_export, reviews), export_latency(os.path.join(scratch, "small_export"), reviews)
    return (f"Serving latency of the fine-tuned IMDB export (median of 10 calls, fresh TensorFlow process with TF Text): "
            f"one review {tuned[1] * 1000:.0f} ms, a batch of 64 test reviews {tuned[64] * 1000:.0f} ms; the zoo's "
            f"`small` classifier: {small[1] * 1000:.0f} ms and {small[64] * 1000:.0f} ms.")


def quick_or(run_dir):
    """run_dir, or in a --quick run a fresh temporary folder of the same name."""
    return os.path.join(quick.folder("transfer"), os.path.basename(run_dir)) if quick.active() else run_dir


def main(argv):
    del argv
    quick.shrink(tasks=["sst2"], peers=[])
    unknown = set(FLAGS.peers) - set(PEERS) - {"pretrained"}
    if unknown:
        raise app.UsageError(f"--peers: unknown {sorted(unknown)}; use nbsvm, scratch, pretrained.")
    if FLAGS.checkpoint:
        return published_main(FLAGS.checkpoint)
    objective = FLAGS.objective
    pretrain_dir = FLAGS.pretrain_dir or quick_or(os.path.join(ROOT, "runs", f"bench_pretrain_{objective}"))
    pretrain_dir = os.path.abspath(pretrain_dir)
    fine_tune_dir = FLAGS.fine_tune_dir or quick_or(os.path.join(ROOT, "runs", f"bench_transfer_{objective}"))
    pretrained, pretrain_command = pretrain(pretrain_dir, objective)
    held_out = pretrained["eval_held_out"]
    lines = [
        f"Pretraining ({objective}): `{pretrain_command}` — {held_out['step']} steps, "
        f"{pretrained['train']['seconds'] / 60:.1f} min of training ({pretrained['train']['tokens_per_second']:.0f} "
        f"tokens/s); held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in held_out.items() if isinstance(v, float)) + ".",
        "",
        "| task | zoo pretrained + fine-tuned | its validation split | fine-tuning | zoo from scratch | NBSVM-style |",
        "|---|---|---|---|---|---|",
    ]
    commands = []
    for dataset in FLAGS.tasks:
        tuned = fine_tune(dataset, pretrain_dir, os.path.join(fine_tune_dir, dataset))
        commands.append(f"- {SPLIT_NAME[dataset]}: `{tuned['command']}`")
        peers = {"scratch": "not run", "nbsvm": "not run"}
        for name in set(FLAGS.peers) & set(PEERS):
            result = PEERS[name](dataset)
            peers[name] = f"{result['accuracy']:.2%} ({result['seconds']:.0f} s)"
        lines.append(
            f"| {SPLIT_NAME[dataset]} | **{tuned['accuracy']:.2%}** | {tuned['validation']:.2%} | "
            f"{tuned['train_seconds'] / 60:.1f} min | {peers['scratch']} | {peers['nbsvm']} |"
        )
    body = "\n".join(lines + ["", "Fine-tuning commands:", *commands])
    write_section(f"Transfer learning: {objective}", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
