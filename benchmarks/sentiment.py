r"""Sentiment quality and speed: the zoo's recipe against the keras.io peer.

Runs `recipes.sentiment` end to end (tokenizer, training, evaluation on the
reported split) as a user would, timing the whole, then the keras.io
"Text classification with Transformer" example (keras-hub layers,
TextVectorization 20k words / 200 tokens, 2 epochs) on the same splits.

  python -m benchmarks.sentiment --dataset=imdb
  python -m benchmarks.sentiment --dataset=sst2
  python -m benchmarks.sentiment --quick   # a smoke run: SST-2, 200 examples, 2 steps, the peer on 200 texts
"""

import tempfile
import time

from absl import app, flags

from benchmarks.common import quick, runs
from benchmarks.common.report import write_section

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
    """The recipe end to end (its default mode: training, then the reported split) in a fresh folder, timed."""
    model_dir = tempfile.mkdtemp(prefix=f"bench_{dataset}_")
    flags_ = quick.training([f"--dataset={dataset}", f"--eval_split={REPORTED_SPLIT[dataset]}",
                             *RECIPE_FLAGS[dataset], *extra], max_examples=quick.EXAMPLES, vocab_size=quick.VOCABULARY)
    metrics, seconds = runs.fresh_run("sentiment", model_dir, *flags_)
    return {
        "accuracy": metrics[f"eval_{REPORTED_SPLIT[dataset]}"]["accuracy"],
        "seconds": seconds,
        "train_seconds": metrics["train"]["seconds"],
        "tokens_per_second": metrics["train"]["tokens_per_second"],
        "command": runs.command("sentiment", flags_, f"runs/{dataset}"),
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
    epochs = 2
    if quick.active():
        train, test = (datasets.subsample(data, quick.EXAMPLES, 0) for data in (train, test))
        epochs = 1
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
    model.fit(x_train, train.labels, batch_size=32, epochs=epochs, verbose=2)
    _, accuracy = model.evaluate(x_test, test.labels, verbose=0)
    return {"accuracy": float(accuracy), "seconds": time.time() - began}


def main(argv):
    del argv
    quick.shrink(dataset="sst2")
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
