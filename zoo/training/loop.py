"""The zoo's one training loop: a custom `strategy.run` loop for every recipe.

Keras 3's `model.fit` breaks under MultiWorkerMirroredStrategy
(keras-team/keras#20585) and its jit_compile fails under MirroredStrategy, so
the loop is ours: a per-replica step inside `strategy.run`, several steps per
`tf.function` call, losses normalized by the global number of tokens (or
examples) so that any number of replicas computes the same update as one.

A recipe hands the loop a `Task`: how to build the model, the training data
for a given start step, and the loss of a batch.

SIGTERM (a scheduler taking the machine back) and SIGINT (Ctrl-C) stop a run
cleanly, as tf.distribute's PreemptionCheckpointHandler promises: while the
loop trains they are noted, and once the call of the loop under way ends (at
most log_every steps), every worker saves a checkpoint of the step reached and
raises `Stopped`; elsewhere they raise `Stopped` at once (`stop_on_signals`).
That handler itself does not fit this loop: it counts one step per call, adds
a variable of its own to the checkpoint, restores through its own manager, and
on a GCP CPU machine does nothing.
"""

import contextlib
import dataclasses
import os
import shutil
import signal
import threading
import time
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from zoo.runs import checkpoints
from zoo.core import checks
from zoo.training.distribute import is_chief
from zoo.training.optimization import SCHEDULES, make_optimizer
from zoo.core.progress import Progress

PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    train_steps: int = 1000
    batch_size: int = 32  # sequences per global batch (or the cap, with max_tokens)
    max_tokens: int | None = None  # token budget per global batch, padding included
    learning_rate: float = 5e-4  # the schedule's peak
    warmup_steps: int = 1000
    schedule: str = "inverse_sqrt"  # or "cosine": annealed to zero at train_steps
    label_smoothing: float = 0.1
    weight_decay: float = 0.0  # AdamW's, decoupled; 0 = Adam
    layer_decay: float = 1.0  # each layer below the top learns at this factor of the rate above it
    clip_norm: float | None = 1.0  # global gradient norm, over all replicas
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    log_every: int = 50
    profile_steps: tuple[int, int] | None = None  # (first, last) step traced by TensorFlow's profiler, 1-based
    jit_compile: bool = False
    mixed_precision: str = "float32"  # or "auto": resolved here for this machine (zoo.training.precision)
    precision_reason: str = ""  # why that dtype, as the recipe chose it (kept in config.json)
    seed: int = 0

    def __post_init__(self):
        if self.mixed_precision == "auto":  # this machine's choice (zoo.training.precision), kept with its reason
            from zoo.training import precision

            dtype, reason = precision.choose("auto")
            object.__setattr__(self, "mixed_precision", dtype)
            object.__setattr__(self, "precision_reason", reason)
        if self.mixed_precision not in PRECISIONS:
            raise ValueError(f"mixed_precision={self.mixed_precision!r} is not one of {tuple(PRECISIONS)}.")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule={self.schedule!r} is not one of {SCHEDULES}.")
        checks.positive(self, "learning_rate", "keep_checkpoints", "max_tokens")
        checks.non_negative(self, "warmup_steps", "weight_decay", "clip_norm")
        checks.rates(self, "label_smoothing")
        if not 0.0 < self.layer_decay <= 1.0:
            raise ValueError(f"layer_decay={self.layer_decay} must be in (0, 1] (1 = the same rate everywhere).")
        for name in ("train_steps", "batch_size", "checkpoint_every", "log_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive.")
        if self.profile_steps is not None:
            first, last = self.profile_steps
            if not 1 < first <= last <= self.train_steps:
                raise ValueError(f"profile_steps={self.profile_steps} must be two steps, first <= last <= train_steps="
                                 f"{self.train_steps}, after the first step (which traces the loop), e.g. (11, 20).")
            if (first - 1) // self.checkpoint_every != (last - 1) // self.checkpoint_every:
                raise ValueError(f"profile_steps={self.profile_steps} spans a checkpoint (every {self.checkpoint_every} "
                                 "steps): the trace is one call of the loop, which ends at each checkpoint. Choose "
                                 "steps between two checkpoints.")


@dataclasses.dataclass(frozen=True)
class Task:
    """What a recipe gives the loop.

    build_model: () -> keras.Model, called inside the strategy's scope.
    dataset: (tf.distribute.InputContext, start_step) -> tf.data.Dataset of
        per-replica batches for that input pipeline, from `start_step` on.
    loss: (model, batch, training) -> (loss_sum, weight, tokens): the summed
        float32 loss over the batch, what it is summed over (tokens or
        examples), and the number of real input tokens (for tokens/s).
    initial_state: optional (model) -> nested tensors, a replica's state at
        the start (Transformer-XL's memory). With it the loss is
        (model, batch, training, state) -> (loss_sum, weight, tokens, state):
        each replica's state goes from one of its steps to the next and is
        saved with every checkpoint.
    initialize: optional (model) -> None, called once on a run that starts from step 0
        (no checkpoint), after the model is built: pretrained weights go in here.
    layer_depths: optional (model) -> one int per trainable variable, its layer's depth
        below the top (0 = the head); with TrainConfig.layer_decay, a variable learns at
        learning_rate * layer_decay ** depth.
    """

    build_model: Callable
    dataset: Callable
    loss: Callable
    initial_state: Callable | None = None
    initialize: Callable | None = None
    layer_depths: Callable | None = None


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; nothing after the last checkpoint was saved."""


class Stopped(BaseException):
    """SIGTERM or SIGINT stopped the run. A BaseException, as KeyboardInterrupt is, so that no `except Exception`
    on its way out takes it for an error of its own. `step`: the step the training loop stopped at, its
    checkpoint saved (None: stopped outside the loop); `peer`: the signal came to another worker of the job."""

    def __init__(self, signum, step=None, peer=False):
        self.signum, self.step, self.peer = signum, step, peer
        name = signal.Signals(signum).name
        if step is None:
            message = f"stopped by {name}; run again to continue (training resumes from its last checkpoint)"
        else:
            by = f"another worker's {name}" if peer else name
            message = f"stopped at step {step} by {by}; the checkpoint is saved; run again to resume"
        super().__init__(message)

    @property
    def status(self):
        """The exit status a shell gives a process this signal ended (143, 130): a stopped run has not finished."""
        return 128 + self.signum


@contextlib.contextmanager
def _handling_stop_signals(handler):
    """`handler` for SIGTERM and SIGINT inside the `with` block, the handlers before it after it; off the main
    thread (where Python cannot set them) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, previous in before.items():
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)  # None: set outside Python


def _raise_stopped(signum, frame):
    raise Stopped(signum)


def stop_on_signals():
    """A context in which SIGTERM and SIGINT raise `Stopped` wherever the run is, as Ctrl-C raises
    KeyboardInterrupt: the run ends through its `finally` blocks and context managers (its folder's lock
    released) instead of dying at once. While `Trainer.train` trains, they are noted instead."""
    return _handling_stop_signals(_raise_stopped)


@contextlib.contextmanager
def noting_stop_signals():
    """A context in which SIGTERM and SIGINT are noted in the list it yields, for the training loop to stop
    at the end of its call; a second SIGINT raises `Stopped` at once (Ctrl-C twice: without waiting for the
    checkpoint). One noted and not acted on by the end of the block raises `Stopped` then."""
    noted = []

    def note(signum, frame):
        if noted and signum == signal.SIGINT:
            raise Stopped(signum)
        noted.append(signum)

    with _handling_stop_signals(note):
        yield noted
    if noted:
        raise Stopped(noted[0])


@contextlib.contextmanager
def dtype_policy(mixed_precision):
    """Keras's global dtype policy for `mixed_precision` ("float32", "bfloat16", "float16": variables
    stay float32) inside the `with` block; the caller's policy again after it."""
    before = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(PRECISIONS[mixed_precision])
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(before)


