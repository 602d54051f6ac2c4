"""Process-wide settings a training process runs best with (the C allocator's)."""

import ctypes
import os


def keep_freed_memory():
    """Lets the C allocator keep and reuse freed memory instead of giving it back to the system and faulting it in
    again at the next step.

    TensorFlow 2.21 sets glibc's M_TRIM_THRESHOLD to 128 KB when a distributed dataset's iterator starts ("Memory
    patch applied"), which also freezes the mmap threshold at 128 KB: every larger buffer of every step is a fresh
    mmap, zeroed page by page and unmapped when freed. Here both go to glibc's own adaptive ceilings: buffers up to
    32 MB come from the heap, and up to 64 MB free at its top is kept. TensorFlow's setting is presumably a guard
    against the memory growth reported with generator-fed pipelines (tensorflow/tensorflow#65675), given up here
    for speed (`benchmarks/allocator.py` measures it). A no-op without glibc, or with ZOO_TF_ALLOCATOR=1 (TensorFlow's settings as they are)."""
    if os.environ.get("ZOO_TF_ALLOCATOR") == "1":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass
