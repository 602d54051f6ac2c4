r"""Your own data: the recipes on files, at scale and against peers (BENCHMARKS.md, "Your own data").

  python -m benchmarks.own_data --parts=scale --sizes_mb=100,1000

Parts (each run alone keeps the others' figures, from <work_dir>/results.json):
- scale: a text corpus of each size made from the 50,000 unlabeled IMDB reviews (one review a line, the
  whole set written again and again until the size is reached), trained on by `recipes.lm --level=subword`
  under /usr/bin/time -v: peak resident memory of tokenizing + training, then of a second run that finds
  the token cache made;
- rates: the tokenizing rate beside SentencePiece's own encode rate on the same lines, timed in turns;
- multiclass: a four-class task (IMDB's star ratings) through csv:, fine-tuned from all-MiniLM-L6-v2 and
  trained from scratch, beside a one-vs-rest NBSVM-style model: accuracy and macro-F1;
- translation: Multi30k through text: files and through --dataset=multi30k with the same flags.

  python -m benchmarks.own_data --quick   # a smoke run: scale and rates on a 1 MB corpus, 2 steps, the quick report
"""

import json
import os
import re
import subprocess
import sys
import time

from absl import app, flags

from benchmarks.common import nbsvm, quick, runs
from benchmarks.common.report import ROOT, median_seconds, paired, write_section

PARTS = ["scale", "rates", "multiclass", "translation"]
flags.DEFINE_list("parts", PARTS, f"Which parts to run: {', '.join(PARTS)}.")
flags.DEFINE_list("sizes_mb", ["100", "1000"], "Corpus sizes of the scale part, in MB.")
flags.DEFINE_list("scale_recipes", ["lm", "pretrain"], "Recipes of the scale part: lm, pretrain.")
flags.DEFINE_integer("scale_steps", 50, "Training steps of each scale run.")
flags.DEFINE_string("work_dir", "runs/bench_own_data", "Corpora, runs, caches and results.json.")
FLAGS = flags.FLAGS

SECTION = "Your own data"
LIBRARY_SAMPLE_MB = 50  # lines SentencePiece's own encoder is timed on