def keep_freed_memory():
    """Lets the C allocator keep and reuse freed memory instead of giving it back to the system
    and faulting it in again at the next step.

    TensorFlow 2.21 sets glibc's M_TRIM_THRESHOLD to 128 KB when a distributed dataset's iterator
    starts (it logs "Memory patch applied"); that also freezes glibc's mmap threshold at 128 KB, so
    every larger buffer of every step is a fresh mmap, zeroed page by page and unmapped when freed.
    Here both go to the ceilings glibc's own adaptive rules reach: buffers up to 32 MB (its largest
    mmap threshold) come from the heap, and up to 64 MB of free memory at the heap's top is kept
    (twice that). TensorFlow lowers the trim threshold presumably against the memory growth reported
    with generator-fed pipelines (tensorflow/tensorflow#65675); a training process gives that up for
    speed (`benchmarks/allocator.py` measures it). A no-op without glibc, or with ZOO_TF_ALLOCATOR=1
    (TensorFlow's settings as they are)."""
    import ctypes

    if os.environ.get("ZOO_TF_ALLOCATOR") == "1":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def random_states(model):
    """The state variables of the model's random-number generators (the Keras SeedGenerators
    behind dropout). tf.train.Checkpoint does not reach them through the model, so a resumed run
    would draw again the dropout masks of its first steps: the Trainer saves them beside it."""
    return [v for v in model.non_trainable_variables if v.name == "seed_generator_state"]


def restore_model(model, model_dir, average=1):
    """Loads the newest checkpoint's weights into `model` (for eval and export); returns the step
    it was saved at. With average=N, the mean of the newest N readable checkpoints' weights
    (fairseq's average_checkpoints: the end of training smoothed, for free); only floating-point
    weights are averaged, any other variable keeps the newest checkpoint's value."""
    if average < 1:
        raise ValueError(f"average_checkpoints={average} must be at least 1.")
    found = checkpoints.newest_readable_paths(model_dir, average)
    sums = None
    for path, _ in reversed(found):  # the newest last: its integer variables stay
        # Every layer and weight of `model` must be found (the optimizer's slots may be left out).
        tf.train.Checkpoint(model=model).read(path).expect_partial().assert_existing_objects_matched()
        values = [np.asarray(v) for v in model.weights]
        if sums is None:
            sums = [v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v for v in values]
        else:
            sums = [s + v if np.issubdtype(v.dtype, np.floating) else v for s, v in zip(sums, values)]
    if len(found) > 1:
        model.set_weights([(s / len(found)).astype(v.dtype) if np.issubdtype(v.dtype, np.floating) else s
                           for s, v in zip(sums, model.weights)])
        print(f"Averaged the weights of the checkpoints at steps {', '.join(str(s) for _, s in found)}.", flush=True)
    return found[0][1]


