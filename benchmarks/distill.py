r"""Knowledge distillation and augmentation (docs/distillation.md): the `small` classifier taught by a fine-tuned
all-MiniLM-L6-v2, against the same student from scratch, with augmentation alone, the teacher itself and NBSVM, in
one program; then the serving latency of teacher and student from their exports, in a fresh process.

  python -m benchmarks.distill --parts=sst2,small_data,latency   # SST-2 dev
  python -m benchmarks.distill --parts=imdb                      # IMDB test, imdb_unsup as the transfer set
  python -m benchmarks.distill --quick                           # a smoke run: tiny slices, two steps each

Each run folder is kept under --runs_dir and reused when it holds a finished run of the same flags (the teacher's
fine-tuning is the long part: 13 min for SST-2, an hour for IMDB on 2 cores); the teacher's outputs are cached
(zoo.distill.teacher), so a second student does not run it again.
"""

import json
import os
import time

from absl import app, flags

from benchmarks.common import latency, nbsvm, quick, runs, sentences
from benchmarks.common.minilm import minilm_folder
from benchmarks.common.recipe_flags import with_values
from benchmarks.common.report import write_section

PARTS = ("sst2", "imdb", "small_data", "latency")
flags.DEFINE_list("parts", ["sst2", "small_data", "latency"], f"What to measure: {', '.join(PARTS)}.")
flags.DEFINE_string("runs_dir", "runs/bench_distill", "Where the run folders are kept (reused when finished).")
flags.DEFINE_string("checkpoint", "minilm", "The teacher's published checkpoint: a folder, or minilm "
                    "(all-MiniLM-L6-v2 from the `bench` extra's package, benchmarks.common.minilm).")
FLAGS = flags.FLAGS

# The teacher: all-MiniLM-L6-v2 fine-tuned as BENCHMARKS.md's "Published checkpoints" fine-tuned it.
TEACHER = {
    "sst2": ["--dataset=sst2_tune", "--max_length=128", "--epochs=1", "--batch_size=32", "--checkpoint_every=500",
             "--log_every=100"],
    "imdb": ["--dataset=imdb", "--max_length=512", "--epochs=1", "--batch_size=32", "--learning_rate=1e-4",
             "--warmup_steps=74", "--checkpoint_every=50", "--log_every=10"],
}
# The student: benchmarks.sentiment's `small` flags for each dataset.
STUDENT = {
    "sst2": ["--dataset=sst2", "--preset=small", "--vocab_size=8000", "--epochs=2", "--learning_rate=1e-3",
             "--warmup_steps=300", "--checkpoint_every=1000"],
    "imdb": ["--dataset=imdb", "--preset=small", "--vocab_size=16000", "--epochs=2", "--learning_rate=1.5e-3",
             "--warmup_steps=300", "--label_smoothing=0", "--checkpoint_every=1000"],
}
SPLIT = {"sst2": "validation", "imdb": "test"}  # SST-2's dev set (GLUE hides test labels); IMDB's test set
AUGMENT = ["--augment=mask:0.1,swap:0.1,ngram:0.25"]  # Tang et al.'s mix, with EDA's swap
# Copies per text: IMDB's cut to what 2 cores label in about half an hour at 512 tokens (each review the teacher
# answers costs ~30 ms): one copy of each of 23,750 reviews.
COPIES = {"sst2": ["--copies=2"], "imdb": ["--copies=1"]}
DISTILL = ["--distill_loss=mse", "--distill_weight=1.0"]  # Tang et al.: the logits' squared error, no gold labels
# The transfer set of the arm distilled on the training set + a transfer set, and how many of its texts (None: all).
# SST-2's: imdb_unsup's reviews cut into sentences in SST-2's form (benchmarks.common.sentences: 565,544 sentences
# of 4-50 tokens), the teacher's in-domain short texts.
TRANSFER = {"sst2": ("sentences", None), "imdb": ("imdb_unsup", None)}
# The same arm trained longer (STUDENT's flags replaced), each length chosen after the shorter one's SST-2 dev figure
# (2 epochs 84.06%, 4 epochs 85.67%; BENCHMARKS.md's "Distillation: notes"): nine times the texts of the training set,
# the loss still falling. 8 epochs gained 0.11 over 4 with inverse_sqrt's rate still at 4e-5 at the end; the last arm
# anneals the rate to zero instead (cosine, as benchmarks.lm and the pretraining recipe train).
TRANSFER_ARMS = {"sst2": ({"epochs": 4}, {"epochs": 8}, {"epochs": 4, "schedule": "cosine"})}
# ... and the transfer set beside the copies in the arm distilled on the training set + augmented copies
COPIES_TRANSFER = {"imdb": ("imdb_unsup", 20000)}
SENTENCES = "imdb_unsup_sentences.txt"  # under --runs_dir
# The student --parts=latency times against the teacher (one of TRANSFER_ARMS' folders; --parts=sst2 trains it).
LATENCY_STUDENT = "sst2_distilled_transfer_e8"
# The distilled student's epochs chosen on sst2_tune's validation (held out of SST-2's train; BENCHMARKS.md's
# "Distillation: notes" has the figures): 2 -> 88.48%, 6 -> 90.14%, 12 -> 90.62%.
TUNED_EPOCHS = {"sst2": 12}
WALL_FILE = ".wall.json"  # beside a run folder: its training command's wall clock
SMALL_DATA = 1000  # the small-data row's labelled SST-2 sentences
# ... trained with a vocabulary their text can fill, over 20 epochs (62 steps an epoch at batch 32), EDA's copies
SMALL = {"vocab_size": 2000, "epochs": 20, "warmup_steps": 60}
SMALL_AUGMENT = ["--augment=swap:0.1,delete:0.1,mask:0.1", "--copies=4"]