def work(*parts):
    path = os.path.join(ROOT, FLAGS.work_dir, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def make_corpus(megabytes):
    """<work_dir>/imdb_unsup_<n>mb.txt: the unlabeled reviews, one a line, repeated up to `megabytes` MB."""
    path = work(f"imdb_unsup_{megabytes}mb.txt")
    if os.path.exists(path) and os.path.getsize(path) >= megabytes * 10**6:
        return path
    from zoo.pretraining import data as pretraining_data

    lines = [" ".join(review.split()) + "\n" for review in pretraining_data.load_documents("imdb_unsup")]
    block = "".join(lines).encode("utf-8")
    with open(path + ".partial", "wb") as f:
        written = 0
        while written < megabytes * 10**6:
            f.write(block[: megabytes * 10**6 - written])
            written += min(len(block), megabytes * 10**6 - written)
    os.replace(path + ".partial", path)
    return path


def timed(command, env):
    """Runs `command` under /usr/bin/time -v: (peak resident MB, seconds, its stderr)."""
    began = time.time()
    done = subprocess.run(["/usr/bin/time", "-v", *command], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) / 1024
    return peak, time.time() - began, done.stderr


def cache_meta(cache_dir):
    metas = []
    for name in os.listdir(cache_dir):
        path = os.path.join(cache_dir, name, "meta.json")
        if os.path.exists(path):
            with open(path) as f:
                metas.append(json.load(f))
    return max(metas, key=lambda meta: meta["bytes"])


def tokenizing_rates(model_dir, corpus, repeats=3):
    """(the zoo's MB/s, SentencePiece's own MB/s) on the corpus's first LIBRARY_SAMPLE_MB, timed in turns
    (benchmarks.common.report.paired). The zoo's: the file read, tokenized and written into a new token cache
    entry, as a recipe does; the library's: `encode` (the Python package's, all threads) on the same lines,
    already in memory, written as the zoo's subword tokenizer writes them (<n> for a line end)."""
    import tempfile

    import sentencepiece

    from zoo.language_model import data as lm_data

    sample = work(f"sample_{LIBRARY_SAMPLE_MB}mb.txt")
    with open(corpus, "rb") as f, open(sample, "wb") as out:
        out.write(f.read(LIBRARY_SAMPLE_MB * 10**6).rsplit(b"\n", 1)[0] + b"\n")
    size = os.path.getsize(sample) / 1e6
    with open(os.path.join(model_dir, "tokenizer.model"), "rb") as f:
        processor = sentencepiece.SentencePieceProcessor(model_proto=f.read())
    with open(sample, encoding="utf-8") as f:
        lines = [line.replace("\n", "<n>") for line in f]
    vocabulary = lm_data.load_vocabulary(model_dir)

    def zoo_rate():
        with tempfile.TemporaryDirectory() as cache_dir:
            os.environ["ZOO_CACHE_DIR"] = cache_dir
            lm_data.token_stream(lm_data.load(f"text:{sample}", "train", "subword"), vocabulary, "rate")

    ours, library, _ = paired(zoo_rate, lambda: processor.encode(lines), repeats, "tokenizing")
    return size / median_seconds(ours), size / median_seconds(library)


SCALE_COMMANDS = {
    "lm": lambda corpus: ["recipes.lm", f"--dataset=text:{corpus}", "--level=subword", "--vocab_size=8000"],
    "pretrain": lambda corpus: ["recipes.pretrain", f"--corpus=text:{corpus}", "--vocab_size=8000"],
}


def scale(results):
    for recipe in FLAGS.scale_recipes:
        for megabytes in map(int, FLAGS.sizes_mb):
            corpus = make_corpus(megabytes)
            cache_dir = work(f"cache_{recipe}_{megabytes}mb", "")
            subprocess.run(["rm", "-rf", cache_dir], check=True)  # the first run tokenizes, whatever ran before
            os.makedirs(cache_dir)
            env = {**os.environ, "ZOO_CACHE_DIR": cache_dir, "PYTHONUNBUFFERED": "1"}
            figures = {}
            for name in ("first", "cached"):
                model_dir = work(f"{recipe}_{megabytes}mb_{name}")
                subprocess.run(["rm", "-rf", model_dir], check=True)
                command = [sys.executable, "-m", *SCALE_COMMANDS[recipe](corpus), "--preset=tiny", "--batch_size=32",
                           f"--train_steps={FLAGS.scale_steps}", f"--checkpoint_every={FLAGS.scale_steps}",
                           "--mode=train", f"--model_dir={model_dir}"]
                print(f"scale: {recipe}, {megabytes} MB, {name} run", flush=True)
                peak, seconds, _ = timed(command, env)
                figures[name] = {"peak_mb": round(peak), "seconds": round(seconds)}
            meta = cache_meta(cache_dir)
            figures.update(tokens=meta["tokens"], text_mb=round(meta["bytes"] / 1e6))
            results.setdefault("scale", {}).setdefault(recipe, {})[str(megabytes)] = figures
            save(results)


def rates(results):
    """The tokenizing rates, on the largest scale corpus and the tokenizer its first run trained."""
    megabytes = max(map(int, results["scale"]["lm"]))
    ours, library = tokenizing_rates(work(f"lm_{megabytes}mb_first"), make_corpus(megabytes))
    results["rates"] = {"zoo_mb_s": round(ours, 2), "library_mb_s": round(library, 2)}
    save(results)


RATING_CLASSES = {1: "1-2", 2: "1-2", 3: "3-4", 4: "3-4", 7: "7-8", 8: "7-8", 9: "9-10", 10: "9-10"}
MULTICLASS_SIZES = {"train": 2000, "validation": 500, "test": 1000}


def make_multiclass():
    """<work_dir>/imdb_ratings/{train,validation,test}.csv: IMDB reviews labelled by their star rating (from the
    file names) in four classes, 1-2, 3-4, 7-8 and 9-10 stars. validation is IMDB train's every 20th review by id
    (as --dataset=imdb holds it out), train the rest; test is IMDB test; a seeded sample of each
    (MULTICLASS_SIZES)."""
    import csv
    import tarfile

    import numpy as np

    from zoo.data import datasets

    folder = work("imdb_ratings", "")
    if all(os.path.exists(os.path.join(folder, f"{split}.csv")) for split in MULTICLASS_SIZES):
        return folder
    rows = {split: [] for split in MULTICLASS_SIZES}
    with tarfile.open(datasets.fetch(datasets.IMDB_LOCAL), "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")
            labelled = len(parts) == 4 and parts[1] in ("train", "test") and parts[2] in ("neg", "pos")
            if not (member.isfile() and labelled):
                continue
            review_id, rating = map(int, parts[3].removesuffix(".txt").split("_"))
            split = "test" if parts[1] == "test" else "validation" if review_id % 20 == 0 else "train"
            text = archive.extractfile(member).read().decode("utf-8").replace("<br />", " ")
            rows[split].append((f"{parts[1]}/{parts[2]}/{review_id}", text, RATING_CLASSES[rating]))
    for split, count in MULTICLASS_SIZES.items():
        chosen = sorted(np.random.default_rng(0).permutation(len(rows[split]))[:count])
        with open(os.path.join(folder, f"{split}.csv"), "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "review", "stars"])
            writer.writerows(sorted(rows[split])[i] for i in chosen)
    return folder


def served_predictions(export_dir, texts, batch_size=32):
    """The labels the newest export of export_dir answers for `texts`."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the export's WordPiece and SentencePiece ops)

    version = max((int(v) for v in os.listdir(export_dir) if v.isdigit()))
    serve = tf.saved_model.load(os.path.join(export_dir, str(version))).signatures["serving_default"]
    labels = []
    for i in range(0, len(texts), batch_size):
        labels += [label.decode() for label in serve(text=tf.constant(texts[i : i + batch_size]))["label"].numpy()]
    return labels


def scores(predicted, expected):
    from sklearn.metrics import f1_score

    accuracy = sum(p == e for p, e in zip(predicted, expected)) / len(expected)
    return {"accuracy": round(accuracy, 4), "macro_f1": round(float(f1_score(expected, predicted, average="macro")), 4)}


def read_split(folder, split):
    import csv

    with open(os.path.join(folder, f"{split}.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [row["review"] for row in rows], [row["stars"] for row in rows]


MULTICLASS_RUNS = {
    # The published-checkpoint defaults warm up over 200 steps, more than an epoch of these 2,000 reviews (125):
    # 40 steps here, and 3 epochs (one epoch, still warming up at its end, reached 48.6% validation accuracy).
    "minilm": ["--max_length=128", "--epochs=3", "--batch_size=16", "--warmup_steps=40"],
    "scratch": ["--preset=small", "--vocab_size=4000", "--max_length=128", "--epochs=5", "--batch_size=32",
                "--warmup_steps=50"],
}


def multiclass(results):
    """The four-class rating task through csv:, fine-tuned from all-MiniLM-L6-v2 and trained from scratch,
    beside a one-vs-rest NBSVM-style model: accuracy and macro-F1 on its test split."""
    from benchmarks.common.minilm import minilm_folder

    folder = make_multiclass()
    texts, expected = read_split(folder, "test")
    figures = {}
    for name, extra in MULTICLASS_RUNS.items():
        run_dir, export_dir = work("multiclass", name), work("multiclass", f"{name}_export")
        subprocess.run(["rm", "-rf", run_dir, export_dir], check=True)
        init = [f"--init_from={minilm_folder()}"] if name == "minilm" else []
        flags_ = [f"--dataset=csv:{folder}{{split}}.csv", "--text_column=review", "--label_column=stars", *init, *extra]
        metrics, seconds = runs.fresh_run("sentiment", run_dir, *flags_, f"--export_dir={export_dir}")
        validation = metrics["eval_validation"]["accuracy"]
        figures[name] = {**scores(served_predictions(export_dir, texts), expected), "seconds": round(seconds),
                         "validation_accuracy": round(validation, 4),
                         "command": runs.relative(" ".join(["python -m recipes.sentiment", *flags_]))}
    began = time.time()
    figures["nbsvm"] = {**scores(one_vs_rest_nbsvm(folder, texts), expected), "seconds": round(time.time() - began)}
    results["multiclass"] = figures
    save(results)


def one_vs_rest_nbsvm(folder, texts):
    """The NBSVM-style model (benchmarks.common.nbsvm: one class against the rest) fitted on the train split."""
    return nbsvm.predict(*read_split(folder, "train"), texts)


TRANSLATE_FLAGS = ["--source=de", "--target=en", "--preset=tiny", "--vocab_size=4000", "--max_examples=5000",
                   "--train_steps=200", "--checkpoint_every=200", "--eval_split=test", "--eval_batch_size=200"]


def cached_ids(cache_dir):
    """{"split side": sha256 of the entry's ids and row ends} of each token-cache entry a run made."""
    import hashlib

    digests = {}
    for entry in sorted(name for name in os.listdir(cache_dir) if not name.startswith(".")):  # not staging folders
        with open(os.path.join(cache_dir, entry, "meta.json")) as f:
            key = json.load(f)["key"]
        digest = hashlib.sha256()
        for name in ("ids.bin", "offsets.bin"):
            with open(os.path.join(cache_dir, entry, name), "rb") as f:
                digest.update(f.read())
        digests[f"{key['data']['split']} {key['side']}"] = digest.hexdigest()[:16]
    return digests


def translation(results):
    """Multi30k through text:{split}.{lang} files (written from the shared data's files) and through
    --dataset=multi30k, the same flags: the same pairs, tokenizers and BLEU."""
    import gzip

    from zoo.data import datasets

    folder = work("multi30k_files", "")
    for split, stem in (("train", "train"), ("validation", "val"), ("test", "test_2016_flickr")):
        for language in ("de", "en"):
            source = datasets.fetch(datasets.Source("multi30k", f"{stem}.{language}.gz", ""))
            with gzip.open(source, "rb") as f, open(os.path.join(folder, f"{split}.{language}"), "wb") as out:
                out.write(f.read())
    figures = {}
    for name, dataset in (("built_in", "multi30k"), ("files", f"text:{folder}{{split}}.{{lang}}")):
        run_dir, cache_dir = work("translation", name), work("translation_cache", name)
        subprocess.run(["rm", "-rf", run_dir, cache_dir], check=True)
        metrics = runs.run_recipe("translate", run_dir, f"--dataset={dataset}", *TRANSLATE_FLAGS,
                                  env={**os.environ, "ZOO_CACHE_DIR": cache_dir})
        with open(os.path.join(run_dir, "tokenizer.model"), "rb") as f:
            tokenizer = f.read()
        figures[name] = {"bleu": round(metrics["eval_test"]["bleu"], 2), "loss": metrics["train"]["loss"],
                         "tokenizer": __import__("hashlib").sha256(tokenizer).hexdigest()[:16],
                         "ids": cached_ids(cache_dir)}
    results["translation"] = figures
    save(results)


def render(results):
    lines = []
    lines = ["Each part keeps its figures until it runs again: `python -m benchmarks.own_data --parts=PART` "
             f"({', '.join(PARTS)}).", ""]
    for recipe, runs in results.get("scale", {}).items():
        lines += [f"### Scale: `{' '.join(SCALE_COMMANDS[recipe]('CORPUS'))}` on a text file", "",
                  "CORPUS: the 50,000 unlabeled IMDB reviews, one a line, written again and again to the size. Peak "
                  "resident memory from `/usr/bin/time -v`; the first run tokenizes into the cache, the second finds "
                  f"it. {FLAGS.scale_steps} training steps of the tiny preset, batch 32.", "",
                  "| corpus | tokens | peak RSS, tokenizing + training | peak RSS, cache reused "
                  "| run time (first / cached) |", "|---|---|---|---|---|"]
        for size, f in sorted(runs.items(), key=lambda item: int(item[0])):
            lines.append(f"| {size} MB | {f['tokens']:,} | {f['first']['peak_mb']:,} MB "
                         f"| {f['cached']['peak_mb']:,} MB | {f['first']['seconds']} s / {f['cached']['seconds']} s |")
        notes = [f"- {size} MB: {f['note']}" for size, f in sorted(runs.items()) if f.get("note")]
        lines += [""] + notes if notes else []
        sizes = sorted(runs, key=int)
        if len(sizes) > 1:
            small, large = runs[sizes[0]]["first"]["peak_mb"], runs[sizes[-1]]["first"]["peak_mb"]
            lines += ["", f"Peak memory of the {sizes[-1]} MB run over the {sizes[0]} MB run's: "
                      f"**{large / small:.2f}x** (target at most 1.2x).", ""]
    rates = results.get("rates")
    if rates:
        lines += ["", f"Tokenizing {LIBRARY_SAMPLE_MB} MB of that text into the cache (read, tokenized, written), "
                  "timed in turns with SentencePiece's own `encode` on the same lines in memory, median of 3: "
                  f"**{rates['zoo_mb_s']} MB/s** against {rates['library_mb_s']} MB/s, "
                  f"**{rates['zoo_mb_s'] / rates['library_mb_s']:.2f}x** (target at least 0.7x)."]
    runs = results.get("multiclass")
    if runs:
        lines += ["", "### A four-class task from csv: files", "",
                  "IMDB reviews labelled by their stars (from the archive's file names) in four classes, 1-2, 3-4, "
                  "7-8 and 9-10 stars, written as csv files: a seeded 2,000 of IMDB train (less every 20th review), "
                  "500 of those held out, 1,000 of IMDB test. Test accuracy and macro-F1 of the exports' answers.",
                  "", "| model | test accuracy | macro-F1 | validation accuracy | time |", "|---|---|---|---|---|"]
        names = {"minilm": "all-MiniLM-L6-v2 fine-tuned", "scratch": "the zoo's small from scratch",
                 "nbsvm": "NBSVM-style, one vs rest"}
        for key, name in names.items():
            f = runs[key]
            lines.append(f"| {name} | {f['accuracy']:.2%} | {f['macro_f1']:.3f} | "
                         f"{f['validation_accuracy']:.2%} | {f['seconds']} s |" if "validation_accuracy" in f else
                         f"| {name} | {f['accuracy']:.2%} | {f['macro_f1']:.3f} | | {f['seconds']} s |")
        lines += [""] + [f"- `{runs[k]['command']}`" for k in ("minilm", "scratch")]
    runs = results.get("translation")
    if runs:
        same = runs["built_in"] == runs["files"]
        lines += ["", "### Multi30k from text files", "",
                  "`recipes.translate` with " + " ".join(f"`{flag}`" for flag in TRANSLATE_FLAGS) + ", once on "
                  "`--dataset=multi30k`, once on `--dataset=text:multi30k_files/{split}.{lang}` (the shared data's "
                  "files, decompressed).", "", "| dataset | test BLEU | final training loss | tokenizer (sha256) | "
                  "token cache: ids and row ends of each split and side (sha256) |", "|---|---|---|---|---|"]
        for key, name in (("built_in", "multi30k"), ("files", "text:")):
            f = runs[key]
            ids = ", ".join(f"{entry} {digest}" for entry, digest in sorted(f.get("ids", {}).items()))
            lines.append(f"| {name} | {f['bleu']} | {f['loss']:.4f} | {f['tokenizer']} | {ids} |")
        lines += ["", "The same tokenizer, token ids, loss and BLEU (a short run: the BLEU is near zero, what matters "
                  "is that the two are equal)." if same else "**They differ.**"]
    return "\n".join(lines)


def save(results):
    with open(work("results.json"), "w") as f:
        json.dump(results, f, indent=1)


def main(argv):
    del argv
    quick.shrink(parts=["scale", "rates"], sizes_mb=["1"], scale_recipes=["lm"], scale_steps=2,
                 work_dir=quick.folder("own_data") if quick.active() else None)
    path = work("results.json")
    results = json.load(open(path)) if os.path.exists(path) else {}
    for part in FLAGS.parts:
        {"scale": scale, "rates": rates, "multiclass": multiclass, "translation": translation}[part](results)
    write_section(SECTION, render(results))


if __name__ == "__main__":
    app.run(main)
