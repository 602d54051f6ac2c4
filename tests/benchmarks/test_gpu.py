"""benchmarks/gpu.py's CPU path: the tiny preset trains both models on Keras's JAX backend, in a subprocess
(Keras fixes its backend per process), counts their work as benchmarks/common/costs.py does and times base's
step in parts (--breakdown); the changes it tries (several steps a program, the fused layer norm) and the plain loss
the dense one replaced (--cross_entropy=gather) train too, compute what they replace, and the attention check says
what a CPU runs."""

import json
import math
import os
import subprocess
import sys
import types

from benchmarks.common import costs
from tests.conftest import HANG
import pytest

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_gpu_benchmark(backend, *arguments):
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "benchmarks.gpu", *arguments], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=HANG)


def test_the_tiny_preset_trains_both_models_on_jax_and_counts_their_work(tmp_path):
    figures = tmp_path / "gpu.json"
    result = run_gpu_benchmark("jax", "--preset=tiny", "--rounds=2", "--peak_seconds=0.2", f"--json={figures}",
                               "--nowrite", "--breakdown")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = json.loads(figures.read_text())
    assert found["preset"] == "tiny" and found["peak_flops"] > 0 and set(found["models"]) == {"base", "txl"}
    assert found["options"]["cross_entropy"] == "dense"  # the default since 2026-11-27 (1.08x on an H100)
    for name, model in found["models"].items():
        assert model["tokens_per_second"] > 0 and len(model["round_seconds"]) == 2, name
        assert len(model["losses"]) == 3 and all(math.isfinite(loss) for loss in model["losses"]), name
        assert f"| {name} | {model['tokens_per_second']:,.0f} |" in result.stdout  # the table printed
    txl = types.SimpleNamespace(hidden_dim=64, intermediate_dim=128, num_layers=2)
    per_token = costs.training_flops(costs.multiply_adds(txl, 16, 32, 16, 512)) / 16
    assert math.isclose(found["models"]["txl"]["flops_per_token"], per_token)
    # base's sentences have 9-16 tokens: its work per token lies between those of the shortest and longest pairs.
    base = types.SimpleNamespace(hidden_dim=64, intermediate_dim=128, num_encoder_layers=2, num_decoder_layers=2)
    pair = lambda n: costs.training_flops(costs.seq2seq_multiply_adds(base, n, n, 512)) / (2 * n)  # noqa: E731
    assert pair(9) < found["models"]["base"]["flops_per_token"] < pair(16)
    assert 0 < found["models"]["base"]["real_share"] < 1  # padding to the bucket's width is not counted
    # --breakdown: one step of base's commonest shape in parts; a step does more than its forward pass.
    parts = found["models"]["base"]["breakdown"]
    assert len(parts["shape"]) == 2 and 0 < parts["forward_ms"] < parts["step_ms"]
    assert f"base's step in parts ({parts['shape'][0]:,} pairs of width {parts['shape'][1]}" in result.stdout


def test_the_changes_to_try_train_both_models_and_the_attention_check_reports(tmp_path):
    figures = tmp_path / "gpu.json"
    result = run_gpu_benchmark("jax", "--preset=tiny", "--rounds=1", "--peak_seconds=0.1", f"--json={figures}",
                               "--nowrite", "--steps_per_call=3", "--cross_entropy=gather", "--layer_norm=fused",
                               "--check_attention")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = json.loads(figures.read_text())
    assert found["options"] == {"steps_per_call": 3, "cross_entropy": "gather", "layer_norm": "fused"}
    for name, model in found["models"].items():
        assert model["tokens_per_second"] > 0 and all(math.isfinite(loss) for loss in model["losses"]), name
        assert model["calls"] < model["steps"], name  # several steps a program
    # A CPU has no cuDNN: XLA's attention at every length, as expected; 16 keys are the tiny preset's widest batch.
    assert set(found["attention"]) == {"16", "127", "128", "200"}
    assert all(c["found"] == c["expected"] == "XLA" for c in found["attention"].values())
    assert "Changes from the plain step: `--steps_per_call=3`, `--cross_entropy=gather`" in result.stdout


SAME_RESULTS = """
import json
import jax, numpy as np
from benchmarks import gpu

rng = np.random.default_rng(0)
logits = (rng.normal(size=(3, 5, 11)) * 3).astype("float32")
labels = rng.integers(2, 11, size=(3, 5)).astype("int32")
labels[0, 3:] = gpu.PAD
losses = {form: [float(gpu.cross_entropy(logits, labels, s, form)) for s in (0.0, 0.1)] for form in ("gather", "dense")}
gradient = lambda form: jax.grad(lambda l: gpu.cross_entropy(l, labels, 0.1, form))(logits)  # noqa: E731
gradients = float(np.abs(gradient("gather") - gradient("dense")).max())

def step(state, batch):  # a linear model's SGD step; its extras, the outputs, feed the next step's second input
    def loss(w):
        y = batch["inputs"][0] @ w + batch["inputs"][1]
        return ((y - batch["labels"]) ** 2).mean(), y
    (value, y), grad = jax.value_and_grad(loss, has_aux=True)(state[0])
    return value, [y], [state[0] - 0.1 * grad]

xs, ys = rng.normal(size=(4, 2, 3)).astype("float32"), rng.normal(size=(4, 2, 5)).astype("float32")
state, carried = [rng.normal(size=(3, 5)).astype("float32")], [np.zeros((2, 5), "float32")]
one_by_one = state
for x, y in zip(xs, ys):
    value, carried, one_by_one = step(one_by_one, {"inputs": [x, *carried], "labels": y})
together = jax.jit(gpu.steps_in_one_call(step, carried=1))(state, {"inputs": [xs, np.zeros((2, 5), "float32")],
                                                                   "labels": ys})
print(json.dumps({"losses": losses, "gradients": gradients, "value": [float(value), float(together[0])],
                  "state": float(np.abs(one_by_one[0] - together[2][0]).max()),
                  "carried": float(np.abs(carried[0] - together[1][0]).max())}))
"""


def test_the_changes_compute_what_they_replace():
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([sys.executable, "-c", SAME_RESULTS], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=HANG)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.splitlines()[-1])
    for gather, dense in zip(found["losses"]["gather"], found["losses"]["dense"]):
        assert math.isclose(gather, dense, rel_tol=1e-6)  # the same loss, with and without label smoothing
    assert found["gradients"] < 1e-6
    # Four steps in one program (the second input carried from step to step) are the four steps one by one.
    assert math.isclose(*found["value"], rel_tol=1e-5) and found["state"] < 1e-5 and found["carried"] < 1e-5


def test_it_names_the_backend_it_needs():
    result = run_gpu_benchmark("tensorflow", "--preset=tiny")
    assert result.returncode != 0
    assert "runs on Keras's JAX backend" in result.stderr + result.stdout
