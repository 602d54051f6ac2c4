r"""Pretrained word vectors against random initialisation (issue 49), in one program: the zoo's classifier with
its word vocabulary started from GloVe 6B 50d (`--word_vectors`) and the same model with random embeddings
(`--config.model.tokenizer=words --config.model.embedding_dim=50`), each over `--seeds`, beside the zoo's subword
model from scratch (benchmarks.sentiment's flags) and the NBSVM-style linear peer (benchmarks.common.nbsvm;
the `bench` extra). The models' flags are benchmarks.sentiment's for the dataset, with a word vocabulary of
--vocab_size; SST-2 reports its dev set, IMDB its test set (nothing here is tuned on it).

Penn Treebank (`ptb`): `recipes.lm` at word level with LM_FLAGS, its token embedding started from the vectors
(`--word_vectors`) against the same factorized model (`--config.model.embedding_dim=50`) from a random table,
each seed's run in runs/bench_glove_ptb_<arm>_seed<N> (a finished one is reused, a cut one resumes); validation
and test perplexity with the training memory.

  python -m benchmarks.glove --datasets=sst2 --seeds=0,1
  python -m benchmarks.glove --datasets=imdb --seeds=0
  python -m benchmarks.glove --datasets=ptb --seeds=0
  python -m benchmarks.glove --quick   # a smoke run: SST-2, seed 0, the word-level arms and NBSVM on a tiny slice
"""

import os
import statistics

from absl import app, flags

from benchmarks import sentiment
from benchmarks.common import nbsvm, quick, runs
from benchmarks.common.report import ROOT, write_section

flags.DEFINE_list("datasets", ["sst2"], "Datasets (sst2, imdb, ptb).")
flags.DEFINE_list("seeds", ["0", "1"], "Seeds of each word-level arm.")
flags.DEFINE_integer("vocab_size", 20000, "Word vocabulary of both word-level arms.")
flags.DEFINE_string("vectors", None, "The vectors file (default: $ZOO_DATA_DIR/glove/glove.6B.50d.txt.gz).")
flags.DEFINE_list("baselines", ["scratch", "nbsvm"], "Baselines run in the same program: scratch (the subword model), nbsvm.")
FLAGS = flags.FLAGS


def arms(vectors):
    """Flags of the two word-level arms, beyond benchmarks.sentiment's."""
    words = [f"--vocab_size={FLAGS.vocab_size}"]
    return {"GloVe 6B 50d": [*words, f"--word_vectors={vectors}"],
            "random": [*words, "--config.model.tokenizer=words", "--config.model.embedding_dim=50"]}


def measure(dataset, vectors):
    results = {}
    for arm, extra in arms(vectors).items():
        for seed in FLAGS.seeds:
            run = sentiment.run_zoo(dataset, [*extra, f"--seed={seed}"])
            print(f"{dataset} {arm} seed {seed}: {run['accuracy']:.2%}", flush=True)
            results.setdefault(arm, []).append(run)
    if "scratch" in FLAGS.baselines:
        results["subword, from scratch"] = [sentiment.run_zoo(dataset, [])]
    if "nbsvm" in FLAGS.baselines:
        limit = quick.EXAMPLES if quick.active() else None
        results["NBSVM-style (linear)"] = [nbsvm.accuracy(dataset, sentiment.REPORTED_SPLIT[dataset], limit)]
    return results


def table(dataset, results):
    split = {"test": "test", "validation": "dev"}[sentiment.REPORTED_SPLIT[dataset]]
    rows = []
    for arm, runs in results.items():
        accuracies = [run["accuracy"] for run in runs]
        each = ", ".join(f"{a:.2%}" for a in accuracies)
        minutes = statistics.mean(run.get("train_seconds", run["seconds"]) for run in runs) / 60
        rows.append(f"| {arm} | **{statistics.mean(accuracies):.2%}** | {each} | {minutes:.1f} min |")
    glove = statistics.mean(r["accuracy"] for r in results["GloVe 6B 50d"])
    random = statistics.mean(r["accuracy"] for r in results["random"])
    commands = "\n".join(f"- {arm}: `{runs[0]['command']}`" for arm, runs in results.items() if "command" in runs[0])
    return (f"{dataset} {split} accuracy, mean of the seeds ({', '.join(FLAGS.seeds)}) for the word-level arms; time: "
            "training alone (NBSVM: all of it).\n\n| model | accuracy | each run | time |\n|---|---|---|---|\n"
            + "\n".join(rows) + f"\n\nGloVe minus random: **{(glove - random) * 100:+.2f} points**.\n\n{commands}")


# Penn Treebank's language model: the `small` shape, about 1.3 passes over the training text (600 steps of 32
# segments of 64 words), a short run lightly regularised; the same for both arms.
LM_FLAGS = ["--dataset=ptb", "--level=word", "--preset=small", "--batch_size=32", "--dropout=0.1",
            "--attention_dropout=0.1", "--weight_decay=0.1", "--learning_rate=1e-3", "--warmup_steps=100",
            "--schedule=cosine", "--train_steps=600", "--random_offset=false", "--checkpoint_every=200"]


def lm_arms(vectors):
    return {"GloVe 6B 50d": [f"--word_vectors={vectors}"], "random": ["--config.model.embedding_dim=50"]}


def run_lm(arm, extra, seed):
    """Trains (or reuses, or resumes) one arm's run and evaluates validation and test with the training memory."""
    name = "glove" if arm.startswith("GloVe") else "random"
    run_dir = os.path.join(ROOT, "runs", f"bench_glove_ptb_{name}_seed{seed}")
    run_dir = quick.folder(name) if quick.active() else run_dir
    flags_ = quick.training([*LM_FLAGS, *extra, f"--seed={seed}"])
    runs.train_unless_finished("lm", run_dir, flags_, checked=[f for f in flags_ if not f.startswith("--config.")])
    figures = {split: runs.evaluation("lm", run_dir, f"eval_{split}", f"--eval_split={split}", reuse="any")[
        "train_memory"]["perplexity"] for split in ("validation", "test")}
    train = runs.read_metrics(run_dir)["train"]
    return {**figures, "train_seconds": train["seconds"],
            "command": runs.command("lm", flags_, f"runs/{os.path.basename(run_dir)}")}


def lm_table(vectors):
    results = {}
    for arm, extra in lm_arms(vectors).items():
        for seed in FLAGS.seeds:
            run = run_lm(arm, extra, seed)
            print(f"ptb {arm} seed {seed}: validation {run['validation']:.2f}, test {run['test']:.2f}", flush=True)
            results.setdefault(arm, []).append(run)
    rows = []
    for arm, runs in results.items():
        mean = {split: statistics.mean(run[split] for run in runs) for split in ("validation", "test")}
        each = ", ".join(f"{run['validation']:.2f} / {run['test']:.2f}" for run in runs)
        minutes = statistics.mean(run["train_seconds"] for run in runs) / 60
        rows.append(f"| {arm} | **{mean['validation']:.2f}** | **{mean['test']:.2f}** | {each} | {minutes:.1f} min |")
    commands = "\n".join(f"- {arm}: `{runs[0]['command']}`" for arm, runs in results.items())
    return (f"Penn Treebank, word level: perplexity with the training memory, mean of the seeds ({', '.join(FLAGS.seeds)})"
            "; time: training alone.\n\n| token embedding | validation | test | each run (validation / test) | time |\n"
            "|---|---|---|---|---|\n" + "\n".join(rows) + f"\n\n{commands}")


def main(argv):
    del argv
    quick.shrink(seeds=["0"], baselines=["nbsvm"])
    vectors = FLAGS.vectors or os.path.join(os.environ.get("ZOO_DATA_DIR", "../shared/data"), "glove",
                                            "glove.6B.50d.txt.gz")
    for dataset in FLAGS.datasets:
        body = lm_table(vectors) if dataset == "ptb" else table(dataset, measure(dataset, vectors))
        write_section(f"Word vectors: {dataset}", body)
        print(body)


if __name__ == "__main__":
    app.run(main)