def teacher(dataset):
    """The fine-tuned teacher's run folder, trained unless finished, and its figure on the reported split."""
    run_dir = os.path.join(FLAGS.runs_dir, f"{dataset}_teacher")
    checkpoint = minilm_folder() if FLAGS.checkpoint == "minilm" else os.path.abspath(FLAGS.checkpoint)
    flags_ = quick.training([*TEACHER[dataset], f"--init_from={checkpoint}"],
                            max_examples=str(quick.EXAMPLES))
    trained = timed_training(run_dir, flags_)
    key = f"eval_sst2_{SPLIT[dataset]}" if dataset == "sst2" else f"eval_{SPLIT[dataset]}"
    extra = ["--dataset=sst2"] if dataset == "sst2" else []
    entry = runs.evaluation("sentiment", run_dir, key, *extra, f"--eval_split={SPLIT[dataset]}", reuse="current")
    return run_dir, {"accuracy": entry["accuracy"], "seconds": runs.read_metrics(run_dir)["train"]["seconds"],
                     "wall": trained, "command": runs.relative(runs.command("sentiment", flags_, run_dir))}


def timed_training(run_dir, flags_):
    """Trains unless finished; the training command's wall-clock seconds, kept beside the run folder (WALL_FILE) so
    that a later run of this program reports them too (None when not known)."""
    path = run_dir.rstrip("/") + WALL_FILE
    began = time.time()
    if runs.train_unless_finished("sentiment", run_dir, flags_):
        with open(path, "w") as f:
            json.dump({"seconds": time.time() - began}, f)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["seconds"]


