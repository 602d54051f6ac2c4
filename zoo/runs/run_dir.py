"""A run directory (--model_dir) and what a run keeps there beside its checkpoints: config.json (the run's record,
so that the run can be resumed and its model rebuilt), metrics.json (the figures of training and of each evaluation,
one section each), the tokenizer files (zoo.data.tokenizer, zoo.language_model.vocabulary) and run.lock while a run
writes there (zoo.runs.run_lock). Every other module reads and writes these files through `RunDir`: one place checks
that a folder holds the run asked for, says what is wrong with a damaged file, and keeps a second run out.
"""

import collections
import contextlib
import dataclasses
import errno
import json
import os
import time

from zoo.runs import checkpoints, record
from zoo.core import disk
from zoo.runs.run_lock import RunLock
from zoo.data.tokenizer import TOKENIZER_FILE, load_tokenizer
from zoo.data.word_tokenizer import WORDS_FILE
from zoo.core.dtype_policy import dtype_policy
from zoo.runs.checkpoints import restore_model

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"
TRANSLATION_TOKENIZER_FILES = ("source.model", "target.model")  # one per language (else tokenizer.model)
TRANSLATION_WORD_FILES = tuple(f"{side}.{WORDS_FILE}" for side in ("source", "target"))  # a side of words' own
# What a resumed run must share with the run it resumes beside its config (zoo.runs.record's derived):
# the batch plan (and so the data position) depends on these.
RESUME_KEYS = ("replicas", "sequences", "held_out")
RUN_NAMES = {"pretrain": "pretraining"}  # how messages name a recipe's runs (else by the recipe's name)

CONFIG_ADVICE = ("it is the run's record (its data, model and training settings). Restore it from a backup, or "
                 "move the folder away and train again.")
METRICS_ADVICE = "it holds only the run's figures. Delete it (training and evaluation write it again) or restore it."


Tokenizers = collections.namedtuple("Tokenizers", ["source", "target"])  # a translation run's


@dataclasses.dataclass(frozen=True)
class LoadedRun:
    """A trained run loaded back (float32) for evaluation, export and the recipes' other modes."""

    record: object  # config.json as a zoo.runs.record.Record: the run's typed config and what it derived
    config: object  # the model's config (ClassifierConfig, TranslatorConfig, LMConfig, PretrainConfig)
    model: object
    tokenizer: object  # the recipe's: a tokenizer, a translation run's (source, target) pair, a Vocabulary
    step: int  # of the checkpoint loaded (the newest of those averaged)


class RunDirError(ValueError):
    """A model_dir that cannot be used as asked; the message says why and what to do."""


def check_resumable(derived, asked):
    """Raises RunDirError naming every RESUME_KEYS field where `asked` differs from the record's `derived`."""
    changed = [f"{k}={asked[k]!r} (was {derived[k]!r})" for k in RESUME_KEYS if k in derived and k in asked
               and derived[k] != asked[k]]
    if not changed:
        return
    moved = any(change.startswith("held_out") for change in changed)
    why = (" (held_out: how validation is kept out of the training rows; validation files appeared or went away "
           "since the run started, or it started under another rule)") if moved else ""
    raise RunDirError(f"This run cannot resume as asked: {', '.join(changed)}{why}. Keep those settings to resume "
                      "at the same data position, or use another --model_dir.")


_UNREAD = object()  # a RunDir's record before its first read


def opened(folder):
    """`folder` as a RunDir: one passed down is the one its command opened (its record read once and kept), a path
    opens one. Every function that takes a run folder takes either."""
    return folder if isinstance(folder, RunDir) else RunDir(folder)


