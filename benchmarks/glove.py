r"""Pretrained word vectors against random initialisation (issue 49), in one program: the zoo's classifier with
its word vocabulary started from GloVe 6B 50d (`--word_vectors`) and the same model with random embeddings
(`--config.model.tokenizer=words --config.model.embedding_dim=50`), each over `--seeds`, beside the zoo's subword
model from scratch (benchmarks.sentiment's flags) and the NBSVM-style linear peer (benchmarks.transfer.nbsvm;
the `bench` extra). The models' flags are benchmarks.sentiment's for the dataset, with a word vocabulary of
--vocab_size; SST-2 reports its dev set, IMDB its test set (nothing here is tuned on it).

  python -m benchmarks.glove --datasets=sst2 --seeds=0,1
  python -m benchmarks.glove --datasets=imdb --seeds=0
"""

import os
import statistics

from absl import app, flags

from benchmarks import sentiment, transfer
from benchmarks.common.report import write_section

flags.DEFINE_list("datasets", ["sst2"], "Datasets (sst2, imdb).")
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
        results["NBSVM-style (linear)"] = [transfer.nbsvm(dataset)]
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


def main(argv):
    del argv
    vectors = FLAGS.vectors or os.path.join(os.environ.get("ZOO_DATA_DIR", "../shared/data"), "glove",
                                            "glove.6B.50d.txt.gz")
    for dataset in FLAGS.datasets:
        body = table(dataset, measure(dataset, vectors))
        write_section(f"Word vectors: {dataset}", body)
        print(body)


if __name__ == "__main__":
    app.run(main)
