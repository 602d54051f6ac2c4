r"""Time to a fine-tuned epoch: sentence-transformers' all-MiniLM-L6-v2 (`benchmarks.common.minilm`) fine-tuned
for one epoch on the same seeded sample of IMDB reviews, and of SST-2 sentences, by the zoo and by keras-hub,
each used as its documentation shows, each in a process of its own, one after the other:

- the zoo: `python -m recipes.sentiment --init_from=<checkpoint> --epochs=1 --mode=train` on the sample written as
  csv files (its own tokenizing into its token cache, length-bucketed batches padded to the batch's longest
  text rounded up to 8), then `--mode=eval` on the validation sample;
- keras-hub: `BertTextClassifier.from_preset(<checkpoint>, num_classes=2, preprocessor=None)` fitted for one
  epoch on a tf.data pipeline of (text, label) batches mapped through `BertTextClassifierPreprocessor`
  (every text padded to --max_length) and cached, as keras-hub's getting-started guide does, then `evaluate`;
  run by this program in a child process (--keras_hub_job).

Both get the same batch size, dtype, gradient clipping and optimizer: AdamW (5e-5, weight decay 0.01 with
biases and LayerNorm excluded, betas 0.9 / 0.98, eps 1e-9), linear warm-up over WARMUP_SHARE of the epoch then a
cosine to zero; plain cross-entropy. Reported per task: the wall time from launching the process to the end of
its epoch, the training alone (first epoch, tracing included), real and padded tokens/s, validation accuracy, and
keras-hub's time over the zoo's. BENCHMARKS.md is written only with --write (a quick check writes nothing).

  python -m benchmarks.time_to_epoch --write
  python -m benchmarks.time_to_epoch --examples=32 --validation_examples=32 --max_length=64  # a check
  python -m benchmarks.time_to_epoch --quick   # a smoke run: SST-2, 16 examples of 32 tokens, the quick report
"""

import csv
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from benchmarks.common import quick, runs
from benchmarks.common.report import ROOT, paired, read_record, write_section

FLAGS = flags.FLAGS

SECTION = "Time to a fine-tuned epoch"
TASK_NAMES = {"imdb": "IMDB", "sst2": "SST-2"}
MAX_LENGTH = {"imdb": 512, "sst2": 128}
BATCH_SIZE = 16
LEARNING_RATE = 5e-5
WEIGHT_DECAY = 0.01
CLIP_NORM = 1.0  # the zoo's default global-norm clipping, given to Keras as global_clipnorm
# The zoo's published defaults warm up over 200 steps, more than one epoch of 2,000 examples (125): both warm up
# over this share of the epoch instead.
WARMUP_SHARE = 0.1
CSV_NAME = "{split}.csv"  # the zoo's --dataset=csv:PATTERN names the split by {split}
DTYPE_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
GOAL = {"imdb": 1.8}  # keras-hub's time over the zoo's that issue 40 asks for


def define_flags(values=FLAGS):
    """The program's flags, defined when it runs (not on import: other benchmarks and the recipes define flags
    of these names, and the tests import them all into one process)."""
    flags.DEFINE_list("tasks", ["imdb", "sst2"], "Datasets to fine-tune on (imdb, sst2).", flag_values=values)
    flags.DEFINE_integer("examples", 2000, "Training examples: a seeded sample of the dataset's train split.",
                         lower_bound=1, flag_values=values)
    flags.DEFINE_integer("validation_examples", 500, "Validation examples: a seeded sample of its validation "
                         "split.", lower_bound=1, flag_values=values)
    flags.DEFINE_integer("max_length", None, "Tokens per text for every task. Default: MAX_LENGTH's (512 IMDB, "
                         "128 SST-2).", flag_values=values)
    flags.DEFINE_integer("repeats", 1, "Runs of each library per task, alternating which goes first.",
                         lower_bound=1, flag_values=values)
    flags.DEFINE_integer("seed", 0, "Seed of the samples, and of both libraries' initialization and data order.",
                         flag_values=values)
    flags.DEFINE_enum("mixed_precision", "auto", ["auto", "float32", "bfloat16"], "Compute dtype of both (auto: "
                      "the zoo's choice for this machine, zoo.training.precision).", flag_values=values)
    flags.DEFINE_bool("write", False, "Write the section into BENCHMARKS.md (else only print it).",
                      flag_values=values)
    flags.DEFINE_string("keras_hub_job", None, "Internal: run keras-hub's side of the job in this JSON file and "
                        "exit.", flag_values=values)
    quick.define(values)


