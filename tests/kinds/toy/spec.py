"""What a toy bundle reads, saved in it as ``input_spec``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from mfgtx.data import ColumnMap, SensorScaler, Windowing


@dataclass(frozen=True)
class ToySpec:
    """The columns, windowing, label, scaler and time axis of a toy model (a\n    :class:`~mfgtx.kinds.WindowSpec`)."""

    columns: ColumnMap
    windowing: Windowing
    targets: tuple[str, ...]
    scaler: SensorScaler
    time_kind: str | None
    task: str = "classification"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "toy",
            "version": 1,
            "columns": dataclasses.asdict(self.columns),
            "windowing": self.windowing.to_dict(),
            "targets": list(self.targets),
            "scaler": self.scaler.to_dict(),
            "time_kind": self.time_kind,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ToySpec:
        columns = {k: tuple(v) if isinstance(v, list) else v for k, v in state["columns"].items()}
        return cls(
            columns=ColumnMap(**columns),
            windowing=Windowing(**state["windowing"]),
            targets=tuple(state["targets"]),
            scaler=SensorScaler.from_dict(state["scaler"]),
            time_kind=state["time_kind"],
        )
