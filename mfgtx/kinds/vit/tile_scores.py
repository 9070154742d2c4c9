"""Judging and scoring tiled photos for the ``vit`` kind: a photo is as bad as its worst tile.

Shape legend: ``M`` photos, ``N`` tiles, ``K`` classes.

* **Views** (``images.views``): a tile's P(defect) is the mean over its first ``views``
  flips and quarter turns (:func:`mfgtx.images.surface_views`, the views training draws;
  1 = the tile as cut). The threshold is chosen on the validation photos scored the same
  way. The baselines are fitted on tiles as cut, without flips, so they score tiles as cut:
  views they never learned lower HOG + logistic regression's photo AP (0.849 to 0.763 on
  the benchmark's external photos, ``benchmarks/inspection.py``).
* **Decision**: a photo's P(defect) is its worst tile's (:func:`mfgtx.images.image_scores`).
  The temperature is fitted on the validation tiles; the cost threshold is chosen on the
  validation photos' scores (the decision is made per photo), or on the validation tiles
  when the validation photos hold one class only.
* **Judging**: DefectViT beside the majority class and HOG + logistic regression, both
  fitted on the training tiles with their threshold chosen on the validation photos by the
  same cost rule, scored with the same max-over-tiles rule on the same test photos: AUROC,
  average precision, recall and false-alarm rate at the threshold, per photo (the bundle's
  report) and per tile.
* **Scoring** (:func:`score_photos`): a few photos at a time, tiles cut as they are read;
  one row per photo (its worst tile's columns and where it lies) or one per tile.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from mfgtx.images import AMBIGUOUS, TileSpec
from mfgtx.kinds.vit.tiles import PreparedTiles, tile_tensor

__all__ = [
    "MAX_BASELINE_TILES",
    "PhotoScores",
    "baseline_sample",
    "baseline_scorers",
    "image_threshold",
    "judge_tiles",
    "photo_scores",
    "score_photos",
]


#: Most training tiles HOG + logistic regression is fitted on (:func:`baseline_sample`):
#: 20,000 tiles' features are 52 MB, and a linear model on 324 features has long stopped
#: learning from more tiles by then; the model itself trains on every tile.
MAX_BASELINE_TILES = 20_000

# --------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class PhotoScores:
    """P(defect) of the tiles of some photos and of the photos (their worst tile)."""

    tile: np.ndarray  # (N,) every tile of the photos, ambiguous ones included
    rows: np.ndarray  # (N,) their rows in PreparedTiles.tiles
    image: np.ndarray  # (M,) worst tile of each photo, in the order given


def photo_scores(prep: PreparedTiles, photos: np.ndarray, tile_p: Any) -> PhotoScores:
    """Score every tile of ``photos`` with ``tile_p`` (uint8 tiles -> P(defect)) and each
    photo by its worst tile."""
    from mfgtx.images import image_scores

    photos = np.asarray(photos)
    rows = prep.tiles_of(photos)
    p = prep.apply(rows, lambda tiles: np.asarray(tile_p(tiles), dtype=np.float64))
    local = np.searchsorted(np.sort(photos), prep.tiles["photo"].to_numpy()[rows])
    order = np.argsort(photos)  # sorted position -> given position
    t = prep.tiles.iloc[rows]
    s = image_scores(p, local, top=t["top"].to_numpy(), left=t["left"].to_numpy(),
                     n_images=len(photos))  # fmt: skip
    image = np.empty(len(photos))
    image[order] = s.score
    return PhotoScores(p, rows, image)


def image_threshold(
    scores: np.ndarray, labels: np.ndarray, cost_ratio: float
) -> tuple[Any, str | None]:
    """The cost threshold on photo scores, or ``(None, why)`` when it cannot be chosen."""
    from mfgtx.calibration import choose_threshold

    if len(np.unique(labels)) < 2:
        return None, "the validation photos hold one class only"
    return choose_threshold(scores, labels, cost_missed_defect=cost_ratio), None


def _report(rows: list[Any], y: np.ndarray, preds: dict[str, np.ndarray], groups: np.ndarray,
            unit: str, drawn: str, n_train: int, notes: list[str],
            n_resamples: int | None) -> Any:  # fmt: skip
    """An :class:`EvaluationReport` on average precision, with a paired bootstrap of the
    model's lead over the best baseline drawn by ``groups``."""
    from mfgtx.baselines import Difference, EvaluationReport
    from mfgtx.metrics import average_precision, paired_bootstrap

    differences = []
    n_groups = int(np.unique(groups).size)
    base = [r for r in rows if r.kind == "baseline" and np.isfinite(r.metrics["average_precision"])]
    model = rows[0]
    if n_resamples is not None and n_groups < 2:
        notes.append(f"one of the {drawn}: no interval for the difference to the baselines")
    elif n_resamples is not None and base and np.isfinite(model.metrics["average_precision"]):
        import warnings

        best = max(base, key=lambda r: r.metrics["average_precision"])
        with warnings.catch_warnings():  # draws without a defect have no AP; left out
            warnings.simplefilter("ignore")
            d = paired_bootstrap(y, preds[model.name], preds[best.name], average_precision,
                                 groups=groups, n_resamples=n_resamples)  # fmt: skip
        differences.append(Difference(model.name, best.name, "average_precision", *d,
                                      n_groups=n_groups, unit=drawn))  # fmt: skip
    return EvaluationReport(
        "classification", n_test=len(y), rows=tuple(rows), primary="average_precision",
        n_train=n_train, unit=unit, notes=tuple(notes), differences=tuple(differences),
    )  # fmt: skip


