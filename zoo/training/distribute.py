"""tf.distribute strategies by name, including N logical CPU devices for tests."""

import json
import os

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def split_cpu(replicas):
    """Splits the CPU into `replicas` logical devices; call before any TF op runs."""
    if replicas > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)


def make_strategy(name, cpu_replicas=0, tpu=None):
    """The strategy `name` (one of STRATEGIES). `cpu_replicas` > 1 gives that many
    CPU replicas to "mirrored" on a machine without accelerators."""
    if name not in STRATEGIES:
        raise ValueError(f"strategy={name!r} is not one of {STRATEGIES}.")
    split_cpu(cpu_replicas)
    # Multi-worker and TPU set up the runtime themselves: no op may run before them.
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("strategy=multi_worker_mirrored reads the cluster from TF_CONFIG, which is not set.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        return _tpu_strategy(tpu)
    gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)


def _tpu_strategy(tpu):
    if not tpu:
        raise ValueError("strategy=tpu needs the TPU's address (--tpu=grpc://... or a TPU name).")
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def uses_xla(strategy, jit_compile):
    """Whether training steps compile with XLA (jit_compile, or any step on a TPU): shapes
    must then be static, so data-dependent ones (skipping padding) are out."""
    return bool(jit_compile) or isinstance(strategy, tf.distribute.TPUStrategy)


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief
