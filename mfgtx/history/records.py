"""What one output row of ``mfgtx score`` becomes in the history.

A row's key is the output's key columns (``lot`` and ``window_end``; a forecaster's also
``sensor`` and ``step``; a ViT's the image path); its ``keys`` also hold the data's own key
columns (``line``, ...), which do not make a row another one. Its predictions are the columns
that are neither keys nor bookkeeping (``window_start``, ``bundle_id``, ``decision``); its
interval is the lowest and highest quantile column (``q05`` .. ``q95``) of the first target
that has two; its flags are the warnings the job wrote about its lot.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["score_records"]

_BOOKKEEPING = ("window_start", "bundle_id", "decision")
_QUANTILE = re.compile(r"^(?:(.+)_)?q(\d\d)$")


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it: numbers, text, ``None`` for a missing value."""
    if value is None:
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return None if pd.isna(value) else str(value)


def _interval(columns: Sequence[str]) -> tuple[str, str] | None:
    """The lowest and highest quantile column of the first target that has two."""
    by_target: dict[str, list[tuple[int, str]]] = {}
    for c in columns:
        m = _QUANTILE.match(c)
        if m:
            by_target.setdefault(m.group(1) or "", []).append((int(m.group(2)), c))
    for qs in by_target.values():
        if len(qs) >= 2:
            qs.sort()
            return qs[0][1], qs[-1][1]
    return None


def score_records(
    rows: pd.DataFrame,
    keys: Sequence[str],
    *,
    run_id: str,
    bundle_id: str,
    kind: str,
    scored_at: str,
    flags: Mapping[str, Sequence[str]] | None = None,
    extra_keys: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The history rows of a run's output ``rows`` (one per row, keyed by ``keys``;
    ``extra_keys``: the data's key columns such as ``line``, kept with the keys)."""
    flags = flags or {}
    columns = [str(c) for c in rows.columns]
    extra = [c for c in extra_keys if c in columns and c not in keys]
    predictions = [c for c in columns if c not in keys and c not in extra and c not in _BOOKKEEPING]
    interval = _interval(predictions)
    out = []
    for row in rows.to_dict("records"):
        key = {k: _plain(row.get(k)) for k in keys}
        all_keys = {**key, **{k: _plain(row.get(k)) for k in extra}}
        lot = None if row.get("lot") is None else str(_plain(row.get("lot")))
        end = _plain(row.get("window_end"))
        decision = _plain(row.get("decision")) if "decision" in row else None
        low = high = None
        if interval is not None:
            low, high = _plain(row[interval[0]]), _plain(row[interval[1]])
        out.append(
            {
                "run_id": run_id,
                "bundle_id": bundle_id,
                "kind": kind,
                "scored_at": scored_at,
                "lot": lot,
                "window_end": None if end is None else str(end),
                "key": json.dumps(list(key.values())),
                "keys": json.dumps(all_keys),
                "predictions": json.dumps({c: _plain(row[c]) for c in predictions}),
                "interval_low": low,
                "interval_high": high,
                "decision": decision or None,
                "flags": json.dumps(list(flags.get(lot or "", ()))),
            }
        )
    return out
