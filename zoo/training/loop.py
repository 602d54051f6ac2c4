"""The zoo's one training loop: a custom `strategy.run` loop for every recipe.

Keras 3's `model.fit` breaks under MultiWorkerMirroredStrategy (keras-team/keras#20585) and its jit_compile fails under
MirroredStrategy, so the loop is ours: a per-replica step inside `strategy.run`, several steps per `tf.function` call,
losses normalized by the global number of tokens (or examples) so that any number of replicas computes the same update
as one. A recipe hands it a `Task` (zoo.training.config). SIGTERM and SIGINT stop it cleanly (zoo.training.stopping):
once the call under way ends, every worker saves a checkpoint of the step reached. tf.distribute's
PreemptionCheckpointHandler does not fit: it counts one step per call, adds a variable of its own to the checkpoint,
restores through its own manager, and on a GCP CPU machine does nothing.
"""

import os
import shutil
import signal
import time

import keras
import numpy as np
import tensorflow as tf

from zoo.core.dtype_policy import dtype_policy
from zoo.core.progress import Progress
from zoo.runs import checkpoints
from zoo.training.distribute import is_chief
from zoo.training.optimization import make_optimizer
from zoo.training.runtime import keep_freed_memory
from zoo.training.stopping import Stopped, noting_stop_signals


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; nothing after the last checkpoint was saved."""


class Trainer:
    """Builds model, optimizer and checkpoint under `strategy`, then trains. Re-running on a model_dir that holds
    checkpoints resumes from the newest: same step count, optimizer state and data position (the dataset for the
    start step skips the batches already seen)."""

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
            self.optimizer = make_optimizer(config.learning_rate, config.warmup_steps, config.mixed_precision,
                                            config.schedule, config.train_steps, config.weight_decay, rate_scales)
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.compiled_gradients = tf.function(self._gradients, jit_compile=config.jit_compile)
        self.state, self.saved_state, self.agree = (), None, None
        saved = dict(model=self.model, optimizer=self.optimizer, step=self.step,
                     random_states=checkpoints.random_states(self.model))
        if task.initial_state is not None:
            self.state = strategy.run(lambda: task.initial_state(self.model))
            # Every replica's state, concatenated in replica order on the batch axis, for checkpoints.
            first = strategy.experimental_local_results(self.state)[0]
            replicas = strategy.num_replicas_in_sync
            saved["state"] = self.saved_state = tf.nest.map_structure(
                lambda t: tf.Variable(tf.zeros([replicas * t.shape[0], *t.shape[1:]], t.dtype), trainable=False), first)
        latest, _, unreadable = checkpoints.newest_readable(model_dir, log=self._log)
        if self.chief:  # a run continuing from an older step never writes over them
            checkpoints.set_aside(unreadable, model_dir)
        checkpoint = tf.train.Checkpoint(**saved)
        worker = getattr(getattr(strategy, "cluster_resolver", None), "task_id", 0) or 0
        self.write_dir = model_dir if self.chief else os.path.join(model_dir, f".worker_{worker}")
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
        if window is not None and window[0] - 1 <= start:
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
            return tf.nest.map_structure(lambda v: tf.split(v, replicas)[i], self.saved_state)

        return self.strategy.experimental_distribute_values_from_function(value)

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
        """What Keras does per replica but must see the summed gradient: Keras clips each replica's gradient
        before the sum (not the global norm), and its loss scaling checks only the first replica's gradient for
        overflow. So, where either applies, sum here, clip the sum with the loss scale taken out, and hand each
        replica 1/N of it (Keras then sums the N identical shares back)."""
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
        """Trains to config.train_steps; returns {"step", "loss" (of the last steps logged), "tokens_per_second" (over
        the whole call), "steady_tokens_per_second" (leaving out the first log interval, which traces the loop),
        "seconds"}, or None when the run had already reached train_steps. SIGTERM or SIGINT stops it at the end of
        the call of the loop under way, once that step's checkpoint is saved: `Stopped`."""
        with dtype_policy(self.config.mixed_precision), noting_stop_signals() as noted:
            return self._train(noted)

    def _save(self, step):
        """Saves the checkpoint of `step`, every replica's state gathered into it first (a collective on several
        workers: all of them call this; without a state there is nothing to gather)."""
        for variable, value in zip(tf.nest.flatten(self.saved_state), tf.nest.flatten(self.state)):
            # Collectives carry float32, float16, float64, int32, int64: bool and bfloat16 travel as a wider type.
            carrier = {tf.bool: tf.int32, tf.bfloat16: tf.float32}.get(variable.dtype)
            if carrier is not None:
                value = self.strategy.run(lambda v, c=carrier: tf.cast(v, c), args=(value,))
            variable.assign(tf.cast(self.strategy.gather(value, axis=0), variable.dtype))
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

    def _next_call(self, step, profile):
        """(steps, profiling) of the loop's next call from `step`: up to the next log line or checkpoint, or the
        profiled window `profile` as one call (the config keeps it between checkpoints), or up to it."""
        config = self.config
        n = min(config.log_every, config.checkpoint_every - step % config.checkpoint_every, config.train_steps - step)
        profiling = profile is not None and step + 1 == profile[0]
        if profiling:
            n = profile[1] - step
        elif profile is not None and step + 1 < profile[0]:
            n = min(n, profile[0] - 1 - step)
        return n, profiling

    def _check_finite(self, losses, step):
        """Stops training at a NaN or infinite loss among `losses`, the steps after `step`."""
        bad = np.flatnonzero(~np.isfinite(losses))
        if bad.size:
            raise NonFiniteLossError(f"The loss is {losses[bad[0]]} at step {step + bad[0] + 1}; training stopped and "
                                     f"nothing after the last checkpoint in {self.model_dir} was saved. Lower "
                                     "--learning_rate, raise --warmup_steps or train in float32, then run again to "
                                     "resume from that checkpoint.")

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
        # The first call of the loop traces it and fills the input's buffers: seconds before the first step line.
        self._log(f"Training steps {start + 1}-{config.train_steps}; the first {config.log_every} include tracing "
                  "the training step ...")
        while step < config.train_steps:
            n, profiling = self._next_call(step, profile)
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
            self._check_finite(losses, step)
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
                    for name, value in (("loss", loss), ("learning_rate", learning_rate),
                                        ("tokens_per_second", tokens_per_second)):
                        tf.summary.scalar(name, value)
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
        # Stopping the input pipeline (its prefetching and shuffling threads) can take many seconds on a large
        # dataset, which would otherwise pass in silence after the last step's line.
        self._log(f"Trained to step {step} in {seconds:.0f}s; stopping the input pipeline ...")
        tic = time.time()
        del iterator, dataset, loop
        if time.time() - tic > 5:
            self._log(f"Input pipeline stopped in {time.time() - tic:.0f}s.")
        steady = steady_tokens / steady_seconds if steady_seconds else total_tokens / seconds
        return {"step": step, "loss": loss, "tokens_per_second": total_tokens / seconds,
                "steady_tokens_per_second": steady, "seconds": seconds}
