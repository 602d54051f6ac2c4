"""Exports in TF Serving's layout, written so that no reader sees half a model.

`<export_dir>/<version>/` holds `saved_model.pb`, `variables/`, `assets.extra/tf_serving_warmup_requests` (a few
PredictionLogs TF Serving replays at load) and `ops_manifest.json` (the ops the graph uses that core TensorFlow does
not register, e.g. TF Text's, and the import that provides them). The version is written under a dot-folder TF
Serving ignores, then renamed into place in one step; the dot-folder of an export that was killed is removed by the
next export. `find_version` and `load_version` read an export back (zoo.load). The manifest also records a digest
of what was exported (`source_digest`), so that exporting an unchanged checkpoint again finds its version
(`unchanged_version`) instead of writing a duplicate.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from zoo.core import disk
from zoo.runs import checkpoints, run_lock

MANIFEST = "ops_manifest.json"
VARIABLES_INDEX = os.path.join("variables", "variables.index")
WARMUP = os.path.join("assets.extra", "tf_serving_warmup_requests")
STAGING = ".staging-"  # + "<host>-<pid>": the writing process's version, until it is complete
_STAGING_NAME = re.compile(rf"{re.escape(STAGING)}(?:(?P<host>.+)-)?(?P<pid>\d+)$")  # older zoos: .staging-<pid>


def _versions(path):
    return [int(n) for n in os.listdir(path) if n.isdigit()] if os.path.isdir(path) else []


def source_digest(model_dir, average=1, metadata=None, step=None):
    """A digest of what an export of `model_dir` would hold: the run's config.json, the index files (which hold
    each tensor's checksum) of the newest `average` checkpoints up to `step` (the one loaded; None: the newest)
    and the export's `metadata` (its serving options: decoding, threshold ...), or None without a checkpoint. The
    index files alone are read: the load has read the tensors already."""
    steps = [s for s in checkpoints.checkpoint_steps(model_dir) if step is None or s <= step][:average]
    if not steps:
        return None
    digest = hashlib.sha256(json.dumps(metadata, sort_keys=True, default=str).encode())
    paths = [os.path.join(model_dir, "config.json"), *(f"{checkpoints.path_of(model_dir, s)}.index" for s in steps)]
    for path in paths:
        with contextlib.suppress(OSError), open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read())
    return digest.hexdigest()


def unchanged_version(export_dir, digest):
    """The newest version of `export_dir` when its manifest records `digest` (the same checkpoint exported
    before), else None."""
    newest = find_version(export_dir) if digest and os.path.isdir(export_dir) else None
    try:
        with open(os.path.join(newest, MANIFEST)) as f:
            return newest if json.load(f).get("source_digest") == digest else None
    except (TypeError, OSError, ValueError, AttributeError):
        return None


def find_version(path):
    """The version folder `path` names: `path` itself when it holds a part of an export (saved_model.pb,
    variables/ or the manifest), else the newest integer version in it that does (an --export_dir); None
    when neither. A version with parts missing is found all the same: load_version names it as damaged
    rather than an older version being loaded in its place."""
    if holds_export_part(path):
        return path
    versions = [v for v in _versions(path) if holds_export_part(os.path.join(path, str(v)))]
    return os.path.join(path, str(max(versions))) if versions else None


def holds_export_part(path):
    return any(os.path.exists(os.path.join(path, part)) for part in ("saved_model.pb", "variables", MANIFEST))


def missing_files(version_dir):
    """The files of a SavedModel with variables that `version_dir` lacks (paths relative to it): the graph,
    the variables' index and each of its data shards."""
    missing = [name for name in ("saved_model.pb", VARIABLES_INDEX)
               if not os.path.isfile(os.path.join(version_dir, name))]
    variables = os.path.join(version_dir, "variables")
    shards = [n for n in os.listdir(variables) if n.startswith("variables.data-")] if os.path.isdir(variables) else []
    count = int(shards[0].rsplit("-of-", 1)[1]) if shards and "-of-" in shards[0] else 1
    return missing + [os.path.join("variables", f"variables.data-{i:05d}-of-{count:05d}") for i in range(count)
                      if f"variables.data-{i:05d}-of-{count:05d}" not in shards]


def load_version(version_dir):
    """(the SavedModel loaded, the metadata its manifest records) of an export's version folder; TF Text
    is imported first when the manifest says its graph needs TF Text's ops. A version with a file missing
    or unreadable is refused as damaged, naming the file."""
    path = os.path.join(version_dir, MANIFEST)
    missing = missing_files(version_dir)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        if missing:
            missing.append(MANIFEST)
        else:
            raise ValueError(f"{version_dir} holds a SavedModel but no {MANIFEST}: the zoo writes one beside every "
                             "version it exports (if it was deleted, export the run again); a SavedModel made "
                             "elsewhere is loaded with tf.saved_model.load.") from None
    except ValueError as error:
        raise ValueError(f"{path} is damaged ({error}): export the run again.") from None
    if missing:
        raise ValueError(f"{version_dir} is a damaged export: {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing. Export the run again, or load another "
                         "version of the export.")
    if "tensorflow_text" in manifest.get("non_core_ops", {}).values():
        import tensorflow_text  # noqa: F401  (registers TF Text's ops before the graph is read)
    try:
        saved = tf.saved_model.load(version_dir)
    except (OSError, IndexError, tf.errors.DataLossError) as error:  # a file cut short or overwritten
        raise ValueError(f"{version_dir} is a damaged export: TensorFlow cannot read it "
                         f"({str(error).splitlines()[0]}). Export the run again, or load another version of the "
                         "export.") from None
    return saved, manifest.get("metadata", {})


