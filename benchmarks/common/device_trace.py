"""Where a compiled JAX step spends its device time: `traced_steps` runs a step under `jax.profiler.trace` and
`summary` reads the trace back (`jax.profiler.ProfileData`, no TensorBoard needed): the time of each XLA
operation and kernel, grouped into kinds (matrix products, attention, fusions of elementwise work and
reductions, random numbers, copies), how much of the wall time the device was busy at all, and whether its idle time
lies in short gaps between kernels (launching them) or in long ones (the host behind)."""

import collections
import glob
import time

KINDS = (  # (kind, words any of which in a kernel's or operation's name puts it in that kind), first match wins
    ("attention", ("fmha", "flash", "cudnn", "attention")),
    ("matrix product", ("gemm", "xmma", "cutlass", "cublas", "matmul", "dot", "wgmma", "sm90_")),
    ("random numbers", ("threefry", "philox", "rng", "random")),
    ("copy or set", ("memcpy", "memset", "copy", "transpose")),
    ("scatter or gather", ("scatter", "gather", "dynamic-update-slice", "dynamic-slice")),
    ("reduction", ("reduce", "input_fusion", "input_reduce")),
    ("other fusion", ("fusion", "loop_")),
)


def kind(name):
    lowered = name.lower()
    return next((k for k, words in KINDS if any(w in lowered for w in words)), "other")


LONG_GAP_NS = 20_000  # a gap between kernels longer than this is the device waiting on the host, not a launch


def timed_steps(step, state, batch, steps):
    """Runs `state = step(state, batch)[-1]` `steps` times: (state, wall seconds per call)."""
    import jax

    began = time.perf_counter()
    for _ in range(steps):
        outputs = step(state, batch)
        state = outputs[-1]
    jax.block_until_ready(outputs)
    return state, (time.perf_counter() - began) / steps


def traced_steps(step, state, batch, steps, directory):
    """`timed_steps` without the profiler, then again under it, writing its trace into `directory`: (state, wall
    seconds per call traced, and untraced: what the profiler itself adds is their difference)."""
    import jax

    state, untraced = timed_steps(step, state, batch, steps)
    with jax.profiler.trace(directory):
        state, wall = timed_steps(step, state, batch, steps)
    return state, wall, untraced


def busy_ns(intervals):
    """Length of the union of (start, end) intervals."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def gaps_ns(intervals):
    """The idle gaps between the union of (start, end) intervals, first to last, as a list of lengths."""
    gaps, end = [], None
    for s, e in sorted(intervals):
        if end is not None and s > end:
            gaps.append(s - end)
        end = e if end is None else max(end, e)
    return gaps


def summary(directory, steps, wall_seconds, untraced_seconds=None, top=30):
    """The trace in `directory` as a dict: per step, the wall time (traced and, if given, untraced), the device's
    busy time (the union of its kernels' intervals), its idle gaps between kernels split into short ones (kernel
    launches) and long ones (LONG_GAP_NS or more: the host behind), the kernels launched, each kind's kernel time,
    and the `top` kernels and XLA operations by time."""
    from jax.profiler import ProfileData

    paths = sorted(glob.glob(f"{directory}/**/*.xplane.pb", recursive=True))
    if not paths:
        return {"error": f"no trace file under {directory}"}
    data = ProfileData.from_file(paths[-1])
    planes = [p for p in data.planes if p.name.startswith("/device:")]
    kernels, operations, intervals = collections.Counter(), collections.Counter(), []
    for plane in planes[:1]:  # the first device
        for line in plane.lines:
            events = list(line.events)
            if line.name == "XLA Ops":
                for e in events:
                    operations[e.name] += e.duration_ns
            elif line.name.startswith("Stream") or "Compute" in line.name:
                for e in events:
                    kernels[e.name] += e.duration_ns
                    intervals.append((e.start_ns, e.start_ns + e.duration_ns))
    per_step = lambda ns: ns / steps / 1e6  # noqa: E731  nanoseconds over the traced steps -> ms a step
    kinds = collections.Counter()
    for name, ns in kernels.items():
        kinds[kind(name)] += ns
    gaps = gaps_ns(intervals)
    long_gaps = [g for g in gaps if g >= LONG_GAP_NS]
    return {
        "device": planes[0].name if planes else None,
        "wall_ms": wall_seconds * 1e3,
        "untraced_ms": None if untraced_seconds is None else untraced_seconds * 1e3,
        "busy_ms": per_step(busy_ns(intervals)),
        "kernel_ms": per_step(sum(kernels.values())),
        "kernels_per_step": len(intervals) / steps,
        "idle_short_ms": per_step(sum(gaps) - sum(long_gaps)),
        "idle_long_ms": per_step(sum(long_gaps)),
        "long_gaps_per_step": len(long_gaps) / steps,
        "kinds_ms": {k: per_step(ns) for k, ns in kinds.most_common()},
        "kernels_ms": [(name[:120], per_step(ns)) for name, ns in kernels.most_common(top)],
        "operations_ms": [(name[:120], per_step(ns)) for name, ns in operations.most_common(top)],
        "lines": [line.name for plane in planes[:1] for line in plane.lines],
    }


def render(s):
    """`summary`'s dict as lines of text."""
    if "error" in s:
        return s["error"]
    untraced = "" if s.get("untraced_ms") is None else f" ({s['untraced_ms']:.1f} ms untraced)"
    lines = [f"trace of {s['device']}: {s['wall_ms']:.1f} ms a step{untraced}, device busy {s['busy_ms']:.1f} ms, "
             f"kernels {s['kernel_ms']:.1f} ms, {s['kernels_per_step']:.0f} kernels a step (lines: "
             f"{', '.join(s['lines'])})",
             f"idle between kernels: {s['idle_short_ms']:.2f} ms in gaps under {LONG_GAP_NS // 1000} us (launches), "
             f"{s['idle_long_ms']:.2f} ms in {s['long_gaps_per_step']:.1f} longer gaps a step (the host behind); "
             f"the rest of the wall time is before the first kernel and after the last", "by kind (ms a step):"]
    lines += [f"  {k:<18} {ms:7.2f}" for k, ms in s["kinds_ms"].items()]
    lines += ["top kernels (ms a step):"] + [f"  {ms:7.2f}  {name}" for name, ms in s["kernels_ms"]]
    lines += ["top XLA operations (ms a step):"] + [f"  {ms:7.2f}  {name}" for name, ms in s["operations_ms"]]
    return "\n".join(lines)