class Trainer:
    """Builds model, optimizer and checkpoint under `strategy`, then trains.

    Re-running on a model_dir that holds checkpoints resumes from the newest:
    same step count, optimizer state and data position (the dataset for the
    start step skips the batches already seen).
    """

    def __init__(self, task, config, model_dir, strategy):
        self.task, self.config, self.model_dir, self.strategy = task, config, model_dir, strategy
        self.chief = is_chief(strategy)
        with dtype_policy(config.mixed_precision):  # the model's layers keep it; the caller's policy is left alone
            self._build()

    def _build(self):
        task, config, model_dir, strategy = self.task, self.config, self.model_dir, self.strategy
        keras.utils.set_random_seed(config.seed)
        with strategy.scope():
            self.model = task.build_model()
            rate_scales = None
            if config.layer_decay != 1.0:
                if task.layer_depths is None:
                    raise ValueError("layer_decay is set but this model has no layer depths: leave it at 1.")
                rate_scales = [config.layer_decay**depth for depth in task.layer_depths(self.model)]
            self.optimizer = make_optimizer(
                config.learning_rate,
                config.warmup_steps,
                config.mixed_precision,
                config.schedule,
                config.train_steps,
                config.weight_decay,
                rate_scales,
            )
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.compiled_gradients = tf.function(self._gradients, jit_compile=config.jit_compile)
        self.state, self.saved_state, self.agree = (), None, None
        saved = dict(model=self.model, optimizer=self.optimizer, step=self.step,
                     random_states=random_states(self.model))
        if task.initial_state is not None:
            self.state = strategy.run(lambda: task.initial_state(self.model))
            # Every replica's state, concatenated in replica order on the batch axis, for checkpoints.
            first = strategy.experimental_local_results(self.state)[0]
            replicas = strategy.num_replicas_in_sync
            self.saved_state = tf.nest.map_structure(
                lambda t: tf.Variable(tf.zeros([replicas * t.shape[0], *t.shape[1:]], t.dtype), trainable=False), first
            )
            saved["state"] = self.saved_state
        latest, _, unreadable = checkpoints.newest_readable(model_dir, log=self._log)
        if self.chief:  # a run continuing from an older step never writes over them
            checkpoints.set_aside(unreadable, model_dir)
        checkpoint = tf.train.Checkpoint(**saved)
        self.write_dir = model_dir if self.chief else os.path.join(model_dir, f".worker_{self._task_id()}")
        self.manager = checkpoints.CheckpointManager(checkpoint, self.write_dir, max_to_keep=config.keep_checkpoints)
        if latest:
            checkpoint.read(latest).assert_existing_objects_matched()
            print(f"Resuming from step {int(self.step.numpy())} ({latest}).", flush=True)
            if self.saved_state is not None:
                self.state = self._distribute_saved_state()
                print("Training state: restored the memory saved with that checkpoint.", flush=True)
        elif task.initialize is not None:
            task.initialize(self.model)

    def _profile_window(self, start):
        """config.profile_steps when they come after the process's first call of the loop (which traces it),
        else None, saying why. Every worker splits its calls of the loop there (the job's workers agree
        after each call whether to stop: `_stop_signal`); the chief alone traces them."""
        window = self.config.profile_steps
        if window is None:
            return None
        if window[0] - 1 <= start:
            self._log(f"Not profiling steps {window[0]}-{window[1]}: this run resumes at step {start}, and a profile "
                      "must start after the process's first call of the training loop. Give later --profile_steps.")
            return None
        return window

    def _log(self, message):
        if self.chief:
            print(message, flush=True)

    def _distribute_saved_state(self):
        """Each replica's rows of the saved state (every worker reads the chief's checkpoint)."""
        replicas = self.strategy.num_replicas_in_sync

        def value(context):
            i = context.replica_id_in_sync_group

            def rows(v):
                size = v.shape[0] // replicas
                return tf.identity(v[i * size : (i + 1) * size])

            return tf.nest.map_structure(rows, self.saved_state)

        return self.strategy.experimental_distribute_values_from_function(value)

    def _save_state(self):
        """Gathers every replica's state (a collective on several workers: all of them call this)."""
        for variable, value in zip(tf.nest.flatten(self.saved_state), tf.nest.flatten(self.state)):
            # Collectives carry float32, float16, float64, int32, int64: bool and bfloat16 travel as a wider type.
            carrier = {tf.bool: tf.int32, tf.bfloat16: tf.float32}.get(variable.dtype)
            if carrier is not None:
                value = self.strategy.run(lambda v, c=carrier: tf.cast(v, c), args=(value,))
            variable.assign(tf.cast(self.strategy.gather(value, axis=0), variable.dtype))

    def _task_id(self):
        resolver = getattr(self.strategy, "cluster_resolver", None)
        return getattr(resolver, "task_id", 0) or 0

    def _gradients(self, batch, state):
        """Per-replica loss, gradients of the (loss-scaled) summed loss, and the new state."""
        with tf.GradientTape() as tape:
            if self.task.initial_state is None:
                loss_sum, weight, tokens = self.task.loss(self.model, batch, True)
            else:
                loss_sum, weight, tokens, state = self.task.loss(self.model, batch, True, state)
            scaled = self.optimizer.scale_loss(loss_sum)
        gradients = tape.gradient(scaled, self.model.trainable_variables)
        return loss_sum, tf.cast(weight, tf.float32), tf.cast(tokens, tf.int64), gradients, state

    def _replica_step(self, batch, state):
        context = tf.distribute.get_replica_context()
        loss_sum, weight, tokens, gradients, state = self.compiled_gradients(batch, state)
        total_weight = tf.maximum(context.all_reduce(tf.distribute.ReduceOp.SUM, weight), 1.0)
        # Dense gradients (embeddings give IndexedSlices), each replica's share of the global mean.
        gradients = [tf.convert_to_tensor(g) / total_weight for g in gradients]
        gradients = self._global_gradients(context, gradients)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))
        return loss_sum / total_weight, tokens, state

    def _global_gradients(self, context, gradients):
        """What Keras does per replica but must see the summed gradient.

        Keras clips each replica's gradient before the sum (not the global
        norm), and its loss scaling checks only the first replica's gradient
        for overflow. So, where either applies, sum here, clip the sum with
        the loss scale taken out, and hand each replica 1/N of it (Keras then
        sums the N identical shares back).
        """
        scale = getattr(self.optimizer, "dynamic_scale", None)
        replicas = self.strategy.num_replicas_in_sync
        if not self.config.clip_norm and (scale is None or replicas == 1):
            return gradients
        if replicas > 1:
            gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        if self.config.clip_norm:
            scale = 1.0 if scale is None else tf.cast(scale, tf.float32)
            clipped, _ = tf.clip_by_global_norm([g / scale for g in gradients], self.config.clip_norm)
            gradients = [g * scale for g in clipped]
        return [g / replicas for g in gradients]

    def _train_loop(self, iterator, steps, state):
        losses = tf.TensorArray(tf.float32, size=steps)
        tokens = tf.constant(0, tf.int64)
        for i in tf.range(steps):
            loss, replica_tokens, state = self.strategy.run(self._replica_step, args=(next(iterator), state))
            losses = losses.write(i, self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None))
            tokens += self.strategy.reduce(tf.distribute.ReduceOp.SUM, replica_tokens, axis=None)
        return losses.stack(), tokens, state

    def train(self):
        """Trains to config.train_steps; returns {"step", "loss" (of the last steps logged),
        "tokens_per_second" (over the whole call), "steady_tokens_per_second" (leaving out
        the first log interval, which traces the loop), "seconds"}, or None when the run
        had already reached train_steps. SIGTERM or SIGINT stops it at the end of the call
        of the loop under way, once that step's checkpoint is saved: `Stopped`."""
        with dtype_policy(self.config.mixed_precision), noting_stop_signals() as noted:
            return self._train(noted)

    def _save(self, step):
        if self.saved_state is not None:
            self._save_state()
        self.manager.save(checkpoint_number=step)

    def _stop_signal(self, noted):
        """(signal, own): SIGTERM or SIGINT once this process or another worker of the job noted one, else
        (0, False); `own`: this process noted it. Every worker asks after the same calls of the loop (a
        collective on several workers), so that all of them stop after the same step."""
        own = noted[0] if noted else 0
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return own, bool(own)
        if self.agree is None:
            def count(flags):  # summed over the job's replicas: how many noted SIGTERM, how many SIGINT
                context = tf.distribute.get_replica_context()
                return context.all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(flags))  # on the replica's device

            self.agree = tf.function(
                lambda flags: self.strategy.experimental_local_results(self.strategy.run(count, args=(flags,)))[0]
            )
        terms, interrupts = self.agree(tf.constant([own == signal.SIGTERM, own == signal.SIGINT], tf.int32)).numpy()
        signum = signal.SIGTERM if terms else signal.SIGINT if interrupts else 0
        return signum, bool(signum) and own == signum

    def _remove_worker_copy(self):
        """A non-chief worker's checkpoints (written because saving is collective) are not the run's."""
        if not self.chief:
            shutil.rmtree(self.write_dir, ignore_errors=True)

    def _train(self, noted):
        config = self.config
        start = int(self.step.numpy())
        if start >= config.train_steps:
            print(f"{self.model_dir} is already at step {start} (train_steps={config.train_steps}).", flush=True)
            return None
        loop = tf.function(self._train_loop)
        dataset = self.strategy.distribute_datasets_from_function(lambda context: self.task.dataset(context, start))
        iterator = iter(dataset)
        keep_freed_memory()
        writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "train")) if self.chief else None
        progress = Progress(config.train_steps, unit="step")
        step, loss, tokens_per_second, total_tokens, began = start, float("nan"), 0.0, 0, time.time()
        steady_tokens, steady_seconds = 0, 0.0  # every interval after the first (and not profiled)
        profile = self._profile_window(start)
        while step < config.train_steps:
            to_checkpoint = config.checkpoint_every - step % config.checkpoint_every
            n = min(config.log_every, to_checkpoint, config.train_steps - step)
            profiling = profile is not None and step + 1 == profile[0]
            if profiling:  # one call of the loop (the config keeps it between checkpoints): those steps alone
                n = profile[1] - step
            elif profile is not None and step + 1 < profile[0]:
                n = min(n, profile[0] - 1 - step)
            tracing = profiling and self.chief
            if tracing:
                # Level 3 also traces the ops TensorFlow deems cheap, else their time reads as the executor's.
                options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3)
                tf.profiler.experimental.start(os.path.join(self.model_dir, "train"), options=options)
            tic = time.time()
            try:
                losses, tokens, self.state = loop(iterator, tf.constant(n), self.state)
                losses = losses.numpy()
            except tf.errors.OutOfRangeError:
                raise ValueError(f"The training data ran out before step {step + n}.") from None
            finally:
                if tracing:
                    tf.profiler.experimental.stop()
            if tracing:
                self._log(f"Profiled steps {step + 1}-{step + n} into "
                          f"{os.path.join(self.model_dir, 'train', 'plugins', 'profile')}.")
            bad = np.flatnonzero(~np.isfinite(losses))
            if bad.size:
                raise NonFiniteLossError(
                    f"The loss is {losses[bad[0]]} at step {step + bad[0] + 1}; training stopped and nothing after "
                    f"the last checkpoint in {self.model_dir} was saved. Lower --learning_rate, raise "
                    "--warmup_steps or train in float32, then run again to resume from that checkpoint."
                )
            step += n
            self.step.assign(step)
            seconds = time.time() - tic
            loss, tokens_per_second = float(losses.mean()), float(tokens.numpy()) / seconds
            if total_tokens and not profiling:
                steady_tokens, steady_seconds = steady_tokens + int(tokens.numpy()), steady_seconds + seconds
            total_tokens += int(tokens.numpy())
            learning_rate = float(self.optimizer.learning_rate.numpy())
            progress.update(step, [("loss", loss), ("lr", learning_rate), ("tokens/s", tokens_per_second)])
            if writer:
                with writer.as_default(step=step):
                    tf.summary.scalar("loss", loss)
                    tf.summary.scalar("learning_rate", learning_rate)
                    tf.summary.scalar("tokens_per_second", tokens_per_second)
            saved = step % config.checkpoint_every == 0 or step == config.train_steps
            if saved:
                self._save(step)
            signum, own = self._stop_signal(noted)
            if signum:
                if not saved:
                    self._save(step)
                if writer:
                    writer.flush()
                self._remove_worker_copy()
                raise Stopped(signum, step, peer=not own)
        self._remove_worker_copy()
        seconds = time.time() - began
        steady = steady_tokens / steady_seconds if steady_seconds else total_tokens / seconds
        return {"step": step, "loss": loss, "tokens_per_second": total_tokens / seconds,
                "steady_tokens_per_second": steady, "seconds": seconds}
