"""How a kind splits its windows by lot and time: for one model (:func:`split_windows`), for
the members of an ensemble cross-fitted by lot (:func:`cross_fit`), or either as one record
(:func:`learning_split`); the training-only scaler and regimes are fitted on the training
windows and every split is audited (:func:`mfgtx.split.audit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data import RegimePlan, Regimes, SensorScaler, Windows
from mfgtx.split import AuditReport, SplitPlan, SplitSets, audit

__all__ = [
    "CrossFit",
    "Learning",
    "SplitWindows",
    "cross_fit",
    "learning_split",
    "split_windows",
    "target_values",
]


def target_values(windows: Windows) -> np.ndarray:
    """``windows.y``: the targets a model is trained and judged on.

    Raises:
        ValueError: the windows carry none (they were read without targets).
    """
    if windows.y is None:
        raise ValueError(
            "the windows carry no targets to train or judge a model on; name them in "
            "data.columns.targets"
        )
    return windows.y


@dataclass(frozen=True)
class SplitWindows:
    """Windows split by lot and time, with the training-only scaler and the audit.

    Attributes:
        windows: every window, as the model reads them (normalised per regime with
            ``regimes``).
        sets: the split (train / val / test / purged).
        scaler: fitted on the training windows only.
        report: the split audit (it passed, or :func:`split_windows` raised).
        val, test: the windows the model is judged on (every window, or each lot's last one
            with ``evaluate_on: last_per_lot``).
        regimes: the operating regimes fitted on the training rows, or ``None``.
    """

    windows: Windows
    sets: SplitSets
    scaler: SensorScaler
    report: AuditReport
    val: np.ndarray
    test: np.ndarray
    regimes: Regimes | None = None

    @property
    def counts(self) -> dict[str, int]:
        s = self.sets
        return {
            "train": len(s.train),
            "val": len(s.val),
            "test": len(self.test),
            "purged": len(s.purged),
        }


def split_windows(
    windows: Windows,
    plan: SplitPlan,
    *,
    strict: bool = True,
    regimes: RegimePlan | None = None,
) -> SplitWindows:
    """Split by lot and time, fit the regimes (if any) and the scaler on the training
    windows, audit the split.

    Raises:
        LeakageError: the audit failed (``strict``).
        ValueError: the sizes or gap leave a set empty.
    """
    (sets,) = plan.splitter().split_sets(windows)
    fitted, model_windows = _regimes(windows, sets.train, regimes)
    scaler = SensorScaler.fit(model_windows, sets.train)
    report = audit(windows, sets, scaler=scaler, regimes=fitted, strict=strict)
    last = plan.evaluate_on == "last_per_lot"
    val = windows.last_per_lot(sets.val) if last else np.asarray(sets.val)
    test = windows.last_per_lot(sets.test) if last else np.asarray(sets.test)
    return SplitWindows(model_windows, sets, scaler, report, val, test, fitted)


def _regimes(
    windows: Windows, train: Any, plan: RegimePlan | None
) -> tuple[Regimes | None, Windows]:
    """The regimes fitted on the rows of the ``train`` windows and the windows as the model
    reads them (``windows`` itself without a plan)."""
    if plan is None:
        return None, windows
    fitted = Regimes.fit(windows, train, plan)
    return fitted, fitted.apply(windows)


@dataclass(frozen=True)
class CrossFit:
    """The members' splits of an ensemble cross-fitted by lot.

    Attributes:
        windows: every window.
        train: the windows of every lot that is not a test lot (what the ensemble learns
            from; purged near the test lots as a single model's split would be).
        test: the test windows the ensemble is judged on.
        members: ``(train, val)`` of each member: its validation lots are one block of the
            non-test lots (blocks of consecutive lots in time), its training lots the rest.
        scaler: fitted on ``train`` (every member reads inputs scaled the same way).
        report: the audit of ``train`` against the test lots, with each member's lots
            checked apart too.
    """

    windows: Windows
    train: np.ndarray
    test: np.ndarray
    members: tuple[tuple[np.ndarray, np.ndarray], ...]
    scaler: SensorScaler
    report: AuditReport
    regimes: Regimes | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {
            "train": len(self.train),
            "val": len(self.train),  # every training window validates one member
            "test": len(self.test),
            "members": len(self.members),
        }


def cross_fit(
    windows: Windows,
    plan: SplitPlan,
    members: int,
    *,
    strict: bool = True,
    regimes: RegimePlan | None = None,
) -> CrossFit:
    """Test lots as ``plan`` says; the other lots cut into ``members`` blocks in time order,
    member ``k`` validating (early stopping, calibration) on block ``k`` and training on the
    others. The lots are taken as exchangeable (machines of a fleet, engines of a test cell):
    a member's validation lots may run before some of its training lots; the test lots come
    after every member's lots, and the audit proves it.

    Raises:
        LeakageError: the audit fails (``strict``).
        ValueError: fewer non-test lots than members.
    """
    from mfgtx.split import Check

    (sets,) = plan.splitter(validation=False).split_sets(windows)
    train = np.asarray(sets.train)
    lots = pd.unique(windows.lot[train])  # in time order: windows come lot by lot, in order
    first = {lot: windows.start[train][windows.lot[train] == lot].min() for lot in lots}
    lots = sorted(lots, key=lambda lot: (first[lot], lot))
    if len(lots) < members:
        raise ValueError(
            f"train.ensemble.members: {members} members need at least {members} lots outside "
            f"the test lots, found {len(lots)}"
        )
    fitted, model_windows = _regimes(windows, train, regimes)
    scaler = SensorScaler.fit(model_windows, train)
    report = audit(
        windows,
        {"train": train, "test": sets.test},
        gap=plan.gap,
        scaler=scaler,
        regimes=fitted,
    )
    splits, checks = [], []
    for k, block in enumerate(np.array_split(np.asarray(lots, dtype=object), members)):
        in_block = np.isin(windows.lot[train], block.astype(str))
        val, fit_on = train[in_block], train[~in_block]
        both = set(windows.lot[val]) & set(windows.lot[fit_on])
        checks.append(
            Check(
                f"member_{k}_lots_apart",
                not both and len(val) > 0 and len(fit_on) > 0,
                f"member {k} trains on {len(set(windows.lot[fit_on]))} lots and validates on "
                f"{len(set(windows.lot[val]))} others ({', '.join(block[:3].astype(str))}...)"
                if not both
                else f"member {k}'s training and validation share lots {sorted(both)[:5]}",
            )
        )
        splits.append((fit_on, val))
    report = AuditReport(
        (*report.checks, *checks),
        {**report.summary, "ensemble_members": members, "folds": "cross-fitted by lot"},
        not_checked=report.not_checked,
    )
    if strict and not report.passed:
        from mfgtx.split import LeakageError

        raise LeakageError(report)
    test = windows.last_per_lot(sets.test) if plan.evaluate_on == "last_per_lot" else sets.test
    return CrossFit(model_windows, train, np.asarray(test), tuple(splits), scaler, report, fitted)


@dataclass(frozen=True)
class Learning:
    """What a kind trains on, one model or an ensemble alike.

    Attributes:
        windows: the windows as the model reads them (per-regime normalised with regimes).
        splits: ``(fit_on, val)`` windows per member (one pair for a single model).
        learn: every training window (what the baselines are fitted on).
        test: the windows the model is judged on.
        scaler, report, counts, regimes: as :class:`SplitWindows` / :class:`CrossFit`.
    """

    windows: Windows
    splits: tuple[tuple[np.ndarray, np.ndarray], ...]
    learn: np.ndarray
    test: np.ndarray
    scaler: SensorScaler
    report: AuditReport
    counts: dict[str, int]
    regimes: Regimes | None = None


def learning_split(
    windows: Windows,
    plan: SplitPlan,
    members: int | None = None,
    *,
    regimes: RegimePlan | None = None,
) -> Learning:
    """:func:`cross_fit` for ``members`` models, else :func:`split_windows`, as one record."""
    if members:
        cf = cross_fit(windows, plan, members, regimes=regimes)
        return Learning(
            cf.windows, cf.members, cf.train, cf.test, cf.scaler, cf.report, cf.counts,
            cf.regimes,
        )  # fmt: skip
    prep = split_windows(windows, plan, regimes=regimes)
    train = np.asarray(prep.sets.train)
    return Learning(
        prep.windows, ((train, np.asarray(prep.sets.val)),), train, prep.test, prep.scaler,
        prep.report, prep.counts, prep.regimes,
    )  # fmt: skip
