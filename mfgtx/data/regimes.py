"""Operating regimes: sensors normalised per regime, fitted on training rows only.

Shape legend: ``R`` table rows, ``C`` raw columns of the windows (sensors and the regime
columns), ``S`` regime (setting) columns, ``D`` normalised sensors, ``K`` regimes.

A fleet run under several operating conditions (altitude and throttle of an engine, the
product grade of a line) has sensor levels that jump with the condition: a model reading
the raw levels mostly learns the condition. :class:`RegimePlan` says how a row's regime is
told (the job file's ``data.regimes``): by one column (``column: grade``, each distinct
value a regime: a name such as ``S355``, read as its stable code, see
:mod:`mfgtx.data.categories`) or by k-means on declared setting columns (``columns: [...]``,
``clusters: K``, a fixed seed). :meth:`Regimes.fit` fits it on the rows of the *training*
windows only: the settings' centre and scale, the cluster centroids (a fixed point of
k-means on those rows), and the mean and standard deviation of every other sensor within
each regime. :meth:`Regimes.apply` turns windows into what the model reads: each sensor
normalised with the statistics of its row's regime, followed by ``K`` one-hot regime
channels (``regime_0`` ...); the regime columns themselves are not model inputs.

Rows whose regime cannot be told (every setting missing, or a missing regime column) read
as missing. A regime column value never seen in training has no statistics: scoring lists
the lot in the errors file (:meth:`Regimes.unseen`) instead of guessing; during training,
validation and test rows of such a value read as missing. The record is plain numbers (no
pickle, no scikit-learn object) and :func:`mfgtx.split.audit` recomputes it from the
training rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from mfgtx.data.windows import Windows

__all__ = ["RegimePlan", "Regimes"]


@dataclass(frozen=True)
class RegimePlan:
    """How rows are assigned to operating regimes (``data.regimes`` of a job file).

    Args:
        column: a column whose distinct values are the regimes (a product grade, a recipe:
            names or numbers). Give either this or ``columns``.
        columns: setting columns clustered into ``clusters`` regimes by k-means.
        clusters: how many regimes k-means finds (with ``columns``).
        seed: the k-means seed (the same data and seed give the same regimes).

    Example:
        >>> RegimePlan(columns=("setting_1", "setting_2"), clusters=6).settings
        ('setting_1', 'setting_2')
        >>> RegimePlan(column="grade", clusters=3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: clusters: k-means needs columns (setting columns); a column regime ...
    """

    column: str | None = None
    columns: tuple[str, ...] = ()
    clusters: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        if (self.column is None) == (not self.columns):
            raise ValueError(
                "give exactly one of column (a regime column, e.g. column: grade) and columns "
                "(setting columns to cluster, with clusters: K)"
            )
        if self.column is not None and self.clusters is not None:
            raise ValueError(
                "clusters: k-means needs columns (setting columns); a column regime takes "
                f"every distinct value of {self.column!r} as a regime"
            )
        if self.columns:
            if self.clusters is None or self.clusters < 2:
                raise ValueError(f"clusters must be >= 2 with columns, found {self.clusters}")
            if len(set(self.columns)) != len(self.columns):
                raise ValueError(f"columns: a setting is listed twice in {list(self.columns)}")

    @property
    def settings(self) -> tuple[str, ...]:
        """The columns a regime is told from."""
        return (self.column,) if self.column is not None else self.columns

    @property
    def method(self) -> str:
        return "column" if self.column is not None else "kmeans"

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "columns": list(self.columns),
            "clusters": self.clusters,
            "seed": self.seed,
        }


def _mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and population std of ``values (r, d)``, NaN ignored; a column
    without values gives NaN, one without spread scale 1."""
    ok = ~np.isnan(values)
    n = ok.sum(axis=0)
    filled = np.where(ok, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / n
        var = (np.where(ok, values - mean, 0.0) ** 2).sum(axis=0) / n
    std = np.sqrt(var)
    std = np.where(np.isnan(std) | (std > 1e-12), std, 1.0)
    return mean, std


def _nearest(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid of each point ``(r, S)``, distance over the observed
    settings only; ``-1`` where no setting is observed."""
    ok = ~np.isnan(points)  # (r, S)
    diff = np.where(ok[:, None, :], points[:, None, :] - centroids[None, :, :], 0.0)  # (r, K, S)
    out = (diff**2).sum(axis=2).argmin(axis=1)
    return np.where(ok.any(axis=1), out, -1)


def _kmeans(points: np.ndarray, k: int, seed: int, n_init: int = 4) -> np.ndarray:
    """Lloyd's k-means with k-means++ starts; the centroids ``(K, S)`` of the best start,
    each the mean of the points nearest to it (a fixed point of the iteration)."""
    rng = np.random.default_rng(seed)
    best, best_inertia = None, np.inf
    for _ in range(n_init):
        centroids = points[[rng.integers(len(points))]]
        while len(centroids) < k:  # k-means++: far points are likelier starts
            d = ((points[:, None, :] - centroids[None]) ** 2).sum(axis=2).min(axis=1)
            if d.sum() <= 0:
                break
            centroids = np.vstack([centroids, points[rng.choice(len(points), p=d / d.sum())]])
        if len(centroids) < k:
            continue
        labels = np.full(len(points), -1)
        for _ in range(300):
            new = _nearest(points, centroids)
            if (new == labels).all():
                break
            labels = new
            centroids = np.stack(
                [
                    points[labels == j].mean(axis=0) if (labels == j).any() else centroids[j]
                    for j in range(k)
                ]
            )
        if len(set(labels.tolist())) < k:
            continue
        inertia = float(((points - centroids[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = centroids, inertia
    if best is None:
        raise ValueError(
            f"clusters: the training rows have fewer than {k} distinct operating points; "
            "lower clusters"
        )
    return best


@dataclass(frozen=True)
class Regimes:
    """Regimes and per-regime sensor statistics fitted on the training rows (see the module
    docstring); saved in a sensor bundle's input spec.

    Build it with :meth:`fit`. Attributes hold plain numbers: ``labels`` the regime values
    of a column regime (the codes of its names, :mod:`mfgtx.data.categories`; ``names``
    their names, empty for a record of a number column); ``setting_center``/``setting_scale``
    and ``centroids`` (in scaled setting units) of a clustered one; ``center``/``scale``
    ``(K, D)`` per regime and sensor.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> v = np.array([[1, 10.], [1, 12.], [2, 50.], [2, 54.], [2, 52.], [1, 11.]], np.float32)
        >>> t = np.zeros(3, "datetime64[ns]")
        >>> w = Windows(values=v, row_start=np.array([0, 2, 4]), lot=np.array(["A", "A", "B"]),
        ...             start=t, end=t, label_time=t, y=None, sensors=("grade", "temp"),
        ...             targets=(), window=2, stride=2, horizon=0)
        >>> r = Regimes.fit(w, [0, 1], RegimePlan(column="grade"))   # rows 0..3 only
        >>> r.labels, r.center, r.outputs
        ((1.0, 2.0), ((11.0,), (52.0,)), ('temp', 'regime_0', 'regime_1'))
        >>> r.apply(w).values[4:].tolist()      # row 4: grade 2, row 5: grade 1
        [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """

    VERSION: ClassVar[int] = 2  # 2: names of a column regime; 1 (numbers only) still reads

    plan: RegimePlan
    inputs: tuple[str, ...]
    center: tuple[tuple[float, ...], ...]
    scale: tuple[tuple[float, ...], ...]
    labels: tuple[float, ...] = ()
    setting_center: tuple[float, ...] = ()
    setting_scale: tuple[float, ...] = ()
    centroids: tuple[tuple[float, ...], ...] = ()
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        missing = [c for c in self.plan.settings if c not in self.inputs]
        if missing:
            raise ValueError(f"regime column(s) {missing} are not columns of {list(self.inputs)}")
        k, d = self.n_regimes, len(self.sensors)
        if k < 1 or len(self.scale) != k or any(len(r) != d for r in (*self.center, *self.scale)):
            raise ValueError(f"regimes: expected {k} x {d} centres and scales")
        if self.names and len(self.names) != len(self.labels):
            raise ValueError(f"regimes: {len(self.labels)} labels but {len(self.names)} names")
        clash = [f"regime_{j}" for j in range(k) if f"regime_{j}" in self.sensors]
        if clash:
            raise ValueError(f"sensor(s) {clash} clash with the regime channels' names")

    # ------------------------------------------------------------------ what it reads
    @property
    def settings(self) -> tuple[str, ...]:
        return self.plan.settings

    @property
    def sensors(self) -> tuple[str, ...]:
        """The sensors normalised per regime (the inputs but the regime columns)."""
        return tuple(c for c in self.inputs if c not in self.plan.settings)

    @property
    def n_regimes(self) -> int:
        return len(self.center)

    @property
    def outputs(self) -> tuple[str, ...]:
        """The channels the model reads: the normalised sensors, then one per regime."""
        return (*self.sensors, *(f"regime_{k}" for k in range(self.n_regimes)))

    def _positions(self, names: tuple[str, ...]) -> list[int]:
        return [self.inputs.index(c) for c in names]

    @property
    def known(self) -> list[str]:
        """The regimes in words, for messages: the names of a column regime (sorted), its
        values (a record of a number column), else ``regime_0`` ...."""
        if self.plan.column is None:
            return [f"regime_{k}" for k in range(self.n_regimes)]
        return sorted(self.names) or [f"{v:g}" for v in self.labels]

    @staticmethod
    def _names_of(windows: Windows, column: str, labels: tuple[float, ...]) -> tuple[str, ...]:
        """The names of the codes ``labels`` of ``column`` (empty: a number column)."""
        names = (windows.categories or {}).get(column)
        if not names:
            return ()
        return tuple(names[v] for v in labels)

    # ------------------------------------------------------------------ fitting
    @classmethod
    def fit(
        cls, windows: Windows, train_indices: Any, plan: RegimePlan, *, rows: Any = None
    ) -> Regimes:
        """Fit ``plan`` on the rows of ``windows[train_indices]`` (``rows``: these table rows
        instead, for tests of the audit).

        Raises:
            ValueError: a regime column is not a column of the windows, or the training rows
                hold fewer distinct operating points than ``clusters``.
        """
        inputs = tuple(windows.sensors)
        missing = [c for c in plan.settings if c not in inputs]
        if missing:
            raise ValueError(
                f"data.regimes: column(s) {missing} are not among the data's columns {list(inputs)}"
            )
        rows = windows.rows(train_indices) if rows is None else np.asarray(rows)
        if rows.size == 0:
            raise ValueError("cannot fit regimes on an empty training set")
        values = windows.values[rows].astype(np.float64)  # (r, C)
        settings = values[:, [inputs.index(c) for c in plan.settings]]  # (r, S)
        fields: dict[str, Any] = {}
        if plan.column is not None:
            col = settings[:, 0]
            labels = np.unique(col[~np.isnan(col)])
            if labels.size == 0:
                raise ValueError(f"data.regimes.column: {plan.column!r} has no value in training")
            fields["labels"] = tuple(float(v) for v in labels)
            fields["names"] = cls._names_of(windows, plan.column, fields["labels"])
        else:
            complete = settings[~np.isnan(settings).any(axis=1)]
            center, scale = _mean_std(complete)
            cents = _kmeans((complete - center) / scale, int(plan.clusters or 0), plan.seed)
            order = np.lexsort(cents.T[::-1])  # regimes numbered by their centroids, stably
            fields.update(
                setting_center=tuple(float(v) for v in center),
                setting_scale=tuple(float(v) for v in scale),
                centroids=tuple(tuple(float(v) for v in c) for c in cents[order]),
            )
        k = len(fields.get("labels") or fields["centroids"])
        d = len(inputs) - len(plan.settings)
        start = cls(plan, inputs, ((0.0,) * d,) * k, ((1.0,) * d,) * k, **fields)
        fitted = start.recomputed(windows, rows)
        center = np.asarray(fitted.center)
        if np.isnan(center).any():
            bad = fitted.sensors[int(np.flatnonzero(np.isnan(center).any(axis=0))[0])]
            raise ValueError(f"sensor {bad!r} has no observed value in the training rows")
        return fitted

    def recomputed(self, windows: Windows, rows: np.ndarray) -> Regimes:
        """This record with every fitted number recomputed from the table ``rows``: the
        regime values seen there (column regimes); the settings' mean and standard deviation
        and, for each centroid, the mean of the rows nearest to it (k-means's fixed point);
        each regime's sensor statistics over its rows (a sensor never observed in a regime
        takes the statistics of all ``rows``). :meth:`fit` ends with it, and the audit
        compares a record with it on the training rows: a record fitted on other rows
        differs. A regime without rows there gets NaN."""
        values = windows.values[np.asarray(rows)].astype(np.float64)  # (r, C)
        fields: dict[str, Any] = {}
        if self.plan.column is not None:
            col = values[:, self.inputs.index(self.plan.column)]
            fields["labels"] = tuple(float(v) for v in np.unique(col[~np.isnan(col)]))
            fields["names"] = self._names_of(windows, self.plan.column, fields["labels"])
        else:
            settings = values[:, self._positions(self.settings)]
            complete = settings[~np.isnan(settings).any(axis=1)]  # (r', S)
            center, scale = _mean_std(complete)
            scaled = (complete - center) / scale
            nearest = _nearest(scaled, np.asarray(self.centroids))
            cents = [
                scaled[nearest == j].mean(axis=0)
                if (nearest == j).any()
                else np.full(len(self.settings), np.nan)
                for j in range(self.n_regimes)
            ]
            fields.update(
                setting_center=tuple(float(v) for v in center),
                setting_scale=tuple(float(v) for v in scale),
                centroids=tuple(tuple(float(v) for v in c) for c in cents),
            )
        sensors = values[:, self._positions(self.sensors)]  # (r, D)
        regime = self.assign(values)  # (r,) by this record's own assignment
        overall, overall_scale = _mean_std(sensors)
        center_k, scale_k = [], []
        for j in range(self.n_regimes):
            c, s = _mean_std(sensors[regime == j])
            if not (regime == j).any():
                c = s = np.full(len(self.sensors), np.nan)
            else:
                gone = np.isnan(c)
                c, s = np.where(gone, overall, c), np.where(gone, overall_scale, s)
            center_k.append(tuple(float(v) for v in c))
            scale_k.append(tuple(float(v) for v in s))
        return replace(self, center=tuple(center_k), scale=tuple(scale_k), **fields)

    # ------------------------------------------------------------------ applying
    def assign(self, values: np.ndarray) -> np.ndarray:
        """The regime ``(R,)`` of each row of raw values ``(R, C)``: ``-1`` where it cannot be
        told (settings missing) or, for a column regime, the value was not seen in training."""
        settings = values[:, self._positions(self.settings)].astype(np.float64)  # (R, S)
        if self.plan.column is not None:
            labels = np.asarray(self.labels)
            col = settings[:, 0]
            pos = np.clip(np.searchsorted(labels, col), 0, len(labels) - 1)
            return np.where(labels[pos] == col, pos, -1)
        scaled = (settings - np.asarray(self.setting_center)) / np.asarray(self.setting_scale)
        return _nearest(scaled, np.asarray(self.centroids))

    def transform(self, values: np.ndarray) -> np.ndarray:
        """Raw values ``(R, C)`` -> the model's channels ``(R, D + K)`` (see :attr:`outputs`)."""
        if values.shape[-1] != len(self.inputs):
            raise ValueError(
                f"regimes were fitted on {len(self.inputs)} columns {list(self.inputs)}, the "
                f"input has {values.shape[-1]}"
            )
        regime = self.assign(values)  # (R,)
        known = regime >= 0
        r = np.where(known, regime, 0)
        center, scale = np.asarray(self.center)[r], np.asarray(self.scale)[r]  # (R, D)
        sensors = values[:, self._positions(self.sensors)].astype(np.float64)
        out = np.where(known[:, None], (sensors - center) / scale, np.nan)
        onehot = (regime[:, None] == np.arange(self.n_regimes)[None, :]).astype(np.float64)
        return np.concatenate([out, onehot], axis=1).astype(np.float32)

    def apply(self, windows: Windows) -> Windows:
        """``windows`` as the model reads them: the same windows over the transformed rows.

        Raises:
            ValueError: the windows' columns are not the ones the regimes were fitted on.
        """
        if tuple(windows.sensors) != self.inputs:
            raise ValueError(
                f"regimes were fitted on columns {list(self.inputs)}, the windows have "
                f"{list(windows.sensors)}"
            )
        return replace(windows, values=self.transform(windows.values), sensors=self.outputs)

    def unseen(self, windows: Windows) -> list[tuple[str, str, int]]:
        """``(lot, value, rows)`` for each lot whose regime column holds a value never seen
        in training: its first such value in words (its name) and how many rows hold one
        (always empty for clustered regimes)."""
        if self.plan.column is None:
            return []
        col = windows.values[:, self.inputs.index(self.plan.column)]
        regime = self.assign(windows.values)  # (R,)
        bad = ~np.isnan(col) & (regime < 0)
        names = (windows.categories or {}).get(self.plan.column) or {}
        if self.names and names:  # a new name whose code is a known one's: not that regime
            clash = [
                v for v, known in zip(self.labels, self.names, strict=True)
                if names.get(v, known) != known
            ]  # fmt: skip
            bad |= np.isin(col, clash)
        if not bad.any():
            return []
        out = []
        for lot in windows.lots:
            rows = windows.rows(np.flatnonzero(windows.lot == lot))
            hit = rows[bad[rows]]
            if hit.size:
                value = float(col[hit[0]])
                name = ((windows.categories or {}).get(self.plan.column) or {}).get(value)
                out.append((str(lot), name or f"{value:g}", int(hit.size)))
        return out

    # ------------------------------------------------------------------ saving
    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state (saved in the bundle's input spec)."""
        return {
            "version": self.VERSION,
            "plan": self.plan.to_dict(),
            "inputs": list(self.inputs),
            "center": [list(c) for c in self.center],
            "scale": [list(s) for s in self.scale],
            "labels": list(self.labels),
            "setting_center": list(self.setting_center),
            "setting_scale": list(self.setting_scale),
            "centroids": [list(c) for c in self.centroids],
            "names": list(self.names),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Regimes:
        """Rebuild from :meth:`to_dict`; raises ``ValueError`` on a bad state."""
        if state.get("version") not in (1, cls.VERSION):
            raise ValueError(
                f"regimes version {state.get('version')!r}, expected 1 to {cls.VERSION}"
            )
        plan = dict(state["plan"])
        nums = lambda v: tuple(float(x) for x in v)  # noqa: E731
        return cls(
            plan=RegimePlan(
                column=plan["column"],
                columns=tuple(plan["columns"]),
                clusters=plan["clusters"],
                seed=int(plan["seed"]),
            ),
            inputs=tuple(str(c) for c in state["inputs"]),
            center=tuple(nums(c) for c in state["center"]),
            scale=tuple(nums(s) for s in state["scale"]),
            labels=nums(state["labels"]),
            setting_center=nums(state["setting_center"]),
            setting_scale=nums(state["setting_scale"]),
            centroids=tuple(nums(c) for c in state["centroids"]),
            names=tuple(str(n) for n in state.get("names", ())),
        )