def student(dataset, name, extra, teacher_dir=None, max_examples=None, values=None):
    """One student arm: trained unless finished (teacher labelling included in its wall time), then evaluated;
    `values`: flags of STUDENT's replaced (name -> value)."""
    run_dir = os.path.join(FLAGS.runs_dir, f"{dataset}_{name}")
    flags_ = [*with_values(STUDENT[dataset], values or {}), *extra]
    if teacher_dir is not None:
        flags_.append(f"--teacher={os.path.abspath(teacher_dir)}")
    if max_examples is not None:
        flags_.append(f"--max_examples={max_examples}")
    flags_ = quick.training(flags_, max_examples=str(max_examples or quick.EXAMPLES), vocab_size=str(quick.VOCABULARY))
    wall = timed_training(run_dir, flags_)
    entry = runs.evaluation("sentiment", run_dir, f"eval_{SPLIT[dataset]}", f"--eval_split={SPLIT[dataset]}",
                            reuse="current")
    metrics = runs.read_metrics(run_dir)
    return run_dir, {"accuracy": entry["accuracy"], "seconds": metrics["train"]["seconds"],
                     "steps": metrics["train"]["step"], "wall": wall,
                     "command": runs.relative(runs.command("sentiment", flags_, run_dir))}


def arms(dataset):
    """Every arm of one dataset, in one program: its table's rows."""
    teacher_dir, taught = teacher(dataset)
    augment = [*AUGMENT, *COPIES[dataset]]
    rows = [("teacher: all-MiniLM-L6-v2 fine-tuned", taught)]
    rows.append(("student from scratch", student(dataset, "scratch", [])[1]))
    rows.append(("student, augmentation alone", student(dataset, "augmented", augment)[1]))
    rows.append(("student distilled on the training set", student(dataset, "distilled", DISTILL, teacher_dir)[1]))
    if dataset in TUNED_EPOCHS:
        epochs = TUNED_EPOCHS[dataset]
        rows.append((f"student distilled on the training set, {epochs} epochs (chosen on sst2_tune)",
                     student(dataset, f"distilled_e{epochs}", DISTILL, teacher_dir, values={"epochs": epochs})[1]))
    together = COPIES_TRANSFER.get(dataset)
    best = student(dataset, "distilled_augmented", [*DISTILL, *augment, *transfer_flags(together)], teacher_dir)[1]
    rows.append(("student distilled on the training set + augmented copies"
                 + (f" + {transfer_name(together)}" if together else ""), best))
    if dataset in TRANSFER:
        flags_, what = transfer_flags(TRANSFER[dataset]), transfer_name(TRANSFER[dataset])
        for values in ({}, *TRANSFER_ARMS.get(dataset, ())):  # {}: STUDENT's flags
            name = "".join(f"_e{value}" if key == "epochs" else f"_{value}" for key, value in values.items())
            described = "".join(f", {value} epochs" if key == "epochs" else f", {value} {key}"
                                for key, value in values.items())
            figures = student(dataset, "distilled_transfer" + name, [*DISTILL, *flags_], teacher_dir,
                              values=values)[1]
            rows.append((f"student distilled on the training set + {what}{described}", figures))
    limit = quick.EXAMPLES if quick.active() else None
    linear = nbsvm.accuracy(dataset, SPLIT[dataset], limit)
    rows.append(("NBSVM (word 1-3-grams)", {"accuracy": linear["accuracy"], "seconds": linear["seconds"]}))
    return rows


def transfer_flags(transfer):
    """The flags of `transfer` (a transfer set and how many of its texts, None: all; or None: no transfer set)."""
    if transfer is None:
        return []
    name, count = transfer
    if name == "sentences":
        path = os.path.abspath(os.path.join(FLAGS.runs_dir, SENTENCES))
        name = "text:" + sentences.write_sentences(path, limit=quick.EXAMPLES if quick.active() else None)
    count = quick.EXAMPLES if quick.active() else count
    return [f"--transfer={name}"] + ([f"--max_transfer={count}"] if count else [])


def transfer_name(transfer):
    name, count = transfer
    what = "imdb_unsup's sentences in SST-2's form" if name == "sentences" else name
    return f"{count:,} of {what}" if count else f"all of {what}"


def table(rows):
    lines = ["| arm | accuracy | training | wall clock (labelling included) |", "|---|---|---|---|"]
    for name, figures in rows:
        wall = f"{figures['wall'] / 60:.1f} min" if figures.get("wall") else "–"
        lines.append(f"| {name} | {figures['accuracy']:.2%} | {figures['seconds'] / 60:.1f} min | {wall} |")
    commands = [f"- {name}: `{figures['command']}`" for name, figures in rows if "command" in figures]
    return "\n".join(lines) + "\n\nCommands (each arm's run folder; `--mode=eval` gave the figure):\n\n" + \
        "\n".join(commands)


