"""Outputs never land on inputs: where a run may write what a user names (--model_dir, --export_dir,
--predictions), checked before any work.

- A run folder's own entries (`RUN_FILES`, `RUN_PATTERNS`: its record, metrics, tokenizer, checkpoints, lock,
  summaries ...) take no output a user names, with or without leave to overwrite: the run reads them back.
  Inside the run folder a user's output takes a name of its own (<model_dir>/predictions.jsonl,
  <model_dir>/export).
- A temporary name of the zoo's (`TEMPORARY`: `name.tmp`, which an atomic write renames over `name`; a
  `ckpt-N_temp/` or `.staging-*` folder, which the next run removes) takes none either.
- An existing file is replaced only when the zoo wrote it (`ours(path)`: a predictions file of an earlier
  evaluation), or when the user says so (`--overwrite_predictions`, as Hugging Face's --overwrite_output_dir):
  a mistyped path never writes over a data file or any other file of the user's.
- --model_dir and --export_dir are folders, not files; the export is not the run folder itself, nor another
  run's folder (one holding a run's config.json).
"""

import os
import re

from zoo.data.tokenizer import TOKENIZER_FILE, VOCABULARY_FILE, WORDPIECE_CONFIG_FILE
from zoo.runs import export
from zoo.runs.checkpoints import UNREADABLE_DIR
from zoo.runs.run_dir import (CONFIG_FILE, METRICS_FILE, TRANSLATION_TOKENIZER_FILES, TRANSLATION_WORD_FILES,
                              WORDS_FILE, RunDir, RunDirError)
from zoo.runs.run_lock import LOCK_FILE

# What a run keeps in its folder: its record and figures, its lock, TensorFlow's checkpoint index, the
# tokenizers (the LM's vocabulary.json is zoo.language_model.vocabulary.VOCABULARY_FILE, a layer above), the
# checkpoints set aside, the training summaries and sentiment's attention pictures.
RUN_FILES = frozenset({CONFIG_FILE, METRICS_FILE, LOCK_FILE, "checkpoint", TOKENIZER_FILE, *TRANSLATION_TOKENIZER_FILES,
                       WORDS_FILE, *TRANSLATION_WORD_FILES, VOCABULARY_FILE, WORDPIECE_CONFIG_FILE, "vocabulary.json",
                       UNREADABLE_DIR, "train", "explain"})
# ... and by name: checkpoints, evaluation summaries, translation's hypotheses, a non-chief worker's copy.
RUN_PATTERNS = re.compile(r"(ckpt-\d+.*|eval_.*|hypotheses\..*|\.worker_.*|events\.out\.tfevents\..*)\Z")
# Names the zoo writes under for a moment: zoo.core.disk's `name.tmp`, TensorFlow's checkpoint folder, an export's
# version before it is renamed into place (zoo.runs.export.STAGING).
TEMPORARY = re.compile(r"(.+\.tmp|ckpt-\d+_temp|\.staging-.*)\Z")


def own_entry(path, model_dir=None):
    """`(folder, entry)` when `path` is or lies under a run folder's own entry (`config.json`, `ckpt-4.index`,
    `train` ...): of `model_dir`, or of a folder above `path` that holds a zoo run's record; else None."""
    path = os.path.realpath(path)
    folders = [os.path.realpath(model_dir)] if model_dir else []
    parent = os.path.dirname(path)
    while parent != os.path.dirname(parent):
        if holds_run(parent):
            folders.append(parent)
        parent = os.path.dirname(parent)
    for folder in folders:
        if path != folder and os.path.commonpath([path, folder]) == folder:
            first = os.path.relpath(path, folder).split(os.sep)[0]
            if first in RUN_FILES or RUN_PATTERNS.match(first):
                return folder, first
    return None


def holds_run(folder):
    """Whether `folder` holds a zoo run's record (a config.json naming its recipe)."""
    if not os.path.isfile(os.path.join(folder, CONFIG_FILE)):
        return False
    try:
        return RunDir(folder).recipe() is not None
    except RunDirError:  # a config.json of another program's, or a damaged one: not known to be a run's
        return False


def check_name(flag, path, model_dir, example):
    """Refuses (ValueError naming `flag`) a `path` with a temporary name of the zoo's, or on a run's own files
    (`example`: a name of the user's to suggest in their place)."""
    name = os.path.basename(os.path.normpath(path))
    if TEMPORARY.match(name):
        raise ValueError(f"{flag}={path}: {name} is a temporary name of the zoo's (what a write fills before it is "
                         "renamed into place, or removed): name another path.")
    own = own_entry(path, model_dir)
    if own is not None:
        folder, entry = own
        where = "over" if os.path.realpath(path) == os.path.join(folder, entry) else "into"
        raise ValueError(f"{flag}={path} would write {where} {entry}, one of the run's own files in {folder}: name "
                         f"a path of your own, e.g. {os.path.join(folder, example)}.")


def check_file(flag, path, model_dir, ours, overwrite=False, overwrite_flag="--overwrite_predictions"):
    """Refuses (ValueError naming `flag`) writing the file `path`: a temporary name, the run's own files, a folder, a
    path in no folder, or an existing file that `ours(path)` does not recognise as the zoo's, unless `overwrite`."""
    check_name(flag, path, model_dir, "predictions.jsonl")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        problem = "is a folder" if os.path.isdir(path) else f"is in {folder}, which is not a folder"
        raise ValueError(f"{flag}={path} {problem}: name a file in a folder that exists.")
    if os.path.exists(path) and not overwrite and not ours(path):
        raise ValueError(f"{flag}={path} already exists and is not a file the zoo wrote: name a new file, or give "
                         f"{overwrite_flag} to replace it.")


def check_folders(model_dir, export_dir, training):
    """Refuses (ValueError naming the flag) a --model_dir or --export_dir that is a file or a temporary name, an export
    into the run folder itself, into another run's folder or onto a run's own files, and training into an export."""
    for flag, path in (("--model_dir", model_dir), ("--export_dir", export_dir)):
        if path and os.path.exists(path) and not os.path.isdir(path):
            raise ValueError(f"{flag}={path} is a file, not a folder: give a folder path (it is made if missing).")
    if export_dir:
        if model_dir and os.path.realpath(export_dir) == os.path.realpath(model_dir):
            raise ValueError(f"--export_dir={export_dir} is the run folder itself: its versions would lie among the "
                             "run's files. Give the export a folder of its own, e.g. "
                             f"{os.path.join(model_dir, 'export')}.")
        if holds_run(export_dir):
            raise ValueError(f"--export_dir={export_dir} is another run's folder (it holds that run's config.json): "
                             "the versions would lie among its files. Give the export a folder of its own, e.g. "
                             f"{os.path.join(model_dir or export_dir, 'export')}.")
        check_name("--export_dir", export_dir, model_dir, "export")
    if model_dir:
        check_name("--model_dir", model_dir, None, "run")  # inside another run's own files
        if training and export.holds_export_part(model_dir):
            raise ValueError(f"--model_dir={model_dir} is an export's version folder: train in a folder of its own.")
