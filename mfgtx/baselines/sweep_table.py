"""The ``Sweep`` table of a training report: every trial of ``train.sweep`` with its values
and validation figures, and which one the bundle keeps.

A sweep is judged on the validation lots only; the test lots are read once, for the chosen
trial, by the report the table is part of (:class:`~mfgtx.baselines.EvaluationReport`). The
table says so in words, with the number of lots of each, so that a reader of the report (or
of the bundle's JSON) can check the choice never saw the test lots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SweepTable", "SweepTrial"]


@dataclass(frozen=True)
class SweepTrial:
    """One trial of a sweep.

    Attributes:
        number: the trial's number (1-based, in the grid's order).
        values: the values it tried, by key as the job file names them.
        val_loss: its best validation loss (an ensemble: the members' mean, each on its own
            validation lots); ``nan`` when training diverged.
        best_epoch: the epoch of the weights kept (an ensemble: the last member's).
        epochs: epochs trained (an ensemble: over all its members).
        seconds: how long it trained.
    """

    number: int
    values: dict[str, Any]
    val_loss: float
    best_epoch: int
    epochs: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "values": dict(self.values),
            "val_loss": None if math.isnan(self.val_loss) else self.val_loss,
            "best_epoch": self.best_epoch,
            "epochs": self.epochs,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> SweepTrial:
        loss = state.get("val_loss")
        return cls(
            number=int(state["number"]),
            values=dict(state["values"]),
            val_loss=math.nan if loss is None else float(loss),
            best_epoch=int(state["best_epoch"]),
            epochs=int(state["epochs"]),
            seconds=float(state["seconds"]),
        )


@dataclass(frozen=True)
class SweepTable:
    """The trials of a sweep and the one chosen.

    Attributes:
        trials: every trial, in the grid's order.
        chosen: the number of the trial the bundle keeps (the lowest validation loss; the
            first of equals).
        validation_lots: the lots the choice was made on.
        test_lots: the lots of the test report, read for the chosen trial only.

    Example:
        >>> table = SweepTable(
        ...     (SweepTrial(1, {"lr": 0.001}, 0.52, 9, 12, 3.1),
        ...      SweepTrial(2, {"lr": 0.01}, 0.47, 4, 7, 2.0)),
        ...     chosen=2, validation_lots=10, test_lots=5)
        >>> table.best().values
        {'lr': 0.01}
        >>> SweepTable.from_dict(table.to_dict()) == table
        True
    """

    trials: tuple[SweepTrial, ...]
    chosen: int
    validation_lots: int = 0
    test_lots: int = 0
    keys: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.trials:
            raise ValueError("a sweep table needs at least one trial")
        if self.chosen not in {t.number for t in self.trials}:
            raise ValueError(f"chosen trial {self.chosen} is not one of the trials")
        if not self.keys:
            object.__setattr__(self, "keys", tuple(self.trials[0].values))

    def best(self) -> SweepTrial:
        """The chosen trial."""
        return next(t for t in self.trials if t.number == self.chosen)

    @property
    def words(self) -> str:
        """How the trial was chosen, in one sentence."""
        return (
            f"{len(self.trials)} trial(s), chosen by the lowest validation loss on the "
            f"{self.validation_lots} validation lot(s); the {self.test_lots} test lot(s) were "
            f"read once, for the chosen trial {self.chosen} only."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "keys": list(self.keys),
            "chosen": self.chosen,
            "chosen_on": "validation loss, validation lots only",
            "validation_lots": self.validation_lots,
            "test_lots": self.test_lots,
            "trials": [t.to_dict() for t in self.trials],
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> SweepTable:
        return cls(
            trials=tuple(SweepTrial.from_dict(t) for t in state["trials"]),
            chosen=int(state["chosen"]),
            validation_lots=int(state.get("validation_lots", 0)),
            test_lots=int(state.get("test_lots", 0)),
            keys=tuple(state.get("keys", ())),
        )

    def to_markdown(self) -> list[str]:
        """The ``Sweep`` section's lines: the sentence and one row per trial."""
        lines = [
            "Sweep: " + self.words,
            "",
            "| trial | "
            + " | ".join(self.keys)
            + " | validation loss ↓ | best epoch | epochs | seconds |",
            "| --- | " + " | ".join("---:" for _ in self.keys) + " | ---: | ---: | ---: | ---: |",
        ]
        for t in self.trials:
            name = f"**{t.number} (chosen)**" if t.number == self.chosen else str(t.number)
            values = " | ".join(_value(t.values.get(k)) for k in self.keys)
            loss = "n/a" if math.isnan(t.val_loss) else f"{t.val_loss:.4g}"
            lines.append(
                f"| {name} | {values} | {loss} | {t.best_epoch} | {t.epochs} | {t.seconds:.1f} |"
            )
        return lines


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)
