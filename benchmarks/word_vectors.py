r"""Reading pretrained word vectors for a vocabulary (issue 49): time and memory of zoo.data.word_vectors.

Two files, each read in a fresh process that samples its resident memory every 10 ms (the figure: the highest
sample above the one taken just before the read, after TensorFlow and the zoo were imported):

- GloVe 6B 50d ($ZOO_DATA_DIR/glove/glove.6B.50d.txt.gz, 400,000 x 50, gzip text) for a vocabulary of
  --vocabulary words: every 20th of GloVe's words, 5% of them replaced by words it does not hold;
- a synthetic word2vec binary file of --rows x 300 float32 (2,000,000: GoogleNews' shape, 2.4 GB) written to
  --scratch and deleted afterwards, for a vocabulary of as many words spread over it.

With gensim installed (--peer), its KeyedVectors.load_word2vec_format reads the same files in the same way
(no_header=True for GloVe's), as the peer: it keeps every row.

  python -m benchmarks.word_vectors
  python -m benchmarks.word_vectors --quick   # a smoke run: 1,000 words, a binary file of 10,000 rows
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from absl import app, flags

from benchmarks.common import quick

flags.DEFINE_integer("vocabulary", 20_000, "Words asked for.")
flags.DEFINE_integer("rows", 2_000_000, "Rows of the synthetic word2vec binary file.")
flags.DEFINE_string("scratch", tempfile.gettempdir(), "Folder for the synthetic file (it needs rows x 1.2 KB).")
flags.DEFINE_bool("peer", True, "Also time gensim's reader, when gensim is installed.")
FLAGS = flags.FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ = """
import json, os, sys, threading, time
import tensorflow  # noqa: F401 (imported first, as in a recipe, so that its memory is in the baseline)
from zoo.data import word_vectors

def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

path, who, form = sys.argv[1], sys.argv[2], sys.argv[3]
with open(sys.argv[4], encoding="utf-8") as f:
    words = f.read().split("\\n")
baseline, peak, done = resident_mb(), [0.0], threading.Event()

def sample():
    while not done.is_set():
        peak[0] = max(peak[0], resident_mb())
        time.sleep(0.01)

sampler = threading.Thread(target=sample)
sampler.start()
began, cpu = time.perf_counter(), time.process_time()
if who == "zoo":
    found = int(word_vectors.read_vectors(path, words).found.sum())
else:
    from gensim.models import KeyedVectors
    vectors = KeyedVectors.load_word2vec_format(path, binary=form == "binary", no_header=form == "glove")
    found = sum(word in vectors.key_to_index for word in words)
seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
done.set()
sampler.join()
peak[0] = max(peak[0], resident_mb())
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "extra_mb": peak[0] - baseline, "found": found}))
"""


def measure(path, who, form, words, folder):
    listing = os.path.join(folder, "words.txt")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(words))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", READ, path, who, form, listing], env=env, text=True,
                          capture_output=True)
    if done.returncode:
        raise RuntimeError(f"{who} on {path} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def glove_vocabulary(path, size):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        words = [line.split(" ", 1)[0] for number, line in enumerate(f) if number % 20 == 0][:size]
    return [f"absent-word-{i}" if i % 20 == 19 else word for i, word in enumerate(words)]


def write_binary(path, rows, dim=300, chunk=10_000):
    """A word2vec binary file as word2vec.c writes it: COUNT DIM, then word, space, float32 values, newline."""
    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        f.write(f"{rows} {dim}\n".encode())
        for start in range(0, rows, chunk):
            values = rng.standard_normal((min(chunk, rows - start), dim), np.float32)
            f.write(b"".join(f"w{start + i} ".encode() + row.tobytes() + b"\n" for i, row in enumerate(values)))


def main(argv):
    del argv
    quick.shrink(vocabulary=1000, rows=10_000)
    peers = ["zoo"]
    if FLAGS.peer:
        try:
            import gensim  # noqa: F401

            peers.append("gensim")
        except ImportError:
            print("gensim is not installed: the zoo alone.", flush=True)
    glove = os.path.join(os.environ.get("ZOO_DATA_DIR", os.path.join(ROOT, "..", "shared", "data")), "glove",
                         "glove.6B.50d.txt.gz")
    results = []
    with tempfile.TemporaryDirectory() as folder:
        words = glove_vocabulary(glove, FLAGS.vocabulary)
        for who in peers:
            results.append(("GloVe 6B 50d, gzip text, 400,000 x 50 (69 MB)", who, measure(glove, who, "glove",
                                                                                        words, folder)))
            print(results[-1], flush=True)
    binary = os.path.join(FLAGS.scratch, f"word_vectors_benchmark_{os.getpid()}.bin")
    try:
        print(f"Writing {FLAGS.rows:,} x 300 to {binary} ...", flush=True)
        write_binary(binary, FLAGS.rows)
        size_gb = os.path.getsize(binary) / 1e9
        step = max(1, FLAGS.rows // FLAGS.vocabulary)
        words = [f"w{i}" for i in range(0, FLAGS.rows, step)][: FLAGS.vocabulary]
        with tempfile.TemporaryDirectory() as folder:
            for who in peers:
                what = f"word2vec binary, {FLAGS.rows:,} x 300 ({size_gb:.1f} GB)"
                results.append((what, who, measure(binary, who, "binary", words, folder)))
                print(results[-1], flush=True)
    finally:
        if os.path.exists(binary):
            os.remove(binary)
    from benchmarks.common.report import machine

    print(f"\n{machine()}. A {FLAGS.vocabulary:,}-word vocabulary; each reader in a fresh process, its memory "
          "above the process's after its imports; the binary file freshly written (in the page cache).\n")
    print("| file | reader | seconds (wall) | CPU seconds | peak memory above baseline | words found |")
    print("|---|---|---|---|---|---|")
    for what, who, r in results:
        reader = "zoo.data.word_vectors.read_vectors" if who == "zoo" else "gensim load_word2vec_format"
        print(f"| {what} | {reader} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['extra_mb']:,.0f} MB | "
              f"{r['found']:,} |")


if __name__ == "__main__":
    app.run(main)
