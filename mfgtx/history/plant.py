"""The plant view's questions to a history: what each line scored last, and how it moved.

Every query reads one bundle's scores by ``scored_at`` range through the history's time index
(``ix_history_scores_scored_at``), never the whole table: a history with months of hourly
scores answers a week's trend from that week's rows. A score's *group* is what the plant
view draws one trend for: the job's first key column (``line``), else its lot (an RUL job's
machine). Its time on a trend is the data's own (``window_end``) where that is a time, else
when it was scored (a cycle number is no time).

- :func:`last_scored`: when the bundle last scored anything;
- :func:`trend`: its scores of a time range, predictions as columns, truth joined where known;
- :func:`latest_lots`: per group, the latest lots with their :func:`verdict`;
- :func:`verdict`: a lot's verdict against the job's limits, in plant words.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore
from mfgtx.history.tables import SCORES
from mfgtx.history.truth import truth_join
from mfgtx.jobfile.limits import Limit

__all__ = [
    "ALL",
    "LEVELS",
    "NOT_RECORDED",
    "last_scored",
    "latest_lots",
    "trend",
    "trend_columns",
    "verdict",
]

#: The group of a score whose keys do not hold the group's key column (``line``).
NOT_RECORDED = "(not recorded)"
#: The group of scores without a lot (a defect model's images) in a job without keys.
ALL = "(all)"
#: A lot's verdict levels, worst first: a limit crossed, the model's bad call, input that
#: was flagged while scoring, nothing wrong, nothing to judge by.
LEVELS = ("alarm", "flag", "check", "ok", "none")
_BAD = {"bad", "defect", "fail", "failed", "nok", "n.i.o.", "true", "1", "1.0", "yes"}
_GOOD = {"good", "pass", "passed", "ok", "i.o.", "false", "0", "0.0", "no"}
_QUANTILE = re.compile(r"(?:^|_)q\d\d$")


def _of_bundle(bundle_id: str) -> Any:
    """The condition "scored by ``bundle_id``", as an expression no index serves
    (``coalesce(bundle_id, '')``): the databases then read a time range through the time index
    instead of walking the bundle's every row through its (bundle, key) index."""
    return sa.func.coalesce(SCORES.c.bundle_id, "") == bundle_id


def last_scored(store: HistoryStore, bundle_id: str) -> str | None:
    """When ``bundle_id`` last scored (its newest ``scored_at``), ``None`` when never."""
    query = (
        sa.select(SCORES.c.scored_at)
        .where(_of_bundle(bundle_id))
        .order_by(SCORES.c.scored_at.desc())
        .limit(1)
    )
    with store.transaction() as conn:
        return conn.execute(query).scalar_one_or_none()


def _truth_number(value: Any) -> float:
    """A truth value as a number: itself, or 1 for a bad word and 0 for a good one."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        word = str(value).strip().lower()
        return 1.0 if word in _BAD else 0.0 if word in _GOOD else math.nan


def _times(window_end: pd.Series, scored_at: pd.Series) -> pd.Series:
    """The data's own time (``window_end``) where every value is one, else ``scored_at``."""
    numeric = pd.to_numeric(window_end, errors="coerce")
    if window_end.notna().all() and numeric.isna().all():
        parsed = pd.to_datetime(window_end, utc=True, errors="coerce", format="ISO8601")
        if parsed.notna().all():
            return parsed
    return pd.to_datetime(scored_at, utc=True, format="ISO8601")


def trend(
    store: HistoryStore,
    bundle_id: str,
    start: str,
    end: str,
    *,
    group_key: str | None = None,
    groups: Iterable[str] | None = None,
    target: str | None = None,
) -> pd.DataFrame:
    """The scores of ``bundle_id`` with ``start <= scored_at < end`` (ISO 8601 UTC text),
    oldest first, one column per prediction.

    Args:
        group_key: the key column a row's ``group`` is (``line``); ``None``: its lot.
        groups: only these groups (``None``: all).
        target: the truth joined (``defect``, ``rul_cycles``): ``truth`` as recorded and
            ``actual`` as a number (a bad word 1, a good one 0); ``None``: no truth.

    A forecaster's rows are its next reading's (``step`` 1), each sensor's a ``series``; a
    defect model's images are lots of their own, all in one group (:data:`ALL`); a row whose
    keys lack ``group_key`` is in the group :data:`NOT_RECORDED`.

    Returns:
        Columns ``time`` (UTC), ``group``, ``lot``, ``window_end``, ``series``, ``scored_at``,
        ``decision``, ``low``, ``high``, ``flags`` (a list), ``truth``, ``actual`` and the
        predictions (``p_bad``, ``rul_cycles``...).
    """
    names = ("scored_at", "lot", "window_end", "key", "keys", "predictions", "interval_low",
             "interval_high", "decision", "flags")  # fmt: skip
    scores = (
        sa.select(*(SCORES.c[n] for n in names))
        .where(_of_bundle(bundle_id), SCORES.c.scored_at >= start, SCORES.c.scored_at < end)
        .subquery("s")
    )  # the range first, through the time index; then its truth
    columns: list[Any] = [scores.c[n] for n in names]
    source: Any = scores
    if target is not None:
        source, found = truth_join(scores, target)
        columns.append(found["truth"])
    query = (
        sa.select(*columns)
        .select_from(source)
        .order_by(scores.c.scored_at, scores.c.lot, scores.c.window_end)
    )
    with store.transaction() as conn:
        rows = conn.execute(query).mappings().all()
    wanted = None if groups is None else {str(g) for g in groups}
    records, values = [], []
    for r in rows:
        keys = json.loads(r["keys"])
        if keys.get("step") not in (None, 1):  # a forecaster's: only the next reading's
            continue
        lot = r["lot"] if r["lot"] is not None else str(json.loads(r["key"])[0])  # an image
        if group_key is not None:
            group = NOT_RECORDED if keys.get(group_key) is None else str(keys[group_key])
        else:
            group = ALL if r["lot"] is None else lot
        if wanted is not None and group not in wanted:
            continue
        truth = r.get("truth")
        records.append(
            {"group": group, "lot": lot, "window_end": r["window_end"],
             "series": keys.get("sensor"), "scored_at": r["scored_at"],
             "decision": r["decision"], "low": r["interval_low"], "high": r["interval_high"],
             "flags": json.loads(r["flags"]), "truth": truth, "actual": _truth_number(truth)}
        )  # fmt: skip
        values.append(json.loads(r["predictions"]))
    frame = pd.DataFrame(records, columns=["group", "lot", "window_end", "series", "scored_at",
                                           "decision", "low", "high", "flags", "truth",
                                           "actual"])  # fmt: skip
    predictions = pd.DataFrame(values, index=frame.index)
    frame = pd.concat([frame, predictions.drop(columns=frame.columns, errors="ignore")], axis=1)
    frame.insert(0, "time", _times(frame["window_end"], frame["scored_at"]))
    return frame


def trend_columns(frame: pd.DataFrame) -> list[str]:
    """The predictions a trend draws: the numeric ones, not their quantiles; of a
    classifier's class probabilities only the last class's (``p_bad`` of good/bad)."""
    fixed = {"time", "group", "lot", "window_end", "series", "scored_at", "decision", "low",
             "high", "flags", "truth", "actual", "step", "predicted"}  # fmt: skip
    numeric = [
        str(c)
        for c in frame.columns
        if c not in fixed and not _QUANTILE.search(str(c))
        and pd.api.types.is_numeric_dtype(frame[c])
    ]  # fmt: skip
    probabilities = [c for c in numeric if c.startswith("p_")]
    if len(probabilities) > 1:
        numeric = [c for c in numeric if c not in probabilities[:-1]]
    return numeric


def verdict(
    decision: str | None,
    values: Mapping[str, Any],
    flags: Sequence[str] = (),
    limits: Mapping[str, Limit] | None = None,
) -> tuple[str, str]:
    """A lot's verdict: ``(level, words)``, ``level`` one of :data:`LEVELS`.

    A limit crossed by a prediction (``rul_cycles`` below its alarm) is an ``alarm``; the
    model's call ``bad`` or ``defect`` a ``flag``; warnings about its input while scoring a
    ``check``; else ``ok`` (``none``: no decision and no limit to judge by).

    >>> verdict(None, {"rul_cycles": 22.0}, limits={"rul_cycles": Limit(alarm_below=30)})
    ('alarm', 'rul_cycles 22 is below the alarm limit 30')
    >>> verdict("good", {"p_bad": 0.1})
    ('ok', 'good')
    """
    limits = limits or {}
    for column, limit in limits.items():
        value = values.get(column)
        try:
            number = float(value) if value is not None else math.nan
        except (TypeError, ValueError):
            continue
        breach = limit.breach(number)
        if breach:  # worded with three digits where they still cross the limit
            return "alarm", f"{column} {limit.breach(float(f'{number:.3g}')) or breach}"
    if decision is not None and str(decision).lower() in _BAD:
        return "flag", f"flagged {decision}"
    if flags:
        return "check", "input checked: " + "; ".join(dict.fromkeys(map(str, flags)))
    if decision is not None:
        return "ok", str(decision)
    if any(c in values for c in limits):
        return "ok", "within its limits"
    return "none", "scored (no decision, no limit set)"


def latest_lots(
    frame: pd.DataFrame, n: int = 8, limits: Mapping[str, Limit] | None = None
) -> pd.DataFrame:
    """Per group of a :func:`trend` frame, its ``n`` latest lots (each lot's latest window),
    newest first, with ``level`` and ``verdict`` (:func:`verdict` against ``limits``)."""
    if frame.empty:
        return frame.assign(level=pd.Series(dtype=str), verdict=pd.Series(dtype=str))
    newest = frame.groupby(["group", "lot"])["time"].transform("max")
    last = frame[frame["time"] == newest]  # each lot's latest window, every sensor of it
    lots = last.drop_duplicates(["group", "lot"]).sort_values("time", ascending=False)
    last = last.merge(lots.groupby("group").head(n)[["group", "lot"]], on=["group", "lot"])
    columns = trend_columns(frame) + [c for c in (limits or {}) if c in frame.columns]
    judged = []
    for _, row in last.iterrows():
        values = {c: row[c] for c in dict.fromkeys(columns)}
        if row["series"] is not None and columns:  # a forecast: the sensor's own limits
            values[str(row["series"])] = row[columns[0]]
        judged.append(verdict(row["decision"], values, row["flags"], limits))
    out = last.assign(level=[j[0] for j in judged], verdict=[j[1] for j in judged])
    out = out.assign(_rank=out["level"].map(LEVELS.index)).sort_values(["_rank", "scored_at"])
    out = out.groupby(["group", "lot"], sort=False).head(1).drop(columns="_rank")  # the worst
    out = out.sort_values("time", ascending=False).groupby("group", sort=True).head(n)
    return out.sort_values(["group", "time"], ascending=[True, False]).reset_index(drop=True)
