"""Which compute dtype to train in: `--mixed_precision=auto` picks bfloat16 where the device runs it fast, float32
elsewhere, and says why.

bfloat16 is fast on a GPU of compute capability 8.0 or more (Ampere, Hopper: tensor cores), on a TPU, and on a CPU
with AVX512-BF16 or AMX-BF16 instructions through oneDNN. Without them TensorFlow emulates it, slower than float32
(BENCHMARKS.md, "Hardware notes", has both measured).
"""

import os

import tensorflow as tf

CHOICES = ("auto", "float32", "bfloat16", "float16")
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo_text):
    """The instruction-set flags of the first processor in /proc/cpuinfo's text (x86: "flags", Arm: "Features")."""
    for line in cpuinfo_text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def gpu_capabilities():
    """(name, (major, minor)) of each GPU TensorFlow sees."""
    found = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability")  # None: not an NVIDIA GPU (ROCm reports none)
        found.append((details.get("device_name", gpu.name), tuple(capability) if capability else None))
    return found


def auto_precision(tpu=False, gpus=None, cpuinfo=None):
    """("bfloat16" or "float32", the reason) for this machine: training on a TPU (`tpu`), else its `gpus`
    (`gpu_capabilities()` if None), else its CPU (`cpuinfo`: the text of /proc/cpuinfo, read if None)."""
    if tpu:
        return "bfloat16", "a TPU computes in bfloat16 natively"
    gpus = gpu_capabilities() if gpus is None else gpus
    if gpus:
        unknown = [name for name, capability in gpus if capability is None]
        if unknown:
            return "float32", (f"{', '.join(unknown)} reports no CUDA compute capability: "
                               "choose --mixed_precision yourself")
        slow = [f"{name} (compute capability {major}.{minor})" for name, (major, minor) in gpus if major < 8]
        if slow:
            return "float32", f"{', '.join(slow)} has no fast bfloat16 (it needs compute capability 8.0 or more)"
        names = ", ".join(sorted({f"{name} (compute capability {major}.{minor})" for name, (major, minor) in gpus}))
        return "bfloat16", f"{names} runs bfloat16 on its tensor cores"
    if cpuinfo is None and os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", errors="replace") as f:
            cpuinfo = f.read()
    flags = cpu_flags(cpuinfo or "")
    found = [flag for flag in CPU_BF16_FLAGS if flag in flags]
    if found and os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0":
        return "float32", (f"the CPU has {' and '.join(found)}, but TF_ENABLE_ONEDNN_OPTS=0 turns off the oneDNN "
                           "kernels that use them")
    if found:
        return "bfloat16", f"the CPU has {' and '.join(found)} instructions"
    return "float32", f"the CPU has neither {' nor '.join(CPU_BF16_FLAGS)}: bfloat16 would be emulated, slower"


def choose(asked, resumed=None, **device):
    """(dtype, reason) for `--mixed_precision=asked`: an explicit dtype as asked; "auto" keeps the dtype of the run
    being resumed (`resumed`, from its config.json) or else `auto_precision(**device)`."""
    if asked not in CHOICES:
        raise ValueError(f"mixed_precision={asked!r} is not one of {CHOICES}.")
    if asked != "auto":
        return asked, "asked for (--mixed_precision)"
    if resumed is not None:
        return resumed, "auto: the run being resumed trained in it"
    dtype, reason = auto_precision(**device)
    return dtype, f"auto: {reason}"