def sample(dataset, split, count, seed):
    """A seeded sample of `count` examples of the split (`zoo.data.datasets.subsample`), the same for both libraries."""
    from zoo.data import datasets

    return datasets.subsample(datasets.load_classification(dataset, split), count, seed)


def sample_files(directory):
    """{split: path} of the csv files both libraries read: the zoo's --dataset (`zoo_flags`) names them by CSV_NAME."""
    return {split: os.path.join(directory, CSV_NAME.format(split=split)) for split in ("train", "validation")}


def write_csv(path, data):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(zip(data.texts, data.labels.tolist()))


def read_csv(path):
    """(texts, int labels) of a file `write_csv` wrote."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [row["text"] for row in rows], [int(row["label"]) for row in rows]


def epoch_steps(examples):
    """Steps of one epoch as `recipes.common.with_epochs` counts them for --epochs=1."""
    return max(1, round(examples / BATCH_SIZE))


def warmup_steps(steps):
    return max(1, round(WARMUP_SHARE * steps))


def token_lengths(texts, checkpoint, max_length):
    """Each text's length in the zoo's framing, [CLS] text [SEP] cut to max_length: the checkpoint's WordPiece
    tokenizer through the zoo's classifier preprocessor, as the recipe tokenizes."""
    import numpy as np

    from zoo.classifier.preprocessor import ClassifierPreprocessor
    from zoo.data import tokenizer

    tok = tokenizer.wordpiece_tokenizer(checkpoint.vocabulary, checkpoint.lowercase, checkpoint.strip_accents)
    return np.asarray([len(row) for row in ClassifierPreprocessor.for_tokenizer(tok, max_length).rows(texts)])


def zoo_padded_tokens(lengths, plan, max_length):
    """Positions the zoo computes over `plan` (batches of example indices): each batch padded to its longest
    text rounded up to batching.PAD_TO_MULTIPLE, but not past max_length (`zoo.data.batching.padded`)."""
    from zoo.data.batching import PAD_TO_MULTIPLE

    total = 0
    for batch in plan:
        longest = int(max(lengths[i] for i in batch))
        rounded = -(-longest // PAD_TO_MULTIPLE) * PAD_TO_MULTIPLE
        total += len(batch) * max(min(rounded, max_length), longest)
    return total


def linked_folder(checkpoint_folder, vocabulary, directory):
    """The checkpoint's files linked into `directory`, with the vocab.txt keras-hub's BertTokenizer reads
    (sentence-transformers publish only tokenizer.json)."""
    os.makedirs(directory, exist_ok=True)
    for name in set(os.listdir(checkpoint_folder)) - {"vocab.txt"}:
        os.symlink(os.path.join(checkpoint_folder, name), os.path.join(directory, name))
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(f"{piece}\n" for piece in vocabulary))
    return directory


def zoo_flags(checkpoint_folder, data_dir, max_length, dtype, warmup, seed):
    return [f"--dataset=csv:{os.path.join(data_dir, CSV_NAME)}", f"--init_from={checkpoint_folder}",
            f"--max_length={max_length}", "--epochs=1", f"--batch_size={BATCH_SIZE}",
            f"--learning_rate={LEARNING_RATE:g}", "--schedule=cosine", f"--warmup_steps={warmup}",
            f"--weight_decay={WEIGHT_DECAY:g}", f"--clip_norm={CLIP_NORM:g}", "--label_smoothing=0",
            f"--mixed_precision={dtype}", f"--seed={seed}"]


def tokenizing_seconds(cache_dir):
    """The seconds the zoo's token cache records for making its entries in `cache_dir` (zoo.data.cache)."""
    from zoo.data.cache import META_FILE

    entries = [os.path.join(cache_dir, name, META_FILE) for name in os.listdir(cache_dir) if not name.startswith(".")]
    seconds = 0.0
    for path in entries:
        with open(path) as f:
            seconds += json.load(f)["seconds"]
    return seconds


