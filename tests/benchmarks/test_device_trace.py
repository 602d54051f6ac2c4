"""benchmarks/common/device_trace.py: the union of kernel intervals and the gaps between them, the kinds kernels are
sorted into, and a trace written by JAX's profiler read back (on a CPU: no device plane, so no kernels, but the steps
and their wall time, traced and not)."""

import pytest

from benchmarks.common import device_trace


def test_busy_time_is_the_union_of_the_intervals():
    assert device_trace.busy_ns([]) == 0
    assert device_trace.busy_ns([(0, 10), (5, 15), (20, 25)]) == 20  # overlap counted once, the gap not at all
    assert device_trace.busy_ns([(20, 25), (0, 30)]) == 30  # one interval inside another, in any order


def test_the_gaps_are_the_idle_time_between_the_first_and_the_last_interval():
    assert device_trace.gaps_ns([]) == []
    assert device_trace.gaps_ns([(20, 25), (0, 10), (5, 15), (40, 41)]) == [5, 15]
    assert device_trace.gaps_ns([(0, 30), (5, 10), (30, 35)]) == []  # inside another, or touching: no gap


@pytest.mark.parametrize("name, kind", [
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16", "attention"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "matrix product"),
    ("gemm_fusion_dot_general_395", "matrix product"),
    ("input_reduce_select_fusion", "reduction"),
    ("loop_compare_multiply_fusion_11", "other fusion"),
    ("input_transpose_fusion_98", "copy or set"),
    ("wrapped_broadcast", "other"),
])
def test_kernels_are_sorted_into_kinds_by_name(name, kind):
    assert device_trace.kind(name) == kind


def test_a_jax_trace_is_read_back(tmp_path):
    jax = pytest.importorskip("jax")
    step = jax.jit(lambda state, x: (x.sum(), state + x @ x))
    x = jax.numpy.ones((64, 64))
    state, wall, untraced = device_trace.traced_steps(step, x, x, 3, str(tmp_path))
    assert state.shape == (64, 64) and wall > 0 and untraced > 0
    summary = device_trace.summary(str(tmp_path), 3, wall, untraced)
    assert summary["wall_ms"] == pytest.approx(wall * 1e3) and summary["untraced_ms"] == pytest.approx(untraced * 1e3)
    assert summary["device"] is None and summary["kernel_ms"] == 0  # a CPU has no device plane
    assert summary["kernels_per_step"] == 0 and summary["idle_short_ms"] == summary["idle_long_ms"] == 0
    assert "ms untraced" in device_trace.render(summary)
    assert "no trace file" in device_trace.summary(str(tmp_path / "empty"), 3, wall)["error"]
