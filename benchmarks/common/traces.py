"""Reading TensorFlow profiler traces, such as the recipes' `--profile_steps` write under
`model_dir/train/plugins/profile`: each op's self time, the kind of work it does and the part of the
training step it belongs to."""

import collections
import re

KINDS = ("matrix products", "softmax", "layout", "optimizer", "element-wise and reductions", "runtime")
LAYOUT = ("Transpose", "Slice", "StridedSlice", "Concat", "Pad", "Tile", "Gather", "Scatter", "SegmentSum", "Reshape",
          "Pack", "Unpack", "Split", "Identity", "Bitcast", "Fill", "ZerosLike", "BroadcastTo", "Range", "OneHot")
# Keras 3's Adam and AdamW run as plain ops under the optimizer's name scope (no fused kernel): the optimizer's
# name, which Keras derives from its class (adam, adam_w, and the zoo's scaled_adam, scaled_adam_w), _N when repeated
# (TensorFlow adds another _N to a scope entered again in one graph).
OPTIMIZER_SCOPE = re.compile(r"(^|/)(scaled_)?adam(_w)?(_\d+)*/")


# Parts of a training step, by the op's name scope (forward and backward alike), tried in this order.
PARTS = (
    ("optimizer", OPTIMIZER_SCOPE),
    ("gradient scaling and clipping", re.compile(r"clip_by_global_norm|(^|/)while/truediv")),
    ("dropout", re.compile(r"dropout")),
    ("layer norm and residual", re.compile(r"layer_normalization|add_norm|(^|/)norm")),
    ("attention", re.compile(r"attention")),
    ("feed-forward", re.compile(r"feed_forward")),
)
OTHER_PART = "embeddings, output layer, loss and the rest"


def part(op_name):
    """The part of the training step an op named `op_name` belongs to (PARTS, else OTHER_PART)."""
    return next((name for name, pattern in PARTS if pattern.search(op_name)), OTHER_PART)


def kind(op_type, op_name=""):
    """The kind of work of an op of type `op_type` (oneDNN's kernels carry an `_Mkl` or `_MklNative` prefix)
    named `op_name` (its full name in the graph: ops under the optimizer's name scope are the optimizer's)."""
    if not op_type or "::" in op_type or op_type == "ParallelFor" or op_type.startswith("Iterator"):
        return "runtime"  # the executor's own work, thread-pool regions, waiting for the input pipeline
    name = op_type.removeprefix("_MklNative").removeprefix("_Mkl")
    if "MatMul" in name or "Einsum" in name or "Conv" in name:
        return "matrix products"
    if "Softmax" in name:
        return "softmax"
    if OPTIMIZER_SCOPE.search(op_name) or "ApplyAdam" in name:
        return "optimizer"
    if any(part in name for part in LAYOUT):
        return "layout"
    return "element-wise and reductions"


def self_times(xplane_path):
    """{(op type, op name): self time in seconds} on TensorFlow's compute threads of one profiler trace: each
    event's duration less the part of it that events nested in it cover (an op's kernel inside the executor's
    step, say). The op name is the event's full name (`scope/op:Type` for ops), the type its display name."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    times = collections.Counter()
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            open_events = []  # (end, key) of the events enclosing the current one
            for event in sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps)):
                metadata = plane.event_metadata[event.metadata_id]
                key = (metadata.display_name or metadata.name, metadata.name.rpartition(":")[0] or metadata.name)
                while open_events and open_events[-1][0] <= event.offset_ps:
                    open_events.pop()
                end = event.offset_ps + event.duration_ps
                if open_events:  # only the part inside the parent (a partial overlap takes no more than that)
                    times[open_events[-1][1]] -= (min(end, open_events[-1][0]) - event.offset_ps) / 1e12
                times[key] += event.duration_ps / 1e12
                open_events.append((end, key))
    return times


def by_kind(times):
    """{kind: seconds} of `self_times`' figures, every kind of KINDS present."""
    totals = dict.fromkeys(KINDS, 0.0)
    for (op_type, op_name), seconds in times.items():
        totals[kind(op_type, op_name)] += seconds
    return totals


def by_type(times):
    """{op type: seconds} of `self_times`' figures, largest first."""
    totals = collections.Counter()
    for (op_type, _), seconds in times.items():
        totals[op_type] += seconds
    return totals


def by_part(times):
    """{part: seconds} of `self_times`' figures, over the ops the model and optimizer run (the runtime's own
    events left out), every part present, in PARTS order."""
    totals = dict.fromkeys([name for name, _ in PARTS] + [OTHER_PART], 0.0)
    for (op_type, op_name), seconds in times.items():
        if kind(op_type, op_name) != "runtime":
            totals[part(op_name)] += seconds
    return totals