def run_zoo(flags_, run_dir, cache_dir):
    """The zoo's epoch in its own process (a fresh token cache: it tokenizes as a first run does), then its
    evaluation of the validation sample. Seconds from launch to metrics.json's training entry (written as
    training ends), training seconds, tokenizing seconds, real tokens trained, validation accuracy, and the
    run's steps and seed."""
    from zoo.runs.run_dir import METRICS_FILE, RunDir

    env = {**os.environ, "ZOO_CACHE_DIR": cache_dir}
    launched = time.time()
    train = runs.run_recipe("sentiment", run_dir, *flags_, "--mode=train", env=env)["train"]
    trained = os.path.getmtime(RunDir(run_dir).file(METRICS_FILE))
    tokenizing = tokenizing_seconds(cache_dir)  # before the evaluation adds the validation split's entry
    evaluated = runs.run_recipe("sentiment", run_dir, "--mode=eval", "--eval_split=validation", env=env)
    train_config = read_record(run_dir).config.train
    return {"wall": trained - launched, "train": train["seconds"], "tokenizing": tokenizing,
            "real_tokens": round(train["tokens_per_second"] * train["seconds"]),
            "accuracy": evaluated["eval_validation"]["accuracy"],
            "steps": train_config.train_steps, "seed": train_config.seed}


def run_keras_hub(job, directory):
    """keras-hub's epoch in a child process of this program; its timestamps taken against the launch here."""
    path = os.path.join(directory, "keras_hub_job.json")
    with open(path, "w") as f:
        json.dump(job, f)
    launched = time.time()
    subprocess.run([sys.executable, "-m", "benchmarks.time_to_epoch", f"--keras_hub_job={path}"], cwd=ROOT, check=True)
    with open(job["result"]) as f:
        result = json.load(f)
    return {"wall": result["trained"] - launched, "train": result["trained"] - result["fit_began"],
            "tokenizing": result["tokenizing"], "real_tokens": result["real_tokens"],
            "padded_tokens": result["examples"] * job["max_length"], "accuracy": result["accuracy"]}


def keras_hub_epoch(job):
    """keras-hub's side (the child process): the classifier from the checkpoint folder, the training file read
    and preprocessed once into tf.data's cache (timed: tokenizing), one epoch of `fit` (timed from its call: graph
    tracing included), then `evaluate` on the validation file. Writes timestamps and figures to job["result"]."""
    import keras
    import keras_hub
    import tensorflow as tf

    keras.utils.set_random_seed(job["seed"])
    keras.config.set_dtype_policy(DTYPE_POLICIES[job["dtype"]])
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        job["folder"], sequence_length=job["max_length"])
    classifier = keras_hub.models.BertTextClassifier.from_preset(job["folder"], num_classes=2, preprocessor=None)

    def batches(path, shuffle):
        texts, labels = read_csv(path)
        dataset = tf.data.Dataset.from_tensor_slices((texts, labels))
        if shuffle:
            dataset = dataset.shuffle(len(texts), seed=job["seed"])
        dataset = dataset.batch(job["batch_size"]).map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.cache().prefetch(tf.data.AUTOTUNE), len(texts)

    began = time.time()
    train, examples = batches(job["train"], shuffle=True)
    real_tokens = sum(int(tf.math.count_nonzero(x["padding_mask"])) for x, _ in train)  # fills the cache
    tokenizing = time.time() - began
    steps, warmup = int(train.cardinality()), job["warmup_steps"]
    schedule = keras.optimizers.schedules.CosineDecay(0.0, max(steps - warmup, 1), warmup_target=job["learning_rate"],
                                                      warmup_steps=warmup)
    optimizer = keras.optimizers.AdamW(schedule, weight_decay=job["weight_decay"], beta_1=0.9, beta_2=0.98,
                                       epsilon=1e-9, global_clipnorm=job["clip_norm"])
    optimizer.exclude_from_weight_decay(var_names=job["not_decayed"])
    classifier.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                       metrics=["sparse_categorical_accuracy"])
    fit_began = time.time()
    classifier.fit(train, epochs=1, verbose=2)
    trained = time.time()
    validation, _ = batches(job["validation"], shuffle=False)
    accuracy = classifier.evaluate(validation, return_dict=True, verbose=0)["sparse_categorical_accuracy"]
    with open(job["result"], "w") as f:
        json.dump({"fit_began": fit_began, "trained": trained, "tokenizing": tokenizing, "real_tokens": real_tokens,
                   "examples": examples, "steps": steps, "accuracy": float(accuracy)}, f)


