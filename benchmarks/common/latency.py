"""Serving latency of a text-in export, measured in a fresh TensorFlow process as a server would load it
(TF Text imported only where the export's ops manifest lists its ops). No flags."""

import json
import os
import subprocess
import sys

PROGRAM = """
import json, sys, time
import tensorflow as tf
if {text_ops}:
    import tensorflow_text
serve = tf.saved_model.load({path!r}).signatures["serving_default"]
texts = json.loads(sys.stdin.read())
result = {{}}
for size in (1, 64):
    batch = tf.constant(texts[:size])
    serve(text=batch)  # the first call traces nothing more, but warms the allocator and thread pools
    times = []
    for _ in range({repeats}):
        began = time.perf_counter()
        serve(text=batch)["probabilities"].numpy()
        times.append(time.perf_counter() - began)
    result[size] = sorted(times)[len(times) // 2]
print(json.dumps(result))
"""


def export_latency(export_dir, texts, repeats=10):
    """{1: seconds, 64: seconds}: the median time of `serving_default` on the first text and on the first
    64 texts, in a fresh process, for the newest version in export_dir."""
    version = max((v for v in os.listdir(export_dir) if v.isdigit()), key=int)
    path = os.path.join(export_dir, version)
    with open(os.path.join(path, "ops_manifest.json")) as f:
        text_ops = bool(json.load(f)["non_core_ops"])
    program = PROGRAM.format(text_ops=text_ops, path=path, repeats=repeats)
    done = subprocess.run([sys.executable, "-c", program], input=json.dumps(list(texts[:64])), capture_output=True,
                          text=True, check=True, cwd="/")
    return {int(k): v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
