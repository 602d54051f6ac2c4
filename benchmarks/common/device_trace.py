"""Where a compiled JAX step spends its device time: `traced_steps` runs a step under `jax.profiler.trace` and
`summary` reads the trace back (`jax.profiler.ProfileData`, no TensorBoard needed): the time of each XLA
operation and kernel, grouped into kinds (matrix products, attention, fusions of elementwise work and
reductions, random numbers, copies), and how much of the wall time the device was busy at all."""

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


def traced_steps(step, state, batch, steps, directory):
    """Runs `state = step(state, batch)[-1]` `steps` times under the profiler, writing its trace into
    `directory`: (state, wall seconds per step)."""
    import jax

    with jax.profiler.trace(directory):
        began = time.perf_counter()
        for _ in range(steps):
            outputs = step(state, batch)
            state = outputs[-1]
        jax.block_until_ready(outputs)
        wall = (time.perf_counter() - began) / steps
    return state, wall


def busy_ns(intervals):
    """Length of the union of (start, end) intervals."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def summary(directory, steps, wall_seconds, top=25):
    """The trace in `directory` as a dict: per step, the wall time, the device's busy time (the union of its
    kernels' intervals), each kind's kernel time, and the `top` kernels and XLA operations by time."""
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
    return {
        "device": planes[0].name if planes else None,
        "wall_ms": wall_seconds * 1e3,
        "busy_ms": per_step(busy_ns(intervals)),
        "kernel_ms": per_step(sum(kernels.values())),
        "kinds_ms": {k: per_step(ns) for k, ns in kinds.most_common()},
        "kernels_ms": [(name[:120], per_step(ns)) for name, ns in kernels.most_common(top)],
        "operations_ms": [(name[:120], per_step(ns)) for name, ns in operations.most_common(top)],
        "lines": [line.name for plane in planes[:1] for line in plane.lines],
    }


def render(s):
    """`summary`'s dict as lines of text."""
    if "error" in s:
        return s["error"]
    lines = [f"trace of {s['device']}: {s['wall_ms']:.1f} ms a step, device busy {s['busy_ms']:.1f} ms, "
             f"kernels {s['kernel_ms']:.1f} ms (lines: {', '.join(s['lines'])})", "by kind (ms a step):"]
    lines += [f"  {k:<18} {ms:7.2f}" for k, ms in s["kinds_ms"].items()]
    lines += ["top kernels (ms a step):"] + [f"  {ms:7.2f}  {name}" for name, ms in s["kernels_ms"]]
    lines += ["top XLA operations (ms a step):"] + [f"  {ms:7.2f}  {name}" for name, ms in s["operations_ms"]]
    return "\n".join(lines)