def baseline_sample(labels: np.ndarray, limit: int = MAX_BASELINE_TILES) -> np.ndarray:
    """Positions of at most ``limit`` of the training tiles (``labels``) that the HOG
    baseline is fitted on: all when they are fewer, else every defect tile (at most half
    the limit) and good tiles drawn at random (seed 0) for the rest, in their order."""
    labels = np.asarray(labels)
    if len(labels) <= limit:
        return np.arange(len(labels))
    rng = np.random.default_rng(0)
    defect, good = np.flatnonzero(labels == 1), np.flatnonzero(labels != 1)
    if len(defect) > limit // 2:
        defect = rng.choice(defect, limit // 2, replace=False)
    good = rng.choice(good, min(len(good), limit - len(defect)), replace=False)
    return np.sort(np.concatenate([defect, good]))


def baseline_scorers(
    prep: PreparedTiles, *, cost_ratio: float, notes: list[str] | None = None, views: int = 1
) -> dict[str, tuple[Any, float]]:
    """``{name: (tile_p, threshold)}`` of the majority class and HOG + logistic regression:
    fitted on the training tiles (ambiguous ones left out; HOG + logistic regression on at
    most :data:`MAX_BASELINE_TILES` of them, :func:`baseline_sample`, their features taken a
    batch at a time), each threshold chosen on the validation photos' scores (worst tile) by
    the cost rule the model's was chosen by. They score a tile as cut; ``views`` > 1 scores
    it as the mean over its views instead (for benchmarks: the baselines never trained on
    flips)."""
    from mfgtx.baselines import HogLogistic, MajorityImageClass
    from mfgtx.images import surface_views

    fit_rows = prep.training_tiles()
    y_fit = fit_rows["label"].to_numpy()
    size = prep.image_size

    def grey(tiles: np.ndarray) -> torch.Tensor:
        return tile_tensor(tiles, size).mean(1)  # (n, s, s)

    majority = MajorityImageClass().fit(np.empty((len(y_fit), 0)), y_fit, 2)  # labels only
    hog = HogLogistic(cell=16 if size >= 64 else max(4, size // 4))
    sample = baseline_sample(y_fit)
    if len(sample) < len(y_fit) and notes is not None:
        notes.append(
            f"{hog.name} fitted on {len(sample)} of the {len(y_fit)} training tiles (every "
            "defect tile up to half of them, good tiles drawn at random)"
        )
    rows = fit_rows.iloc[sample]
    features = prep.apply(rows, lambda tiles: hog.features(grey(tiles).numpy()))
    hog.fit_features(features, y_fit[sample], 2)
    out: dict[str, tuple[Any, float]] = {}
    for fitted in (majority, hog):

        def p_of(tiles: np.ndarray, b: Any = fitted) -> np.ndarray:
            p = [b.predict_proba(np.ascontiguousarray(v.numpy()))[:, 1]
                 for v in surface_views(grey(tiles), views)]  # fmt: skip
            return np.mean(p, axis=0)

        val = photo_scores(prep, prep.val, p_of)
        choice, why = image_threshold(val.image, prep.image_labels[prep.val], cost_ratio)
        if choice is None and notes is not None:
            notes.append(f"{fitted.name}: no threshold ({why}); flagged above 0.5")
        out[fitted.name] = (p_of, 0.5 if choice is None else choice.threshold)
    return out


def judge_tiles(
    prep: PreparedTiles,
    tile_p: Any,
    threshold: float | None,
    *,
    cost_ratio: float,
    model_name: str = "DefectViT",
    n_resamples: int | None = 1000,
    views: int = 1,
) -> tuple[Any, Any, dict[str, float]]:
    """``(photo report, tile report, extra)`` of the model (``tile_p``: uint8 tiles ->
    P(defect) over its ``views``, its ``threshold``) beside :func:`baseline_scorers` (tiles
    as cut), all scored on the test photos with the same max-over-tiles rule."""
    from mfgtx.baselines import ReportRow
    from mfgtx.metrics import detection_metrics

    n_fit = len(prep.training_tiles())
    notes: list[str] = []
    if views > 1:
        turned = "as cut, flipped and turned a quarter" if views == 8 else "as cut and flipped"
        notes.append(f"The model scores every tile as the mean of {views} views ({turned}); "
                     "the baselines, fitted without flips, score tiles as cut")  # fmt: skip
    predictors: dict[str, tuple[Any, float | None]] = {model_name: (tile_p, threshold)}
    predictors.update(baseline_scorers(prep, cost_ratio=cost_ratio, notes=notes))
    y_img = prep.image_labels[prep.test]
    labelled = prep.tiles["label"].to_numpy() != AMBIGUOUS
    img_rows, tile_rows, img_p, tile_preds = [], [], {}, {}
    y_tile = None
    for name, (p_of, thr) in predictors.items():
        s = photo_scores(prep, prep.test, p_of)
        keep = labelled[s.rows]
        y_tile = prep.tiles["label"].to_numpy()[s.rows][keep]
        t = 0.5 if thr is None else float(thr)
        kind: Literal["model", "baseline"] = "model" if name == model_name else "baseline"
        img_rows.append(ReportRow(name, kind, detection_metrics(y_img, s.image, t, reasons=notes)))
        tile_rows.append(
            ReportRow(name, kind, detection_metrics(y_tile, s.tile[keep], t, reasons=notes))
        )
        img_p[name], tile_preds[name] = s.image, s.tile[keep]
        tile_photos = prep.tiles["photo"].to_numpy()[s.rows][keep]
    assert y_tile is not None
    drawn = "test lots" if prep.split.method == "lot_time" else "test photos"
    photo_report = _report(img_rows, y_img, img_p, prep.groups[prep.test], "photos", drawn,
                           len(prep.train), list(dict.fromkeys(notes)), n_resamples)  # fmt: skip
    # the tiles of one photo are drawn together (they share its lighting and its defects)
    tile_report = _report(tile_rows, y_tile, tile_preds, tile_photos, "tiles", "test photos",
                          n_fit, list(dict.fromkeys(notes)), n_resamples)  # fmt: skip
    # a tile figure that is undefined (no defect tile among the test photos) is left out, as
    # the report's own rows hold it: None, with the reason in its notes
    extra = {f"tile_{k}": round(float(v), 6) for k, v in tile_rows[0].metrics.items()
             if np.isfinite(v)}  # fmt: skip
    return photo_report, tile_report, extra


# --------------------------------------------------------------------------- scoring


def score_photos(
    predictor: Any, sources: Iterable[tuple[str, bytes]], *, batch_size: int, per_tile: bool
) -> tuple[pd.DataFrame | None, list[Any]]:
    """Rows of a group of photos ``(name, bytes)``: one per photo (its worst tile and where
    it is) or, with ``per_tile``, one per tile; and the photos that could not be tiled."""
    from mfgtx.images import ImageError, image_scores, iter_tiles

    spec = predictor.input_spec
    tiling = TileSpec(spec.tile_size, spec.tile_stride)
    sources = list(sources)
    bad: list[ImageError] = []
    photo, top, left, prob = [], [], [], []
    for batch in iter_tiles(sources, tiling, batch_size=batch_size, mode=spec.mode, errors=bad):
        x = tile_tensor(batch.tiles, spec.image_size)
        prob.append(predictor.probabilities(x, batch_size))
        photo.append(batch.image)
        top.append(batch.top)
        left.append(batch.left)
    if not photo:
        return None, bad
    img, t, lf = np.concatenate(photo), np.concatenate(top), np.concatenate(left)
    cols = predictor.columns_of(np.concatenate(prob))
    names = [sources[int(i)][0] for i in img]
    if per_tile:
        head = {"image": names, "top": t, "left": lf, "bundle_id": predictor.bundle_id}
        return pd.DataFrame({**head, **cols}), bad
    scored = np.unique(img)  # photo positions that were tiled, ascending
    local = np.searchsorted(scored, img)
    s = image_scores(cols["p_defect"], local, top=t, left=lf, n_images=len(scored))
    worst = s.tile
    head = {
        "image": [sources[int(i)][0] for i in scored],
        "bundle_id": predictor.bundle_id,
        "top": s.top,
        "left": s.left,
        "tiles": s.n_tiles,
    }
    rest = {k: (np.asarray(v)[worst] if not isinstance(v, list) else [v[int(w)] for w in worst])
            for k, v in cols.items()}  # fmt: skip
    return pd.DataFrame({**head, **rest}), bad
