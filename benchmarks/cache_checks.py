r"""What checking the token cache costs (issue 45), and the Python API's memory on a long list.

Writes BENCHMARKS.md's `Token cache checks and the Python API's memory`:

- the cache: Tiny Shakespeare repeated to --size_mb of text, byte-level ids, tokenized into a fresh cache entry
  (zoo.data.cache.token_rows), then opened again --repeats times: each opening checks every file's size and
  sha256 (zoo.data.cache.check_entry). Beside them, a pass reading every id as a training epoch reads them
  (segments of 64 through TokenRows.span): the least an epoch costs, before any model runs.
- the Python API: a `tiny` sentiment run exported (zoo.train, in this process), then in fresh processes
  `zoo.load(export).predict` of 4,000 texts of 1 to 700 words, batched (batch_size 32, the default) against one
  call of the export's own signature with --peer_texts of them at once (what the API did before batching);
  peak resident memory of each process.

  python -m benchmarks.cache_checks
  python -m benchmarks.cache_checks --quick   # a smoke run: 1 MB of text, 100 texts predicted, the quick report
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

from benchmarks.common import quick

flags.DEFINE_integer("size_mb", 100, "Text tokenized into the cache entry, in MB.")
flags.DEFINE_integer("repeats", 3, "Openings of the entry timed (the median is reported).")
flags.DEFINE_integer("peer_texts", 1000, "Texts sent to the export's signature in one call (the peer).")
FLAGS = flags.FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREDICT = """
import json, random, resource, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
words = "the a film story moving dull long witty gorgeous and far too of it is was not".split()
rng = random.Random(0)
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 700))) for _ in range(int(sys.argv[3]))]
if sys.argv[2] == "zoo":
    import zoo
    answers = zoo.load(sys.argv[1]).predict(texts)
else:
    signature = tf.saved_model.load(sys.argv[1] + "/1").signatures["serving_default"]
    answers = signature(text=tf.constant(texts[: int(sys.argv[4])]))["label"].numpy()
print(json.dumps({"answers": len(answers), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def cache_figures(size_mb, repeats, folder):
    """Seconds to tokenize, to open (with the checks) and to read an epoch's ids of `size_mb` MB of text."""
    import numpy as np

    os.environ["ZOO_CACHE_DIR"] = os.path.join(folder, "cache")
    from zoo.data import cache

    with open(os.path.join(os.environ.get("ZOO_DATA_DIR", "../shared/data"), "tinyshakespeare", "input.txt")) as f:
        lines = f.read().splitlines()
    rows = max(1, size_mb * 10**6 // sum(len(line) + 1 for line in lines)) * lines

    def encode(texts):
        return [list(text.encode("utf-8")) for text in texts]

    began = time.perf_counter()
    entry = cache.token_rows({"benchmark": size_mb}, ((text, None) for text in rows), encode, "tokenizing",
                             in_graph=False)
    tokenize = time.perf_counter() - began
    opens = []
    for _ in range(repeats):
        began = time.perf_counter()
        entry = cache.TokenRows(entry.directory)
        opens.append(time.perf_counter() - began)
    began = time.perf_counter()
    total, segment = entry.num_tokens, 64 * 32
    for start in range(0, total, segment):
        np.asarray(entry.span(start, min(start + segment, total))).sum()
    epoch = time.perf_counter() - began
    return {"tokens": total, "tokenize_s": tokenize, "open_s": statistics.median(opens), "read_epoch_s": epoch}


def api_figures(folder, peer_texts, texts):
    """Peak MB of predicting `texts` long texts through zoo.load (batched) and through the export in one call."""
    import zoo

    export_dir = os.path.join(folder, "export")
    zoo.train("sentiment", model_dir=os.path.join(folder, "run"), export_dir=export_dir, preset="tiny",
              dataset="sst2", max_examples=200, vocab_size=300, batch_size=16, max_length=512, train_steps=4,
              checkpoint_every=4, mode="train")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT}
    figures = {}
    for who, extra in (("zoo", []), ("signature", [str(peer_texts)])):
        done = subprocess.run([sys.executable, "-c", PREDICT, export_dir, who, str(texts), *extra], env=env, text=True,
                              capture_output=True, check=True)
        figures[who] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv):
    del argv
    from benchmarks.common.report import write_section

    quick.shrink(size_mb=1, repeats=1, peer_texts=10)
    texts = 100 if quick.active() else 4000

    with tempfile.TemporaryDirectory() as folder:
        print(f"Tokenizing {FLAGS.size_mb} MB into a fresh cache entry ...", flush=True)
        c = cache_figures(FLAGS.size_mb, FLAGS.repeats, folder)
        print(c, flush=True)
        print(f"Training and exporting a tiny classifier, then predicting {texts:,} texts in fresh processes ...",
              flush=True)
        a = api_figures(folder, FLAGS.peer_texts, texts)
        print(a, flush=True)
    body = f"""
| what | the zoo | beside it |
|---|---|---|
| opening a {FLAGS.size_mb} MB cache entry ({c['tokens']:,} byte ids) with every file's size and sha256 checked | {c['open_s']:.2f} s (median of {FLAGS.repeats}) | tokenizing it: {c['tokenize_s']:.1f} s; reading its ids once in spans of 2,048 (`TokenRows.span`, as the LM's batches read them): {c['read_epoch_s']:.1f} s (the check is {100 * c['open_s'] / c['read_epoch_s']:.1f}% of that read alone) |
| `zoo.load(export).predict` of {texts:,} texts of 1-700 words, `tiny` classifier at 512 tokens, batch_size 32 | {a['zoo']['peak_mb']:,.0f} MB peak | the export's signature called with {FLAGS.peer_texts:,} of them at once: {a['signature']['peak_mb']:,.0f} MB |

The cache checks every entry each time a run opens it: the sha256 of its files costs the figure above, once per
run, against an epoch that reads every id at least once and then trains on them (a model's step costs far more
than reading its ids). Byte-level ids here tokenize quickly, so the check's share of tokenizing is the upper side.
"""
    write_section("Token cache checks and the Python API's memory", body)


if __name__ == "__main__":
    app.run(main)