def small_data():
    return [(f"from scratch ({', '.join(f'{k}={v}' for k, v in SMALL.items())})",
             student("sst2", "small_scratch", [], max_examples=SMALL_DATA, values=SMALL)[1]),
            (f"with augmentation, no teacher ({' '.join(SMALL_AUGMENT)})",
             student("sst2", "small_augmented", SMALL_AUGMENT, max_examples=SMALL_DATA, values=SMALL)[1])]


def serving(teacher_dir, student_dir):
    """Median seconds of one text and of 64, teacher and student, from their exports in a fresh process."""
    from zoo.data import datasets

    texts = datasets.load_classification("sst2", "validation").texts[:64]
    figures = {}
    for name, run_dir in (("teacher", teacher_dir), ("student", student_dir)):
        export_dir = os.path.abspath(os.path.join(run_dir, "export"))
        runs.run_recipe("sentiment", run_dir, "--mode=export", f"--export_dir={export_dir}")
        figures[name] = latency.export_latency(export_dir, texts, repeats=3 if quick.active() else 20)
    return figures


def main(argv):
    del argv
    unknown = [part for part in FLAGS.parts if part not in PARTS]
    if unknown:
        raise app.UsageError(f"--parts: unknown {', '.join(unknown)}; use {', '.join(PARTS)}.")
    if quick.active():
        FLAGS.runs_dir = quick.folder("distill")
    for dataset in ("sst2", "imdb"):
        if dataset in FLAGS.parts:
            rows = arms(dataset)
            split = "dev" if dataset == "sst2" else "test"
            augmented = " ".join(AUGMENT + COPIES[dataset])
            body = (f"Accuracy on {dataset} {split}; the student is `small` ({' '.join(STUDENT[dataset][1:])}); "
                    f"distilled: {' '.join(DISTILL)}; augmented: {augmented}. An epoch is a pass over every "
                    "text a run trains on, so an arm with two copies of each text takes three times the steps. "
                    "Training minutes are metrics.json's; the wall clock is the training command's, the teacher's "
                    "labelling of every text included.\n\n"
                    + table(rows))
            write_section(f"Distillation: {dataset}", body)
            print(body)
    if "small_data" in FLAGS.parts:
        body = (f"SST-2 dev accuracy of `small` trained on {SMALL_DATA:,} labelled sentences (a seeded choice), with "
                "and without augmented copies (they keep their sentence's label; no teacher).\n\n"
                + table(small_data()))
        write_section("Distillation: small data", body)
        print(body)
    if "latency" in FLAGS.parts:
        teacher_dir, student_dir = (os.path.join(FLAGS.runs_dir, name) for name in ("sst2_teacher", LATENCY_STUDENT))
        figures = serving(teacher_dir, student_dir)
        rows = [f"| {name} | {f[1] * 1000:.1f} ms | {f[64] * 1000:.0f} ms |" for name, f in figures.items()]
        speed = figures["teacher"][1] / figures["student"][1], figures["teacher"][64] / figures["student"][64]
        body = ("Median time of the export's serving_default (TF Serving's signature, tokenizer in the graph), in a "
                f"fresh process, on SST-2 dev sentences; teacher `{runs.relative(os.path.abspath(teacher_dir))}`, "
                f"student `{runs.relative(os.path.abspath(student_dir))}`.\n\n"
                "| model | one text | 64 texts |\n|---|---|---|\n"
                + "\n".join(rows) + f"\n\nThe student serves one text {speed[0]:.1f}x and 64 texts {speed[1]:.1f}x "
                "as fast as its teacher.")
        write_section("Distillation: serving latency", body)
        print(body)


if __name__ == "__main__":
    app.run(main)