def medians(runs):
    """The median of each figure over a library's runs ((seconds, result) pairs, as `paired` returns them)."""
    return {key: statistics.median(result[key] for _, result in runs) for key in runs[0][1]}


def measure(task, options, checkpoint, keras_hub_folder, dtype, directory):
    """One task: the samples written, both libraries run options.repeats times in turns; the figures for `render`."""
    from zoo.data import batching
    from zoo.training.optimization import NOT_DECAYED

    max_length = options.max_length or MAX_LENGTH[task]
    data_dir = os.path.join(directory, task)
    os.makedirs(data_dir)
    files = sample_files(data_dir)
    train = sample(task, "train", options.examples, options.seed)
    write_csv(files["train"], train)
    write_csv(files["validation"], sample(task, "validation", options.validation_examples, options.seed))
    lengths = token_lengths(train.texts, checkpoint, max_length)
    warmup = warmup_steps(epoch_steps(len(train.texts)))
    flags_ = zoo_flags(checkpoint.source, data_dir, max_length, dtype, warmup, options.seed)
    job = {"folder": keras_hub_folder, "train": files["train"], "validation": files["validation"],
           "max_length": max_length, "batch_size": BATCH_SIZE, "learning_rate": LEARNING_RATE,
           "weight_decay": WEIGHT_DECAY, "clip_norm": CLIP_NORM, "warmup_steps": warmup,
           "not_decayed": list(NOT_DECAYED), "dtype": dtype, "seed": options.seed}
    attempts = itertools.count()  # each run its own folders

    def zoo():
        n = next(attempts)
        result = run_zoo(flags_, os.path.join(directory, f"{task}_zoo_{n}"), os.path.join(directory, f"cache_{n}"))
        plan = batching.training_plan(lengths, result.pop("steps"), BATCH_SIZE, result.pop("seed"))
        planned_real = int(sum(lengths[i] for batch in plan for i in batch))
        return {**result, "padded_tokens": zoo_padded_tokens(lengths, plan, max_length), "planned_real": planned_real}

    def keras_hub():
        job["result"] = os.path.join(directory, f"{task}_keras_hub_{next(attempts)}.json")
        return run_keras_hub(job, directory)

    zoo_runs, peer_runs, _ = paired(zoo, keras_hub, options.repeats, label=f"{task}: time to a fine-tuned epoch")
    command = " ".join(["python -m recipes.sentiment", *flags_, "--mode=train", "--model_dir=<run>"])
    return {
        "task": task, "max_length": max_length, "examples": len(train.texts), "warmup": warmup,
        "zoo": medians(zoo_runs), "keras-hub": medians(peer_runs),
        "ratio": statistics.median(p[1]["wall"] / z[1]["wall"] for z, p in zip(zoo_runs, peer_runs)),
        "train_ratio": statistics.median(p[1]["train"] / z[1]["train"] for z, p in zip(zoo_runs, peer_runs)),
        "command": command.replace(checkpoint.source, os.path.relpath(checkpoint.source, ROOT))
        .replace(data_dir, "<sample>"),
    }


def minutes(seconds):
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


TABLE_HEAD = ("| task | library | to a trained epoch | before training | training (first epoch) | real tokens/s | "
              "padded tokens/s | validation accuracy |")
