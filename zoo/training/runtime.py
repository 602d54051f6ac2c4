"""Process-wide settings a training process runs best with (the C allocator's)."""

import ctypes
import os


def keep_freed_memory():
    """Lets the C allocator keep and reuse freed memory instead of giving it back to the system and faulting it in
    again at the next step.

    TensorFlow 2.21 sets glibc's M_TRIM_THRESHOLD to 128 KB when a distributed dataset's iterator starts (it logs
    "Memory patch applied"); that also freezes glibc's mmap threshold at 128 KB, so every larger buffer of every
    step is a fresh mmap, zeroed page by page and unmapped when freed. Here both go to the ceilings glibc's own
    adaptive rules reach: buffers up to 32 MB (its largest mmap threshold) come from the heap, and up to 64 MB of
    free memory at the heap's top is kept (twice that). TensorFlow lowers the trim threshold presumably against the
    memory growth reported with generator-fed pipelines (tensorflow/tensorflow#65675); a training process gives
    that up for speed (`benchmarks/allocator.py` measures it). A no-op without glibc, or with ZOO_TF_ALLOCATOR=1
    (TensorFlow's settings as they are)."""
    if os.environ.get("ZOO_TF_ALLOCATOR") == "1":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass
