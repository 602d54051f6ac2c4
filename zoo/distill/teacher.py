"""The teacher of a distilled run (distill.teacher): a classifier's run folder or export, read as zoo.load reads it,
checked against the student's data, and its outputs on the training texts, each text answered once.

Its outputs are the logits the student learns: a single-label teacher's log-probabilities (its logits less their
log-sum-exp: the same softmax, and the same logits once centred), a multi-label teacher's per-label logits
(log p / (1 - p), p clipped to [1e-7, 1 - 1e-7]), a regression's score in the labels' units.

They are cached under $ZOO_CACHE_DIR/teacher (beside the token cache), in an entry named by the teacher's digest
(its config.json and checkpoint index for a run, its SavedModel files for an export) and the texts' digest: epochs,
a resumed run and a second student on the same texts read them there. An entry is written a part of PART texts at
a time, each part renamed into place whole, so a labelling that is killed resumes at its first missing part.
"""

import hashlib
import io
import os
import time

import numpy as np

from zoo.classifier.config import MULTI_LABEL, REGRESSION
from zoo.classifier.load import RECIPE as CLASSIFIER, Classifier
from zoo.core import disk, inputs
from zoo.core.signatures import call, strings
from zoo.data import cache
from zoo.runs import export, run_dir

PART = 4096  # texts a part of an entry holds
FORMAT = 1  # of an entry's parts
PROBABILITY_FLOOR = 1e-30  # a softmax probability that underflowed, as a log-probability of about -69
SIGMOID_CLIP = 1e-7  # float32's sigmoid saturates near |logit| 16


class TeacherError(ValueError):
    """A teacher that cannot teach this run; the message names distill.teacher and what to do."""


def open_teacher(path, problem_type, class_names, pairs):
    """The Teacher at `path`, refused (TeacherError) when it is missing, damaged, no classifier, of another problem
    type, label set or text shape than the student's data (`class_names`, `pairs`)."""
    where = f"distill.teacher={path}"
    if not os.path.exists(path):
        raise TeacherError(f"{where}: no such file or folder. Give a trained classifier's run folder (its --model_dir) "
                           "or its export.")
    try:
        model, digest = load_classifier(path, where)
    except TeacherError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TeacherError(f"{where} cannot be loaded: {error}") from None
    if model.problem_type != problem_type:
        raise TeacherError(f"{where} is a {model.problem_type} model and this run is a {problem_type} one "
                           "(model.problem_type): a teacher answers as its student learns. Give a teacher of the "
                           "same problem type.")
    if problem_type != REGRESSION and list(model.class_names) != list(class_names):
        raise TeacherError(f"{where} answers with the labels {list(model.class_names)}, and this run's data has "
                           f"{list(class_names)}: give a teacher trained on the same label set (--classes picks and "
                           "orders the data's).")
    if model.pairs != pairs:
        raise TeacherError(f"{where} reads {'text pairs' if model.pairs else 'one text'} and this run's data has "
                           f"{'text pairs' if pairs else 'one text a row'}: give a teacher of the same text shape.")
    return Teacher(os.path.abspath(path), model, digest)


def load_classifier(path, where):
    """(the Classifier, a digest of its files) of a sentiment run folder or export at `path`, as zoo.load answers it
    (zoo.load itself sits above the recipes, this module below them); another recipe's is refused naming it. The
    digest: a run's config.json and the index of the checkpoint loaded (it holds each tensor's checksum), or an export
    version's SavedModel and manifest."""
    folder = run_dir.opened(path) if os.path.isdir(path) else None
    recipe = folder.recipe() if folder is not None else None
    if recipe is not None:
        check_classifier(recipe, where)
        model = Classifier.from_run(folder)
        return model, export.source_digest(path, step=model.step)
    version = export.find_version(path)
    if version is None:
        raise TeacherError(f"{where} is neither a trained run (no config.json) nor an export (no saved_model.pb): "
                           "give a classifier's run folder or export.")
    saved, metadata = export.load_version(version)
    check_classifier(metadata.get("recipe"), where)
    return Classifier.from_export(saved, metadata), files_digest(version)


def check_classifier(recipe, where):
    if recipe != CLASSIFIER:
        raise TeacherError(f"{where} is a {recipe!r} model, not a classifier: a teacher is a sentiment "
                           "(classification) run or its export.")


def files_digest(version):
    hashed = hashlib.sha256()
    for name in ("saved_model.pb", os.path.join("variables", "variables.index"), export.MANIFEST):
        with open(os.path.join(version, name), "rb") as f:
            hashed.update(name.encode() + b"\0" + f.read())
    return hashed.hexdigest()


def texts_digest(texts):
    hashed = hashlib.sha256()
    for text in texts:
        hashed.update("\x1f".join(text if isinstance(text, tuple) else (text,)).encode() + b"\0")
    return hashed.hexdigest()


class Teacher:
    """A loaded teacher: `path` (absolute), `model` (zoo.classifier.load.Classifier), `digest` of its files."""

    def __init__(self, path, model, digest):
        self.path, self.model, self.digest = path, model, digest

    @property
    def record(self):
        """What config.json's derived part keeps of the teacher: a resumed run must find the same."""
        return {"path": self.path, "digest": self.digest, "step": self.model.step}

    def answer(self, batch):
        """The outputs (see the module) of a batch of UTF-8 texts, or (text, text pair) tuples."""
        if self.model.pairs:
            out = call(self.model.signatures, "serving_default", text=strings([a for a, _ in batch]),
                       text_pair=strings([b for _, b in batch]))
        else:
            out = call(self.model.signatures, "serving_default", text=strings(batch))
        if self.model.problem_type == REGRESSION:
            return out["score"].numpy().astype(np.float32)[:, None]
        probabilities = out["probabilities"].numpy().astype(np.float64)
        if self.model.problem_type == MULTI_LABEL:
            p = np.clip(probabilities, SIGMOID_CLIP, 1 - SIGMOID_CLIP)
            return np.log(p / (1 - p)).astype(np.float32)
        return np.log(np.maximum(probabilities, PROBABILITY_FLOOR)).astype(np.float32)

    def outputs(self, texts, batch_size=inputs.BATCH_SIZE):
        """The outputs of every text of `texts` (strings, or (text, pair) tuples), (len(texts), outputs) float32,
        from the cache, answering (and caching) the texts it lacks a part at a time, with progress."""
        key = {"format": FORMAT, "teacher": self.digest, "texts": texts_digest(texts), "count": len(texts)}
        folder = os.path.join(cache.cache_root(), "teacher", cache.key_name(key))
        with cache.writing():
            os.makedirs(folder, exist_ok=True)
        parts = range(0, len(texts), PART)
        missing = [start for start in parts if read_part(folder, start, min(PART, len(texts) - start)) is None]
        if missing:
            label_parts(self, texts, folder, missing, batch_size)
        else:
            print(f"Teacher outputs of {len(texts):,} texts read from the cache ({folder}).", flush=True)
        return np.concatenate([read_part(folder, start, min(PART, len(texts) - start)) for start in parts])


def part_path(folder, start):
    return os.path.join(folder, f"part-{start // PART:06d}.npy")


def read_part(folder, start, count):
    """A part's outputs, or None when it is missing or damaged (it is answered again)."""
    try:
        values = np.load(part_path(folder, start), allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    return values if values.ndim == 2 and len(values) == count and np.isfinite(values).all() else None


def label_parts(teacher, texts, folder, starts, batch_size):
    total = sum(min(PART, len(texts) - start) for start in starts)
    done, began = 0, time.time()
    print(f"Teacher {teacher.path} answering {total:,} of {len(texts):,} texts ({len(starts)} part(s) of "
          f"{PART:,}; cached in {folder}) ...", flush=True)
    for start in starts:
        batch = texts[start:start + PART]
        pairs = [b for _, b in batch] if teacher.model.pairs else None
        firsts = [a for a, _ in batch] if teacher.model.pairs else batch
        answers = inputs.in_batches(teacher.answer, firsts, batch_size, "texts", text_pairs=pairs)
        values = np.stack(answers).astype(np.float32)
        with cache.writing():
            disk.write_atomically(part_path(folder, start), _npy(values), "the teacher's outputs")
        done += len(batch)
        seconds = time.time() - began
        left = (total - done) * seconds / done
        print(f"Teacher outputs: {done:,}/{total:,} texts ({done / max(seconds, 1e-9):.0f} texts/s, {left:.0f}s "
              "left)", flush=True)


def _npy(values):
    buffer = io.BytesIO()
    np.save(buffer, values, allow_pickle=False)
    return buffer.getvalue()

