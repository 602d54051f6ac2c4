"""The Python API, re-exported by the zoo package: `zoo.load(path)` and `zoo.train(recipe, ...)`.

`load` takes a trained run folder (a recipe's --model_dir) or an export (a version folder
`<export_dir>/<n>`, or the --export_dir itself: its newest version) and returns its family's model,
which answers exactly as the export answers TF Serving:

    recipe      model           methods
    sentiment   Classifier      predict(texts)
    translate   Translator      translate(texts, beam_size=None, length_penalty=None)
    lm          LanguageModel   generate(prompts, max_new_tokens, top_k, temperature, seed), score(texts)
    pretrain    Encoder         encode(texts), fill_mask(texts, top_k)

Each method takes a list of any length, answered `batch_size` texts at a time (default 32), and refuses
what is no list of texts, or an out-of-range number, by name before TensorFlow sees it (zoo.core.inputs).
A run is loaded by its family's `load` (float32, the newest checkpoint) and served by the same
module its export would hold; an export by its SavedModel's signatures, a damaged one refused naming its
missing file (zoo.runs.export.load_version). docs/python_api.md has more.
"""

import collections
import os
import signal
import subprocess
import sys
import tempfile

import yaml

from zoo.classifier.load import Classifier
from zoo.language_model.load import LanguageModel
from zoo.pretraining.load import Encoder
from zoo.runs import export
from zoo.runs.run_dir import CONFIG_FILE, RunDir
from zoo.translation.load import Translator

MODELS = {"sentiment": Classifier, "translate": Translator, "lm": LanguageModel, "pretrain": Encoder}
WHAT_LOAD_TAKES = (
    f"give a run folder (a recipe's --model_dir: it holds {CONFIG_FILE} and checkpoints, ckpt-N.index) or an "
    f"export (a version folder <export_dir>/<n> holding saved_model.pb and {export.MANIFEST}, or the --export_dir "
    "holding such versions: the newest is loaded)."
)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # holds the recipes package


def load(path, average=1):
    """The model of a trained run or of an export (Classifier, Translator, LanguageModel or Encoder).

    Args:
        path: a run folder (--model_dir), an export's version folder, or an --export_dir (its newest version).
        average: a run only: the mean of its newest `average` checkpoints' weights (--average_checkpoints).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: {WHAT_LOAD_TAKES}")
    run = RunDir(path).read_config() if os.path.isdir(path) else None
    if run is not None:
        return model_of(run.get("recipe"), path).from_run(path, average)
    version = export.find_version(path)
    if version is None:
        raise ValueError(f"{path} is neither a trained run nor an export: {WHAT_LOAD_TAKES}")
    if average != 1:
        raise ValueError(f"average={average} averages a run's checkpoints, but {path} is an export (one set of "
                         "weights): load the run folder, or leave average out.")
    saved, metadata = export.load_version(version)
    return model_of(metadata.get("recipe"), version).from_export(saved, metadata)


def model_of(recipe, path):
    if recipe not in MODELS:
        raise ValueError(f"{path} holds a {recipe!r} model; zoo.load knows the recipes {', '.join(MODELS)}.")
    return MODELS[recipe]


def train(recipe, model_dir, config=None, **flags):
    """Runs `python -m recipes.<recipe> --model_dir=MODEL_DIR [--config=FILE] --NAME=VALUE ...` (one flag per
    keyword, with the flag's meaning and default; True is --NAME, False --noNAME, a list comma-joined) in a
    process of its own, its output echoed here, and returns `load(model_dir)` (with the
    average_checkpoints given). `config`: the run's config (docs/configuration.md) as a YAML or JSON file,
    a mapping, or the recipe's typed config (zoo.configs.RUN_CONFIGS); the keywords win over it, as the
    shortcut flags do. The recipe's mode defaults to train_and_eval; export_dir=... exports too. A run
    that already holds checkpoints resumes, as the recipe does.

    A failed run raises RuntimeError with the recipe's `error:` line (or its last lines);
    KeyboardInterrupt stops the run as Ctrl-C does (its checkpoint saved) and is raised again."""
    if recipe not in MODELS:
        raise ValueError(f"Unknown recipe {recipe!r}: use one of {', '.join(MODELS)}.")
    command = [sys.executable, "-m", f"recipes.{recipe}", f"--model_dir={os.fspath(model_dir)}"]
    command += [flag(name, value) for name, value in flags.items() if value is not None]
    with tempfile.TemporaryDirectory() as folder:
        if config is not None:  # given to the recipe as a file, which checks every field
            from zoo.configs import RUN_CONFIGS
            from zoo.runs.record import source_layer

            path = os.path.join(folder, "config.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(yaml.safe_dump(source_layer(config, recipe, RUN_CONFIGS[recipe]), sort_keys=False))
            command.append(f"--config={path}")
        return _run(command, recipe, model_dir, flags)


def _run(command, recipe, model_dir, flags):
    pythonpath = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    # A session of its own: a terminal's Ctrl-C reaches this process alone, which passes the recipe one SIGINT.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONPATH": pythonpath}, start_new_session=True)
    last = collections.deque(maxlen=20)
    try:
        for line in process.stdout:
            sys.stdout.write(line)
            last.append(line.rstrip("\n"))
        status = process.wait()
    except KeyboardInterrupt:
        process.send_signal(signal.SIGINT)
        process.wait()
        raise
    if status != 0:
        errors = [line for line in last if line.startswith("error: ")]
        why = errors[-1] if errors else "\n".join(last)
        raise RuntimeError(f"recipes.{recipe} exited with status {status}: {why}")
    return load(model_dir, average=flags.get("average_checkpoints") or 1)


def flag(name, value):
    """One command-line flag meaning what the keyword `name=value` means."""
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    if isinstance(value, (list, tuple)):
        return f"--{name}={','.join(str(v) for v in value)}"
    return f"--{name}={value}"
