"""The predictor of a bundle: the one inference path of mfgtx, and the rows it writes.

:class:`Predictor` is what ``mfgtx score``, ``mfgtx evaluate``, the dashboard and a Python
user all call; a kind subclasses it for its model. :class:`Scored` is what it makes of one
batch of input, :class:`Trained` a model just trained standing in for its bundle, and
:func:`time_text` / :func:`error_row` the cells of the output and errors-file rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

import numpy as np
import pandas as pd

from mfgtx.artifacts import Bundle, BundleError
from mfgtx.baselines import EvaluationReport
from mfgtx.calibration.conformal import BUNDLE_KEY as INTERVALS_KEY
from mfgtx.calibration.conformal import IntervalCalibration
from mfgtx.data import DataError
from mfgtx.split import AuditReport

if TYPE_CHECKING:
    from mfgtx.kinds._kind import Kind

__all__ = ["InputSpec", "Predictor", "Scored", "SpecT", "Trained", "error_row", "time_text"]


def time_text(values: np.ndarray) -> list[str]:
    """Window times as text: ISO 8601 (UTC) for timestamps, the number for cycles."""
    if np.issubdtype(values.dtype, np.datetime64):
        return [t.isoformat() for t in pd.to_datetime(values, utc=True)]
    return [repr(float(v)) for v in values]


def error_row(lot: object, err: Exception) -> dict[str, object]:
    """An errors-file row (``lot``, ``file``, ``line``, ``column``, ``reason``) for ``err``.

    The file and line are the error's own (:class:`~mfgtx.data.DataError` ``file`` and
    ``line``): its message was worded with them when it was raised, from the places that
    travel with the rows (:class:`~mfgtx.data.table.Where`).
    """
    line = getattr(err, "line", None)
    return {
        "lot": None if lot is None else str(lot),
        "file": getattr(err, "file", None),
        "line": None if line is None else int(line),
        "column": getattr(err, "column", None),
        "reason": str(err) or f"{type(err).__name__} (no reason given)",
    }


def _text(value: object) -> str | None:
    """An errors-file cell as text (``None`` for an empty one)."""
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


@dataclass(frozen=True)
class Scored:
    """What a predictor made of one batch of input: the output rows and the errors.

    Attributes:
        rows: the output frame (the columns ``mfgtx score`` writes).
        errors: one errors-file row per bad lot, file or image (not scored).
        lots, windows: how many lots (or images) and windows were scored.
        warnings: errors-file rows about lots that were scored all the same (a sensor
            without a single reading in a lot, scored as missing); each also came as a
            :class:`~mfgtx.data.DataWarning`.
    """

    rows: pd.DataFrame
    errors: list[dict[str, object]]
    lots: int = 0
    windows: int = 0
    warnings: list[dict[str, object]] = field(default_factory=list)


@dataclass(frozen=True)
class Trained:
    """A model just trained, standing in for its bundle until the bundle is written (so
    that training judges the model through the same predictor that scoring uses)."""

    model: Any
    calibration: Any = None
    bundle_id: str = ""
    manifest: Any = None
    intervals: Any = None


class InputSpec(Protocol):
    """What every kind's input specification (its own frozen dataclass, saved in its
    bundles) tells the shared code: the model's task."""

    @property
    def task(self) -> str: ...


#: A kind's input specification.
SpecT = TypeVar("SpecT", bound=InputSpec)


class Predictor(ABC, Generic[SpecT]):
    """A loaded bundle, ready to predict: the one inference path of mfgtx.

    Build it with :func:`mfgtx.load`. :meth:`predict` returns a DataFrame with exactly the
    columns and values ``mfgtx score`` writes for the same input; :meth:`score` returns
    those rows and the errors of bad lots instead of raising; :meth:`explain` gives the
    attention maps of :mod:`mfgtx.explain` (non-causal diagnostics) with their deletion
    test. ``SpecT`` is the kind's input specification.

    Attributes:
        kind: the :class:`Kind` that wrote the bundle.
        bundle: the verified, loaded :class:`~mfgtx.artifacts.Bundle` (while training
            judges a model, the :class:`Trained` model standing in for it).
        input_spec: what the model reads and how (the kind's frozen input specification).
    """

    #: the key columns of the output (rows are replaced by these when written again)
    keys: ClassVar[tuple[str, ...]] = ("lot", "window_end")

    def __init__(self, kind: Kind[Any, Any, Any], bundle: Bundle | Trained, spec: SpecT) -> None:
        self.kind, self.bundle, self.input_spec = kind, bundle, spec

    def __repr__(self) -> str:
        where = self.bundle.path if isinstance(self.bundle, Bundle) else "just trained"
        return f"{type(self).__name__}({where}, id {self.bundle_id[:12]})"

    @property
    def model(self) -> Any:
        return self.bundle.model

    @property
    def members(self) -> int:
        """How many models answer (an ensemble's members, else 1)."""
        return len(getattr(self.model, "members", ())) or 1

    @property
    def explained_model(self) -> Any:
        """The model whose attention maps :meth:`explain` draws: the model, or an ensemble's
        first member (the members' maps are not averaged)."""
        members = getattr(self.model, "members", None)
        return members[0] if members is not None else self.model

    @property
    def bundle_id(self) -> str:
        return self.bundle.bundle_id

    @property
    def path(self) -> Path:
        """The bundle's directory.

        Raises:
            BundleError: the model was just trained; its bundle is not written yet.
        """
        if not isinstance(self.bundle, Bundle):
            raise BundleError("the model was just trained: its bundle is not written yet")
        return self.bundle.path

    @property
    def calibration(self) -> Any:
        return self.bundle.calibration

    @property
    def intervals(self) -> IntervalCalibration | None:
        """The conformal calibration of an interval model's band (fitted on its validation
        lots, ``extra.interval_calibration``), or ``None``: a bundle without one (written
        before it, ``calibration.intervals: off``, a classifier) gives the band as trained.

        Raises:
            BundleError: the bundle's record is not one.
        """
        if isinstance(self.bundle, Trained):
            return cast(IntervalCalibration | None, self.bundle.intervals)
        state = (self.bundle.manifest.get("extra") or {}).get(INTERVALS_KEY)
        if state is None:
            return None
        try:
            return IntervalCalibration.from_dict(state)
        except (TypeError, ValueError) as e:
            raise BundleError(
                f"{self.bundle.path}: bad extra.{INTERVALS_KEY}: {e}", file=self.bundle.path
            ) from e

    @property
    def report(self) -> EvaluationReport | None:
        """The comparison with the baselines made when the bundle was trained."""
        metrics = self.bundle.manifest.get("metrics") or {}
        return EvaluationReport.from_dict(metrics) if metrics.get("rows") else None

    @property
    def audit(self) -> AuditReport | None:
        """The split audit saved with the bundle."""
        state = self.bundle.manifest.get("audit")
        return AuditReport.from_dict(state) if state else None

    @property
    def task(self) -> str:
        return str(self.input_spec.task)

    @abstractmethod
    def score(self, data: Any, *, batch_size: int = 256) -> Scored:
        """The output rows for ``data`` and one errors-file row per bad lot or image.

        Every kind takes ``batch_size`` (inputs per forward pass); a kind adds its own
        options, keyword-only and each with a default (a window predictor's ``stride``,
        ``last_per_lot`` ...; the ViT's ``per_tile``)."""

    def predict(self, data: Any, **options: Any) -> pd.DataFrame:
        """The output rows for ``data`` (see :meth:`score`; ``options`` are its options).

        A predictor of sensor rows also takes a file path (``str`` or ``Path``: a CSV or
        Parquet file, or a folder of them) and reads it the bundle's way (its saved read
        options: delimiter, decimal mark, encoding, time format and zone), giving the rows
        ``mfgtx score`` writes for that file.

        Raises:
            DataError: the input cannot be read as a whole (no rows, a column name given
                twice), or a lot or image could not be scored (the first reason, with its
                lot, column, file and line).
        """
        scored = self.score(data, **options)
        if scored.errors:
            first = scored.errors[0]
            more = f" (and {len(scored.errors) - 1} more)" if len(scored.errors) > 1 else ""
            text = {k: _text(first.get(k)) for k in ("lot", "column", "file", "line")}
            raise DataError(
                f"{first['reason']}{more}",
                lot=text["lot"],
                column=text["column"],
                file=text["file"],
                line=None if text["line"] is None else int(float(text["line"])),
            )
        return scored.rows

    @abstractmethod
    def explain(self, data: Any, *, deletion: bool = True) -> Any:
        """Attention maps of one input and their deletion test (:mod:`mfgtx.explain`;
        ``deletion``: run the test). A kind adds its own options, keyword-only and each with
        a default (which window, which map)."""
