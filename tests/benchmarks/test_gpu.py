"""benchmarks/gpu.py's CPU path: the tiny preset trains both models on Keras's JAX backend, in a subprocess
(Keras fixes its backend per process), counts their work as benchmarks/common/costs.py does and times base's
step in parts (--breakdown)."""

import json
import math
import os
import subprocess
import sys
import types

from benchmarks.common import costs
from tests.conftest import HANG

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


def test_it_names_the_backend_it_needs():
    result = run_gpu_benchmark("tensorflow", "--preset=tiny")
    assert result.returncode != 0
    assert "runs on Keras's JAX backend" in result.stderr + result.stdout
