"""The toy kind's job-file section ``toy``."""

from __future__ import annotations

from dataclasses import dataclass

from tests.kinds.toy.model import ToyConfig


@dataclass(frozen=True)
class ToySection:
    """The ``toy`` section: nothing to set but the task (the data decides the rest)."""

    task: str = "classification"

    def __post_init__(self) -> None:
        if self.task != "classification":
            raise ValueError(f"task: the toy kind only classifies, found {self.task!r}")

    def model_config(self, *, n_channels: int, n_outputs: int) -> ToyConfig:
        """The model's config: this section and what the data decides."""
        return ToyConfig(n_channels=n_channels, n_outputs=n_outputs)