KERAS_HUB_STEPS = (
    "keras-hub, in a child process of this program: "
    "`BertTextClassifier.from_preset(<checkpoint>, num_classes=2, preprocessor=None)`; "
    "`tf.data.Dataset.from_tensor_slices((texts, labels)).shuffle(n, seed).batch(16)"
    ".map(BertTextClassifierPreprocessor.from_preset(<checkpoint>, sequence_length=L)).cache().prefetch()`; "
    "`compile` with the optimizer below; `fit(epochs=1)`; `evaluate`. `<checkpoint>`: the checkpoint's "
    "files with a vocab.txt written from its tokenizer.json (keras-hub's BertTokenizer reads vocab.txt)."
)
HOW_MEASURED = (
    "How it is measured. To a trained epoch: from launching the library's process to the end of its epoch (the "
    "zoo: metrics.json's training entry written; keras-hub: `fit` returned), so starting Python and TensorFlow, "
    "reading the csv, tokenizing and loading the checkpoint count; before training: that less the training. "
    "Training: the zoo's own training seconds (metrics.json; its final checkpoint save included), keras-hub's "
    "`fit` call; both include tracing the step. Tokens/s are over the training time. Real tokens: [CLS] text "
    "[SEP], cut to max_length; padded: the positions each computed (the zoo: its batch plan, rebuilt here from "
    "the run's steps and seed, each batch padded to its longest text rounded up to 8; keras-hub: examples x "
    "max_length).\n\n"
    "Differences that stay: the zoo keeps a long text's head and tail, keras-hub its head; keras-hub's head is "
    "BERT's pooler (dense + tanh) before the classifier, the zoo's a Dense layer on [CLS]; keras-hub runs one step "
    "per `fit` iteration, the zoo several per tf.function call; Keras's schedule runs one step behind the zoo's "
    "(its first step has rate 0); the zoo's process uses TensorFlow's BFC allocator for CPU tensors (its recipes "
    "set it), keras-hub's process TensorFlow's default."
)