class RunDir:
    """The run directory at `path`, opened once per command and passed down: config.json is read once, at its first
    use, and kept (with what the command itself writes there); read again only if another process changed it."""

    def __init__(self, path):
        self.path = path
        self._record, self._stamp = _UNREAD, None  # config.json's contents once read (None: none), and its stat

    def file(self, name):
        return os.path.join(self.path, name)

    def holds(self, name):
        return os.path.exists(self.file(name))

    def read_config(self):
        """The run's record as written, whatever its recipe; None when there is none. Read from disk once, unless the
        file changed since (its size, time or inode: another process wrote it)."""
        stamp = self._config_stamp()
        if self._record is _UNREAD or stamp != self._stamp:
            self._record, self._stamp = self._read_json(CONFIG_FILE, CONFIG_ADVICE), stamp
        return self._record

    def _config_stamp(self):
        try:
            found = os.stat(self.file(CONFIG_FILE))
        except OSError:  # none there (or unreadable: the read says why)
            return None
        return found.st_mtime_ns, found.st_size, found.st_ino

    def recipe(self):
        """The recipe of the run recorded here, None when there is no record."""
        run = self.read_config()
        return None if run is None else run.get("recipe")

    def read_run(self, recipe):
        """The run's record, checked to belong to `recipe`; None if absent."""
        run = self.read_config()
        if run is None:
            if checkpoints.checkpoint_steps(self.path):
                raise RunDirError(f"{self.path} holds checkpoints but no {CONFIG_FILE}: it is not a zoo run of "
                                  f"{recipe!r}. Choose another --model_dir.")
            return None
        if run.get("recipe") != recipe:
            raise RunDirError(f"{self.path} holds a {run.get('recipe')!r} run, not a {recipe!r} one: choose another "
                              "--model_dir.")
        return run

    def require_run(self, recipe):
        """The record of a trained `recipe` run, else RunDirError saying to train there first."""
        if not self.path:
            raise RunDirError("--model_dir is required.")
        run = self.read_run(recipe)
        if run is None:
            raise RunDirError(f"{self.path} holds no trained {recipe!r} run ({CONFIG_FILE} missing): train there "
                              "first.")
        return run

    def read_record(self, recipe, cls):
        """The run's record as a zoo.runs.record.Record, its config typed as `cls`; None if absent."""
        data = self.read_run(recipe)
        return None if data is None else self.typed(data, recipe, cls)

    def typed(self, data, recipe, cls):
        """The Record of config.json's contents `data` (from read_run, require_run or read_finished)."""
        return record.from_record(data, recipe, cls, self.file(CONFIG_FILE))

    def record_training(self, recipe, config, derived, write=True):
        """Checks that training with `derived` (replicas, strategy, data sizes) can resume the run here, then
        writes its record: `config` (the recipe's typed config) and `derived` (with write=False, as a
        non-chief worker does, only checks)."""
        existing = self.read_record(recipe, type(config))
        if existing is not None:
            check_resumable(existing.derived, derived)
            # The preset the run started from, as first recorded (absent from older records): not a resume's.
            derived = {key: value for key, value in derived.items() if key != "preset"}
            if "preset" in existing.derived:
                derived["preset"] = existing.derived["preset"]
        if write:
            written = record.as_record(recipe, config, derived)
            self._write_json(CONFIG_FILE, written)
            self._record = json.loads(json.dumps(written, default=str))  # as read back from disk
            self._stamp = self._config_stamp()

    def read_metrics(self):
        """The figures recorded so far, {} when none."""
        return self._read_json(METRICS_FILE, METRICS_ADVICE) or {}

    def update_metrics(self, **sections):
        """Replaces (or adds) the given sections of metrics.json, keeping the others; returns them all."""
        metrics = {**self.read_metrics(), **sections}
        self._write_json(METRICS_FILE, metrics)
        return metrics

    def read_finished(self, recipe, finished=True):
        """The record of a `recipe` run that reached its last step (with finished=False: that has a
        checkpoint), else RunDirError."""
        name = RUN_NAMES.get(recipe, repr(recipe))
        run = self.read_config()
        if run is None:
            raise RunDirError(f"{self.path} holds no {name} run (no {CONFIG_FILE}): run recipes.{recipe} there.")
        if run.get("recipe") != recipe:
            raise RunDirError(f"{self.path} holds a {run.get('recipe')!r} run, not a {name} one.")
        step = max(checkpoints.checkpoint_steps(self.path), default=0)
        last = run.get("train", {}).get("train_steps")
        if not finished and step == 0:
            raise RunDirError(f"{self.path} holds no checkpoint yet: train there first (--mode=train).")
        if finished and (last is None or step < last):
            raise RunDirError(f"{self.path} holds an unfinished {name} run (step {step} of {last}): finish it "
                              f"(run recipes.{recipe} --mode=train there again) before using it.")
        return run

    def check_finished(self, run, step):
        """RunDirError unless `step` (of the checkpoint loaded) is the run's last."""
        last = run["train"]["train_steps"]
        if step < last:
            raise RunDirError(f"The last checkpoint of {self.path} cannot be read; the newest readable one is step "
                              f"{step} of {last}: finish the run (recipes.{run['recipe']} --mode=train there) before "
                              "using it.")

    def tokenizer(self, name=TOKENIZER_FILE):
        """The tokenizer saved here as `name`; for tokenizer.model, a WordPiece vocabulary saved here instead."""
        return load_tokenizer(self.path, name)

    @staticmethod
    def tokenizer_files(shared, words=(False, False)):
        """(source, target) tokenizer file names of a translation run: SentencePiece models, or for a side of
        words (`words`, a flag a side: word vectors) its word vocabulary (words.txt when shared, else
        source.words.txt, target.words.txt)."""
        if shared:
            return (WORDS_FILE if any(words) else TOKENIZER_FILE,) * 2
        return tuple(word_file if word else model_file
                     for model_file, word_file, word in zip(TRANSLATION_TOKENIZER_FILES, TRANSLATION_WORD_FILES, words))

    def tokenizers(self, shared, words=(False, False)):
        """The source and target tokenizers of a translation run (`Tokenizers`): one object twice when `shared`."""
        source_file, target_file = self.tokenizer_files(shared, words)
        source = self.tokenizer(source_file)
        return Tokenizers(source, source if shared else self.tokenizer(target_file))

    def wait_for(self, name, timeout=600):
        """Waits (a non-chief worker) until the chief has written the file `name`."""
        path = self.file(name)
        deadline = time.time() + timeout
        while not os.path.exists(path):
            if time.time() > deadline:
                raise RunDirError(f"The chief worker has not written {path} within {timeout} s.")
            time.sleep(1)

    def load_model(self, build_model, average=1):
        """(model, step): `build_model()` built in float32, whatever the run trained in, holding the
        newest checkpoint's weights (with average=N, the mean of the newest N: `restore_model`). The
        caller's Keras dtype policy is left as it was."""
        with dtype_policy("float32"):
            model = build_model()
        return model, restore_model(model, self.path, average)

    def load_run(self, recipe, cls, build_model, load_tokenizer, average=1):
        """A trained `recipe` run as a LoadedRun: its record (config typed as `cls`), the model `build_model(model
        config)` holding the newest checkpoint (`load_model`), and `load_tokenizer(self, model config)`."""
        record = self.typed(self.require_run(recipe), recipe, cls)
        config = record.config.model
        model, step = self.load_model(lambda: build_model(config), average)
        return LoadedRun(record, config, model, load_tokenizer(self, config), step)

    @contextlib.contextmanager
    def hold(self, create=False):
        """Holds the folder's lock (zoo.runs.run_lock) for the `with` block: a second run that would write here is
        refused meanwhile. With create=True the folder is made if missing, and removed again if the block leaves it
        empty; without, a missing folder is not held (there is nothing there to protect, and the mode will say so)."""
        existed = os.path.isdir(self.path)
        if not existed and not create:
            yield
            return
        try:
            try:
                os.makedirs(self.path, exist_ok=True)
            except OSError as error:
                raise disk.write_error(error, "the run folder", self.path, "no file was written") or error from None
            with RunLock(self.path, log=lambda message: print(message, flush=True)):
                yield
        finally:
            if not existed:
                with contextlib.suppress(OSError):
                    os.rmdir(self.path)  # only if empty: a run that failed before writing leaves nothing

    def _read_json(self, name, advice):
        path = self.file(name)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:  # a name longer than the file system takes, a folder in the file's place ...
            advice = ("choose a --model_dir with shorter folder names" if error.errno == errno.ENAMETOOLONG else
                      "it must be a file this user can read; put it right, or choose another --model_dir")
            raise RunDirError(f"Cannot read {path} ({error.strerror}): {advice}.") from None
        except ValueError as error:
            raise RunDirError(f"{path} is damaged ({error}): {advice}") from None
        if not isinstance(data, dict):
            raise RunDirError(f"{path} is damaged (it holds no JSON object): {advice}")
        return data

    def _write_json(self, name, data):
        """Writes the file atomically: a crash leaves the old file or the new one, never half of one."""
        disk.write_atomically(self.file(name), json.dumps(data, indent=2, default=str).encode("utf-8"), name)
