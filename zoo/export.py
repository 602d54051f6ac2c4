"""Exports in TF Serving's layout, written so that no reader sees half a model.

`<export_dir>/<version>/` holds `saved_model.pb`, `variables/`,
`assets.extra/tf_serving_warmup_requests` (a few PredictionLogs TF Serving
replays at load) and `ops_manifest.json` (the ops the graph uses that core
TensorFlow does not register, e.g. TF Text's, and the import that provides
them). The version is written under a dot-folder TF Serving ignores, then
renamed into place in one step.
"""

import json
import os
import shutil

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

MANIFEST = "ops_manifest.json"
WARMUP = os.path.join("assets.extra", "tf_serving_warmup_requests")


def next_version(export_dir):
    versions = [int(n) for n in os.listdir(export_dir) if n.isdigit()] if os.path.isdir(export_dir) else []
    return max(versions, default=0) + 1


def graph_ops(saved_model_dir):
    """Every op type in a SavedModel's graph and function library (calls of
    the library's own functions left out)."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops, functions = set(), set()
    for meta_graph in proto.meta_graphs:
        ops.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            functions.add(function.signature.name)
            ops.update(node.op for node in function.node_def)
    return ops - functions


# Run in a fresh process that imports TensorFlow alone: the ops it cannot find are the export's extra needs.
_MISSING_IN_CORE = (
    "import json, sys\n"
    "import tensorflow as tf\n"
    "from tensorflow.python.framework import op_def_registry\n"
    "print(json.dumps([op for op in json.load(sys.stdin) if op_def_registry.get(op) is None]))\n"
)


def non_core_ops(ops):
    """Ops that a process importing TensorFlow alone has not registered (checked in such a
    process, against the op registry), each with the library that registers them here:
    "tensorflow_text" or "unknown"."""
    import subprocess
    import sys

    import tensorflow_text  # noqa: F401  (registers TF Text's ops)
    from tensorflow.python.framework import op_def_registry

    fresh = subprocess.run([sys.executable, "-c", _MISSING_IN_CORE], input=json.dumps(sorted(ops)), text=True,
                           capture_output=True, check=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    missing = json.loads(fresh.stdout.strip().splitlines()[-1])
    return {op: "tensorflow_text" if op_def_registry.get(op) is not None else "unknown" for op in missing}


def write_warmup_requests(version_dir, model_name, signature_name, inputs):
    """`inputs`: dict input name -> list of example values (one request)."""
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    request = predict_pb2.PredictRequest(
        model_spec=model_pb2.ModelSpec(name=model_name, signature_name=signature_name)
    )
    for name, values in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(values))
    log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
    path = os.path.join(version_dir, WARMUP)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(log.SerializeToString())


def export(module, signatures, export_dir, warmup_inputs, metadata=None):
    """Saves `module` as a new integer version of `export_dir` and returns its path.

    Args:
        module: a tf.Module holding the model, the tokenizer and the serving functions.
        signatures: dict signature name -> concrete function.
        export_dir: the model's folder in TF Serving's layout.
        warmup_inputs: dict input name -> example values for `serving_default`.
        metadata: JSON-able dict stored in the manifest (config, class names ...).
    """
    os.makedirs(export_dir, exist_ok=True)
    staging = os.path.join(export_dir, f".staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        tf.saved_model.save(module, staging, signatures=signatures)
        model_name = os.path.basename(os.path.normpath(export_dir))
        write_warmup_requests(staging, model_name, "serving_default", warmup_inputs)
        extra = non_core_ops(graph_ops(staging))
        manifest = {
            "non_core_ops": extra,
            "load_with": ["import tensorflow as tf"] + (["import tensorflow_text"] if extra else []),
            "note": (
                "Core TensorFlow ops only."
                if not extra
                else "TF Serving's stock build links TensorFlow Text's ops; in Python, import tensorflow_text "
                "before loading."
            ),
            "metadata": metadata or {},
        }
        with open(os.path.join(staging, MANIFEST), "w") as f:
            json.dump(manifest, f, indent=2)
        final = _rename_to_next_version(staging, export_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _rename_to_next_version(staging, export_dir):
    """Moves `staging` to the next free integer version (another exporter may take one first)."""
    for _ in range(10):
        final = os.path.join(export_dir, str(next_version(export_dir)))
        try:
            os.rename(staging, final)
            return final
        except OSError:
            if not os.path.exists(final):
                raise
    raise OSError(f"Could not find a free version folder in {export_dir}.")