def render(results, settings):
    """The section's body: the table, keras-hub's time over the zoo's per task, the commands, then what was
    matched (`settings`) and how it was measured."""
    lines = [TABLE_HEAD, "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for name in ("zoo", "keras-hub"):
            s = r[name]
            lines.append(f"| {TASK_NAMES[r['task']]} ({r['max_length']}) | {name} | {minutes(s['wall'])} | "
                         f"{minutes(s['wall'] - s['train'])} | {minutes(s['train'])} | "
                         f"{s['real_tokens'] / s['train']:,.0f} | {s['padded_tokens'] / s['train']:,.0f} | "
                         f"{s['accuracy']:.2%} |")
    lines.append("")
    for r in results:
        goal = f" (goal ≥ {GOAL[r['task']]}x)" if r["task"] in GOAL else ""
        zoo, peer = r["zoo"], r["keras-hub"]
        lines.append(
            f"- {TASK_NAMES[r['task']]}: keras-hub / zoo **{r['ratio']:.2f}x** to a trained epoch{goal}, "
            f"{r['train_ratio']:.2f}x in training alone. {r['examples']:,} examples, {zoo['real_tokens']:,.0f} real "
            f"tokens trained by the zoo ({peer['real_tokens']:,.0f} by keras-hub); padded, the zoo computed "
            f"{zoo['padded_tokens']:,.0f} positions ({zoo['padded_tokens'] / zoo['real_tokens']:.2f}x the real "
            f"ones), keras-hub {peer['padded_tokens']:,.0f} ({peer['padded_tokens'] / peer['real_tokens']:.2f}x). "
            f"Reading and tokenizing the training sample, in each run: the zoo {zoo['tokenizing']:.1f} s (its token "
            f"cache's record), keras-hub {peer['tokenizing']:.1f} s (the preprocessor's pass filling tf.data's "
            "cache).")
        if zoo["planned_real"] != zoo["real_tokens"]:
            lines.append(f"  The zoo's plan rebuilt here holds {zoo['planned_real']:,} real tokens, not the run's "
                         f"{zoo['real_tokens']:,.0f}: its padded count is approximate.")
    lines += ["", "The zoo's commands, each followed by `--mode=eval --eval_split=validation` in the same folder:"]
    lines += [f"- {TASK_NAMES[r['task']]}: `{r['command']}`" for r in results]
    lines += ["", KERAS_HUB_STEPS, "", settings, "", HOW_MEASURED]
    return "\n".join(lines)


def settings_line(results, options, checkpoint_folder, dtype, reason, load):
    """What both libraries were given, in a paragraph (`load`: the load average when the program started)."""
    tasks = ", ".join(f"{TASK_NAMES[r['task']]} {r['examples']:,} (max_length {r['max_length']})" for r in results)
    return (
        f"Same for both: checkpoint `{os.path.relpath(checkpoint_folder, ROOT)}` (all-MiniLM-L6-v2); seeded "
        f"samples (seed {options.seed}) written once as csv and read by both: training examples {tasks}, and "
        f"{options.validation_examples:,} of each validation split (IMDB's: the zoo's held-out 5% of train; "
        f"SST-2's: GLUE dev); {dtype} ({reason}); batch {BATCH_SIZE}; one epoch; AdamW, peak rate "
        f"{LEARNING_RATE:g}, weight decay {WEIGHT_DECAY:g} (biases and LayerNorm excluded), betas 0.9 / 0.98, eps "
        f"1e-9, global-norm clipping at {CLIP_NORM:g}, linear warm-up over {WARMUP_SHARE:.0%} of the epoch's steps "
        "(the zoo's --warmup_steps above) then a cosine to zero: the zoo's published-checkpoint defaults, with "
        "their 200 warm-up steps (more than an epoch of 2,000 examples) cut to that share; in Keras "
        "`AdamW(CosineDecay(0, steps - warmup, warmup_target=5e-5, warmup_steps=warmup), weight_decay=0.01, "
        "beta_2=0.98, epsilon=1e-9, global_clipnorm=1.0)` with "
        "`exclude_from_weight_decay(var_names=[\"bias\", \"gamma\", \"beta\"])`; plain cross-entropy for both (the "
        "zoo with --label_smoothing=0: Keras's sparse cross-entropy has no smoothing). "
        f"{options.repeats} run(s) of each library per task, in turns, medians shown; load average {load:.1f} "
        "when the program started."
    )


def benchmark(options):
    """Both libraries on each of options.tasks; prints the section, and writes it with options.write (with --quick,
    into the quick report)."""
    quick.shrink(options, tasks=["sst2"], examples=16, validation_examples=16, max_length=32)
    unknown = set(options.tasks) - set(MAX_LENGTH)
    if unknown:
        raise app.UsageError(f"--tasks: unknown {sorted(unknown)}; use {', '.join(MAX_LENGTH)}.")
    if options.examples % BATCH_SIZE:
        raise app.UsageError(f"--examples={options.examples} is not a multiple of the batch size {BATCH_SIZE}: one "
                             "epoch would differ (the zoo's --epochs=1 trains round(examples / 16) full batches, "
                             "keras-hub's fit a last, smaller one too). Give a multiple of 16.")
    from benchmarks.common.minilm import minilm_folder
    from zoo.pretraining import published
    from zoo.training import precision

    load = os.getloadavg()[0]
    checkpoint_folder = minilm_folder()
    checkpoint = published.read_checkpoint(checkpoint_folder)
    dtype, reason = precision.choose(options.mixed_precision)
    with tempfile.TemporaryDirectory(prefix="time_to_epoch_") as directory:
        folder = linked_folder(checkpoint_folder, checkpoint.vocabulary, os.path.join(directory, "keras_hub"))
        results = [measure(task, options, checkpoint, folder, dtype, directory) for task in options.tasks]
    body = render(results, settings_line(results, options, checkpoint_folder, dtype, reason, load))
    publish(body, options.write or quick.active(options))


def publish(body, write):
    """Prints the section; writes it into BENCHMARKS.md only when `write` (--write)."""
    print(body)
    if write:
        write_section(SECTION, body)
    else:
        print(f"\nBENCHMARKS.md left as it is: give --write to replace its section {SECTION!r}.")


def main(argv):
    del argv
    if FLAGS.keras_hub_job:
        with open(FLAGS.keras_hub_job) as f:
            return keras_hub_epoch(json.load(f))
    return benchmark(FLAGS)


if __name__ == "__main__":
    define_flags()
    app.run(main)
