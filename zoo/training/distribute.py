"""tf.distribute strategies by name, including N logical CPU devices for tests."""

import json
import os

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def split_cpu(replicas, check=True):
    """Splits the CPU into `replicas` logical devices. TensorFlow takes it only before it starts, so a second run
    in one process (zoo.train twice) must ask for the split the first one made: with `check` (which starts
    TensorFlow's runtime, as a multi-worker or TPU strategy must do itself), another is refused."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = max(replicas, 1)
    try:
        if replicas > 1:
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    except RuntimeError:  # TensorFlow has started: its devices are fixed
        pass
    have = len(tf.config.list_logical_devices("CPU")) if check else wanted
    if have != wanted:
        raise ValueError(f"setup.cpu_replicas={replicas} asks for {wanted} CPU devices, but TensorFlow already runs "
                         f"with {have} in this process (set before it started): train in a fresh process, or ask "
                         f"for cpu_replicas={have if have > 1 else 0}.")


def make_strategy(name, cpu_replicas=0, tpu=None):
    """The strategy `name` (one of STRATEGIES). `cpu_replicas` > 1 gives that many CPU replicas to "mirrored" on a
    machine without accelerators."""
    if name not in STRATEGIES:
        raise ValueError(f"strategy={name!r} is not one of {STRATEGIES}.")
    # Multi-worker and TPU set up the runtime themselves: no op may run before them.
    split_cpu(cpu_replicas, check=name not in ("multi_worker_mirrored", "tpu"))
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("strategy=multi_worker_mirrored reads the cluster from TF_CONFIG, which is not set.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        if not tpu:
            raise ValueError("strategy=tpu needs the TPU's address (--tpu=grpc://... or a TPU name).")
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)


def uses_xla(strategy, jit_compile):
    """Whether training steps compile with XLA (jit_compile, or any step on a TPU): shapes must then be static, so
    data-dependent ones (skipping padding) are out."""
    return bool(jit_compile) or isinstance(strategy, tf.distribute.TPUStrategy)


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or resolver.task_type == "chief":
        return True
    has_chief = "chief" in json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief
