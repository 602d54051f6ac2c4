"""Finding the checkpoint a run continues from, whatever happened to its folder, and writing checkpoints.

TensorFlow's `latest_checkpoint` trusts the `checkpoint` index file: with that file lost a run would start again
from step 0 and overwrite the old `ckpt-N` files, and with the newest checkpoint damaged every mode ends in a
traceback. Here the `ckpt-N.index` files themselves are listed and each is read through before it is trusted; a
damaged one is reported by name and passed over for the next older one (`CheckpointManager` writes them).
"""

import contextlib
import os
import re
import shutil

import numpy as np
import tensorflow as tf

from zoo.core import disk

CHECKPOINT_PREFIX = "ckpt"
UNREADABLE_DIR = "unreadable_checkpoints"


class CheckpointError(ValueError):
    """Checkpoints are present but none can be read; the message names them."""


def checkpoint_steps(model_dir):
    """Steps of the `ckpt-N.index` files in model_dir, newest first."""
    if not os.path.isdir(model_dir):
        return []
    pattern = re.compile(rf"{CHECKPOINT_PREFIX}-(\d+)\.index$")
    return sorted((int(m.group(1)) for m in map(pattern.match, os.listdir(model_dir)) if m), reverse=True)


def path_of(model_dir, step):
    return os.path.join(model_dir, f"{CHECKPOINT_PREFIX}-{step}")


def unreadable_reason(path):
    """Why the checkpoint at `path` (a prefix) cannot be read, or None if every tensor reads."""
    try:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except Exception as error:  # noqa: BLE001  (a damaged file raises OpError, IndexError, ValueError ...)
        return f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    return None


def newest_readable(model_dir, log=print):
    """(path, step, skipped) of the newest checkpoint in model_dir that reads through, or
    (None, 0, []) when there is none at all; `skipped` lists the newer unreadable paths.
    Raises CheckpointError when checkpoints exist but none can be read."""
    skipped = []
    for step in checkpoint_steps(model_dir):
        path = path_of(model_dir, step)
        reason = unreadable_reason(path)
        if reason is None:
            if skipped:
                log(f"Continuing from {path}, the newest checkpoint that can be read.")
            if tf.train.latest_checkpoint(model_dir) is None:
                log(f"{model_dir} has no readable 'checkpoint' index file; found {path} by its file name.")
            return path, step, skipped
        log(f"Warning: checkpoint {path} cannot be read ({reason}); trying an older one.")
        skipped.append(path)
    if skipped:
        names = ', '.join(map(os.path.basename, skipped))
        verb, pronoun = ("is", "it") if len(skipped) == 1 else ("are", "them")
        raise CheckpointError(f"No checkpoint in {model_dir} can be read ({names} {verb} damaged): restore {pronoun} "
                              "from a backup, or train again in another --model_dir.")
    return None, 0, []


def files_of(path):
    """The names of the files of the checkpoint at `path` (a prefix): its .index and .data-* files."""
    folder, prefix = os.path.split(path)
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return [name for name in names if name == f"{prefix}.index" or name.startswith(f"{prefix}.data-")]


def set_aside(paths, model_dir, log=print):
    """Moves the files of unreadable checkpoints into model_dir/unreadable_checkpoints/ (never
    deleted), so that a run continuing from an older step does not write over them."""
    if not paths:
        return
    target = os.path.join(model_dir, UNREADABLE_DIR)
    os.makedirs(target, exist_ok=True)
    for path in paths:
        for name in files_of(path):
            os.replace(os.path.join(model_dir, name), os.path.join(target, name))
        log(f"Moved the files of {os.path.basename(path)} to {target}.")


def remove(path):
    """Removes the checkpoint at `path` (a prefix): its files, and the folder TensorFlow writes it into."""
    shutil.rmtree(f"{path}_temp", ignore_errors=True)
    for name in files_of(path):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(os.path.dirname(path), name))


class CheckpointManager(tf.train.CheckpointManager):
    """tf.train.CheckpointManager, numbering checkpoints by step, keeping the newest `max_to_keep` of the
    checkpoints it finds in `directory` (not only those its index file lists: with that file lost, the older ones
    would stay forever), and turning a write the file system refuses (a full disk ...) into one
    zoo.core.disk.WriteError, the half-written checkpoint removed and the complete ones as they were."""

    def __init__(self, checkpoint, directory, max_to_keep):
        super().__init__(checkpoint, directory, max_to_keep)
        self.keep = max_to_keep

    def save(self, checkpoint_number):
        """Writes the checkpoint of step `checkpoint_number`; returns its path."""
        path = path_of(self.directory, checkpoint_number)
        try:
            super().save(checkpoint_number=checkpoint_number)
        except Exception as error:
            if unreadable_reason(path) is not None:  # not written through (the index file can fail after)
                remove(path)
            steps = checkpoint_steps(self.directory)
            kept = (f"the newest complete checkpoint, {CHECKPOINT_PREFIX}-{steps[0]}, is as it was, and training "
                    "resumes from it" if steps else "no half-written checkpoint was left behind")
            refused = disk.write_error(error, f"the checkpoint of step {checkpoint_number}", path, kept)
            if refused is None:
                raise
            raise refused from None
        if self.keep:  # None keeps them all
            for step in checkpoint_steps(self.directory)[self.keep :]:
                remove(path_of(self.directory, step))
        return path


def random_states(model):
    """The state variables of the model's random-number generators (the Keras SeedGenerators
    behind dropout). tf.train.Checkpoint does not reach them through the model, so a resumed run
    would draw again the dropout masks of its first steps: the Trainer saves them beside it."""
    return [v for v in model.non_trainable_variables if v.name == "seed_generator_state"]


def restore_model(model, model_dir, average=1):
    """Loads the newest checkpoint's weights into `model` (for eval and export); returns the step it was saved at.
    With average=N, the mean of the newest N readable checkpoints' weights (fairseq's average_checkpoints: the end of
    training smoothed, for free), damaged ones named and passed over; only floating-point weights are averaged, any
    other variable keeps the newest checkpoint's value. FileNotFoundError when there is no checkpoint,
    CheckpointError when fewer than N read through."""
    if average < 1:
        raise ValueError(f"average_checkpoints={average} must be at least 1.")
    path, newest, _ = newest_readable(model_dir)
    if path is None:
        raise FileNotFoundError(f"No checkpoint in {model_dir}: train first (--mode=train).")
    found = [(path, newest)]
    for step in (older for older in checkpoint_steps(model_dir) if older < newest):
        if len(found) == average:
            break
        path = path_of(model_dir, step)
        reason = unreadable_reason(path)
        if reason is None:
            found.append((path, step))
        else:
            print(f"Warning: checkpoint {path} cannot be read ({reason}); passed over.")
    if len(found) < average:
        raise CheckpointError(f"{model_dir} holds {len(found)} readable checkpoint(s) (steps {[s for _, s in found]}), "
                              f"fewer than the {average} asked to average: lower --average_checkpoints, or train with "
                              f"--keep_checkpoints={average} or more.")
    sums = [-0.0] * len(model.weights)  # -0.0 + x is x bit for bit (0.0 + -0.0 would be +0.0)
    for path, _ in reversed(found):  # the newest last: its integer variables stay
        # Every layer and weight of `model` must be found (the optimizer's slots may be left out).
        tf.train.Checkpoint(model=model).read(path).expect_partial().assert_existing_objects_matched()
        values = [np.asarray(v) for v in model.weights]
        sums = [s + v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v for s, v in zip(sums, values)]
    if len(found) > 1:
        model.set_weights([(s / len(found)).astype(v.dtype) if np.issubdtype(v.dtype, np.floating) else s
                           for s, v in zip(sums, model.weights)])
        print(f"Averaged the weights of the checkpoints at steps {', '.join(str(s) for _, s in found)}.", flush=True)
    return found[0][1]
