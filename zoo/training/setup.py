"""Where and how a run trains (`SetupConfig`): the tf.distribute strategy and the weights it starts from."""

import dataclasses
from typing import ClassVar

from zoo.core import checks
from zoo.training.distribute import STRATEGIES


@dataclasses.dataclass(frozen=True)
class SetupConfig:
    strategy: str = "one_device"  # tf.distribute strategy: one_device, mirrored, multi_worker_mirrored or tpu
    cpu_replicas: int = 0  # split the CPU into this many logical devices (mirrored on a CPU, for tests)
    tpu: str | None = None  # TPU address or name, with strategy=tpu
    init_from: str | None = None  # start from a pretraining run's folder or a published checkpoint (sentiment, pretrain)

    CHOICES: ClassVar = {"strategy": STRATEGIES}

    def __post_init__(self):
        checks.choices(self)
        if self.cpu_replicas < 0:
            raise ValueError(f"cpu_replicas={self.cpu_replicas} must be 0 or more.")

    def from_scratch(self, what):
        """Refuses an init_from for a run that trains from scratch (`what`: "translation", "a language model")."""
        if self.init_from is not None:
            raise ValueError(f"setup.init_from is for sentiment and pretrain runs; {what} trains from scratch: leave "
                             "it out.")
