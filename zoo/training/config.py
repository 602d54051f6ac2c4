"""What a training run is given: its settings (`TrainConfig`) and its `Task` (how to build the model, its
data and its loss)."""

import dataclasses
from typing import Callable, ClassVar

from zoo.core import checks
from zoo.core.dtype_policy import PRECISIONS
from zoo.training.optimization import SCHEDULES


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    train_steps: int = 1000  # optimizer steps the run trains for in all, counted across resumes
    batch_size: int = 32  # sequences per global batch (or the cap, with max_tokens)
    max_tokens: int | None = None  # token budget per global batch, padding included
    learning_rate: float = 5e-4  # the schedule's peak
    warmup_steps: int = 1000  # steps of linear warm-up from 0 to learning_rate
    schedule: str = "inverse_sqrt"  # after warm-up: 1/sqrt(step), or "cosine": annealed to zero at train_steps
    label_smoothing: float = 0.1  # of the cross-entropy's targets, in [0, 1); 0: none
    weight_decay: float = 0.0  # AdamW's, decoupled; 0 = Adam
    layer_decay: float = 1.0  # each layer below the top learns at this factor of the rate above it
    clip_norm: float | None = 1.0  # global gradient norm, over all replicas
    checkpoint_every: int = 500  # steps between checkpoints (the last step is saved too)
    keep_checkpoints: int = 3  # newest checkpoints kept on disk; older ones are deleted
    log_every: int = 50  # steps between progress lines and TensorBoard summaries (loss, rate, tokens/s)
    profile_steps: tuple[int, int] | None = None  # (first, last) step traced by TensorFlow's profiler, 1-based
    jit_compile: bool = False  # compile the gradient computation with XLA (a TPU compiles with XLA anyway)
    mixed_precision: str = "float32"  # float32, bfloat16, float16; "auto" (a recipe's default): this machine's
    precision_reason: str = ""  # why that dtype (auto's choice, or asked for), written by the run
    seed: int = 0  # seeds initial weights, dropout, the data's order and sampling, the tokenizer's sample; 0 .. 2**32-1

    CHOICES: ClassVar = {"schedule": SCHEDULES, "mixed_precision": ("auto", *PRECISIONS)}

    def __post_init__(self):
        # "auto" is decided once, where the run's config is resolved (zoo.training.run_settings.choose_dtype): this
        # machine's dtype, or a resumed run's own. A config holding it has not been resolved yet.
        if self.mixed_precision not in self.CHOICES["mixed_precision"]:
            raise ValueError(f"mixed_precision={self.mixed_precision!r} is not one of {tuple(PRECISIONS)}.")
        checks.choices(self)
        checks.positive(self, "learning_rate", "keep_checkpoints", "max_tokens")
        checks.non_negative(self, "warmup_steps", "weight_decay", "clip_norm")
        checks.rates(self, "label_smoothing")
        checks.seed(self)
        if not 0.0 < self.layer_decay <= 1.0:
            raise ValueError(f"layer_decay={self.layer_decay} must be in (0, 1] (1 = the same rate everywhere).")
        checks.positive(self, "train_steps", "batch_size", "checkpoint_every", "log_every")
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
    dataset: (tf.distribute.InputContext, start_step) -> tf.data.Dataset of per-replica batches for that input
        pipeline, from `start_step` on.
    loss: (model, batch, training) -> (loss_sum, weight, tokens): the summed float32 loss over the batch, what it
        is summed over (tokens or examples), and the number of real input tokens (for tokens/s).
    initial_state: optional (model) -> nested tensors, a replica's state at the start (Transformer-XL's memory).
        With it the loss is (model, batch, training, state) -> (loss_sum, weight, tokens, state): each replica's
        state goes from one of its steps to the next and is saved with every checkpoint.
    initialize: optional (model) -> None, called once on a run that starts from step 0 (no checkpoint), after the
        model is built: pretrained weights go in here.
    layer_depths: optional (model) -> one int per trainable variable, its layer's depth below the top (0 = the
        head); with TrainConfig.layer_decay, a variable learns at learning_rate * layer_decay ** depth.
    """

    build_model: Callable
    dataset: Callable
    loss: Callable
    initial_state: Callable | None = None
    initialize: Callable | None = None
    layer_depths: Callable | None = None
