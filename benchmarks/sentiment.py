r"""Sentiment quality and speed: the zoo's recipe against the keras.io peer.

Runs `recipes.sentiment` end to end (tokenizer, training, evaluation on the
reported split) as a user would, timing the whole, then the keras.io
"Text classification with Transformer" example (keras-hub layers,
TextVectorization 20k words / 200 tokens, 2 epochs) on the same splits.

  python -m benchmarks.sentiment --dataset=imdb
  python -m benchmarks.sentiment --dataset=sst2
"""

import subprocess
import sys
import tempfile
import time

from absl import app, flags

from benchmarks.common.report import ROOT, write_section
from zoo.runs.run_dir import RunDir

flags.DEFINE_enum("dataset", "imdb", ["imdb", "sst2"], "Dataset to benchmark.")
flags.DEFINE_list("recipe_flags", [], "Extra flags for the recipe (comma separated).")
flags.DEFINE_bool("peer", True, "Also run the keras.io peer.")
FLAGS = flags.FLAGS

# What the figures are reported on: IMDB's test set; SST-2's dev set (GLUE hides test labels).
REPORTED_SPLIT = {"imdb": "test", "sst2": "validation"}
RECIPE_FLAGS = {
    "imdb": ["--preset=small", "--vocab_size=16000", "--epochs=2", "--learning_rate=1.5e-3", "--warmup_steps=300",
             "--label_smoothing=0"],
    "sst2": ["--preset=small", "--vocab_size=8000", "--epochs=2", "--learning_rate=1e-3", "--warmup_steps=300"],
}


def run_zoo(dataset, extra):
    model_dir = tempfile.mkdtemp(prefix=f"bench_{dataset}_")
    flags_ = [f"--dataset={dataset}", f"--eval_split={REPORTED_SPLIT[dataset]}", *RECIPE_FLAGS[dataset], *extra]
    command = [sys.executable, "-m", "recipes.sentiment", *flags_, f"--model_dir={model_dir}"]
    began = time.time()
    subprocess.run(command, cwd=ROOT, check=True)
    seconds = time.time() - began
    metrics = RunDir(model_dir).read_metrics()
    return {
        "accuracy": metrics[f"eval_{REPORTED_SPLIT[dataset]}"]["accuracy"],
        "seconds": seconds,
        "train_seconds": metrics["train"]["seconds"],
        "tokens_per_second": metrics["train"]["tokens_per_second"],
        "command": " ".join(["python -m recipes.sentiment", *flags_, f"--model_dir=runs/{dataset}"]),
    }


def run_peer(dataset):
    """keras.io's Transformer text classifier, built from keras-hub layers, trained with model.fit."""
    import keras
    import keras_hub
    import numpy as np

    from zoo.data import datasets

    began = time.time()
    train = datasets.load_classification(dataset, "train")
    test = datasets.load_classification(dataset, REPORTED_SPLIT[dataset])
    vectorize = keras.layers.TextVectorization(20000, output_sequence_length=200)
    vectorize.adapt(train.texts, batch_size=1024)
    x_train, x_test = vectorize(np.asarray(train.texts)), vectorize(np.asarray(test.texts))
    inputs = keras.Input((200,), dtype="int32")
    x = keras_hub.layers.TokenAndPositionEmbedding(20000, 200, 32)(inputs)
    x = keras_hub.layers.TransformerEncoder(intermediate_dim=32, num_heads=2)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dropout(0.1)(x)
    x = keras.layers.Dense(20, activation="relu")(x)
    x = keras.layers.Dropout(0.1)(x)
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(x))
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, train.labels, batch_size=32, epochs=2, verbose=2)
    _, accuracy = model.evaluate(x_test, test.labels, verbose=0)
    return {"accuracy": float(accuracy), "seconds": time.time() - began}


def main(argv):
    del argv
    dataset = FLAGS.dataset
    zoo = run_zoo(dataset, FLAGS.recipe_flags)
    rows = [f"| zoo `recipes.sentiment` | {zoo['accuracy']:.2%} | {zoo['seconds']:.0f} s | {zoo['tokens_per_second']:.0f} |"]
    if FLAGS.peer:
        peer = run_peer(dataset)
        rows.append(f"| keras.io Transformer (keras-hub layers, 200 tokens, 2 epochs) | {peer['accuracy']:.2%} | "
                    f"{peer['seconds']:.0f} s | – |")
    split = {"test": "test", "validation": "dev"}[REPORTED_SPLIT[dataset]]
    body = (
        f"Accuracy on the {dataset} {split} set; wall clock from start to the last figure, data loading, "
        "tokenizer, training and evaluation included.\n\n"
        "| model | accuracy | wall clock | training tokens/s |\n|---|---|---|---|\n" + "\n".join(rows)
        + f"\n\nThe zoo's run: `{zoo['command']}` (training alone: {zoo['train_seconds']:.0f} s)."
    )
    write_section(f"sentiment: {dataset}", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