def graph_ops(saved_model_dir):
    """Every op type in a SavedModel's graph and function library (calls of the library's own functions left out)."""
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


# Op name -> whether a process importing TensorFlow alone registers it: the same for this process's life, so
# a process that exports again (zoo.train in a loop, a test suite) asks a fresh process only about new ops.
_IN_CORE = {}


def non_core_ops(ops):
    """Ops that a process importing TensorFlow alone has not registered (checked in such a process, against the op
    registry), each with the library that registers them here: "tensorflow_text" or "unknown"."""
    import subprocess
    import sys

    import tensorflow_text  # noqa: F401  (registers TF Text's ops)
    from tensorflow.python.framework import op_def_registry

    unasked = sorted(set(ops) - set(_IN_CORE))
    if unasked:
        fresh = subprocess.run([sys.executable, "-c", _MISSING_IN_CORE], input=json.dumps(unasked), text=True,
                               capture_output=True, check=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        missing = set(json.loads(fresh.stdout.strip().splitlines()[-1]))
        _IN_CORE.update((op, op not in missing) for op in unasked)
    return {op: "tensorflow_text" if op_def_registry.get(op) is not None else "unknown"
            for op in sorted(ops) if not _IN_CORE[op]}


def export(module, signatures, export_dir, warmup_inputs, metadata=None, source=None):
    """Saves `module` (a tf.Module holding the model, the tokenizer and the serving functions) with `signatures`
    ({name: concrete function}) as a new integer version of `export_dir`, and returns its path. `warmup_inputs`
    ({input name: example values}) is the request for `serving_default`; `metadata` (a JSON-able dict: config, class
    names ...) and `source` (the `source_digest` of what is exported) are kept in the manifest. A write the file
    system refuses (a full disk ...) is one zoo.core.disk.WriteError; the versions already there stay as they were."""
    created = not os.path.isdir(export_dir)
    staging = os.path.join(export_dir, f"{STAGING}{socket.gethostname()}-{os.getpid()}")
    try:
        os.makedirs(export_dir, exist_ok=True)
        remove_abandoned(export_dir)
        shutil.rmtree(staging, ignore_errors=True)
        _write_version(module, signatures, staging, os.path.basename(os.path.normpath(export_dir)), warmup_inputs,
                       metadata, source)
        return _rename_to_next_version(staging, export_dir)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(export_dir)  # only if empty: a failed first export leaves no folder behind
        refused = disk.write_error(error, "the export", export_dir,
                                   "no version was half-written, and those already there are as they were")
        if refused is None:
            raise
        raise refused from None


def _write_version(module, signatures, staging, model_name, warmup_inputs, metadata, source):
    """Writes a whole version into the folder `staging`: the SavedModel, the warm-up request (`warmup_inputs` for
    serving_default) and the manifest."""
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    tf.saved_model.save(module, staging, signatures=signatures)
    spec = model_pb2.ModelSpec(name=model_name, signature_name="serving_default")
    request = predict_pb2.PredictRequest(model_spec=spec)
    for name, values in warmup_inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(values))
    log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
    os.makedirs(os.path.join(staging, os.path.dirname(WARMUP)), exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(staging, WARMUP)) as writer:
        writer.write(log.SerializeToString())
    extra = non_core_ops(graph_ops(staging))
    note = ("TF Serving's stock build links TensorFlow Text's ops; in Python, import tensorflow_text before loading."
            if extra else "Core TensorFlow ops only.")
    load_with = ["import tensorflow as tf"] + (["import tensorflow_text"] if extra else [])
    manifest = {"non_core_ops": extra, "load_with": load_with, "note": note, "metadata": metadata or {},
                "source_digest": source}
    with open(os.path.join(staging, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=2)


def remove_abandoned(export_dir):
    """Removes the staging folders of exports whose process no longer runs (a killed export leaves a
    whole model there). Another host's are left alone: its processes cannot be asked from here."""
    for name in sorted(os.listdir(export_dir)):
        match = _STAGING_NAME.match(name)
        path = os.path.join(export_dir, name)
        if (match and match["host"] in (None, socket.gethostname()) and not run_lock.pid_runs(int(match["pid"]))
                and os.path.isdir(path)):
            shutil.rmtree(path, ignore_errors=True)
            print(f"Note: removed {path}, the unfinished export of a process that no longer runs.", flush=True)


def _rename_to_next_version(staging, export_dir):
    """Moves `staging` to the next free integer version (another exporter may take one first)."""
    for _ in range(10):
        final = os.path.join(export_dir, str(max(_versions(export_dir), default=0) + 1))
        try:
            os.rename(staging, final)
            return final
        except OSError:
            if not os.path.exists(final):
                raise
    raise OSError(f"Could not find a free version folder in {export_dir}.")
