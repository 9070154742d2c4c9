"""The ``vit`` kind: a :class:`~mfgtx.models.DefectViT` on labelled inspection images.

Shape legend: ``N`` images, ``C`` channels, ``S`` image side, ``K`` classes.

Job file: the ``images`` section (:class:`ImagesSection`, in :mod:`mfgtx.kinds._images`: where the
how they are read) and the ``vit`` section (:data:`VitSection`: the ViT's config minus image
size, channels, classes and class weights, which come from ``images`` and the data). Images
(a folder per class, a ``.zip`` of one, or a CSV manifest with lots and times) -> split (by
lot and time through :mod:`mfgtx.split` when the manifest has lots, stratified otherwise;
byte-identical files always in one set) -> fit, checkpoint chosen on the validation images ->
temperature and the flag threshold on P(defect) = 1 - P(good class) -> compared with the
majority class and HOG + logistic regression fitted on the training and validation images.

Output rows: one per image: ``image`` (its path relative to the scored folder, zip or
manifest; the key), ``bundle_id``, ``predicted`` (class index), ``predicted_class``, ``p_<k>``
per class, and with a good class ``p_defect`` and ``decision`` (1 = flagged).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import torch

from mfgtx._config import ConfigError, config_from, section_of
from mfgtx.artifacts import Bundle, BundleError
from mfgtx.calibration import Calibration, choose_threshold, class_probabilities, fit_calibration
from mfgtx.kinds._base import (
    FitSetup,
    Fitted,
    JobScores,
    JobSettings,
    Kind,
    Predictor,
    RowReader,
    RowScorer,
    Scored,
    Trained,
)
from mfgtx.kinds._images import ImagesSection, PreparedImages, image_records, prepare_images
from mfgtx.kinds._onnx import Vit
from mfgtx.kinds._onnx import member_config as graph_config
from mfgtx.kinds._registry import register_kind
from mfgtx.kinds._tiles import TILE_CLASSES, MasksSection, PreparedTiles, TilesSection
from mfgtx.models import DefectViT, ViTConfig
from mfgtx.split import SplitPlan
from mfgtx.train import TrainConfig, fit, predict

__all__ = [
    "VIT",
    "ImagesSection",
    "MasksSection",
    "PreparedImages",
    "PreparedTiles",
    "TilesSection",
    "VitKind",
    "VitPredictor",
    "VitSection",
    "VitSpec",
    "image_records",
    "prepare_images",
]

log = logging.getLogger("mfgtx.kinds")

#: Normalisation of the model input: ``(x - MEAN) / STD`` for pixels in [0, 1].
MEAN, STD = 0.5, 0.5


VitSection = section_of(
    ViTConfig,
    "VitSection",
    derived=("image_size", "in_chans", "num_classes", "class_weights"),
    stand_in=lambda s: {
        "image_size": s.patch_size * 8,
        "in_chans": 1,
        "num_classes": 2,
        "class_weights": None,
        "min_defect_px": None,  # checked with the real image size when training
    },
    defaults={
        "patch_size": 8,
        "stem": "conv",
        "d_model": 64,
        "n_heads": 4,
        "n_layers": 4,
        "d_ff": 128,
        "dropout": 0.1,
    },
    module=__name__,
    doc="""The ``vit`` section of a ViT job: every field of :class:`~mfgtx.models.ViTConfig`
    but ``image_size``, ``in_chans``, ``num_classes`` and ``class_weights``, which come from
    the ``images`` section and the data. ``min_defect_px``/``source_size`` switch on the
    small-defect guard; ``strict_defect_size`` turns its warning into an error.""",
)


@dataclass(frozen=True)
class VitSpec:
    """What a defect ViT reads, and how: saved in its bundle (``input_spec``: version 2, or 3
    with ``views``).

    Attributes:
        image_size, mode, min_size: how every image (or tile) is read and resized.
        mean, std: the normalisation of pixels in [0, 1].
        class_names: class index -> name.
        good_class: the defect-free class's name (``p_defect`` = 1 - its probability).
        tile_size, tile_stride: full-size photos are cut into tiles of this side, this far
            apart (``None``: whole images, as every version-1 spec).
        views: an image's (or tile's) probabilities are the mean over this many of its
            views (:func:`mfgtx.images.surface_views`; 1 in bundles saved before views).
    """

    VERSION: ClassVar[int] = 3
    task: ClassVar[str] = "classification"

    image_size: int
    mode: Literal["L", "RGB"]
    min_size: int
    mean: float
    std: float
    class_names: tuple[str, ...]
    good_class: str | None
    tile_size: int | None = None
    tile_stride: int | None = None
    views: int = 1

    @property
    def tiled(self) -> bool:
        return self.tile_size is not None

    def to_dict(self) -> dict[str, Any]:
        """Version 2 when the bundle scores one view (older mfgtx reads it the same way),
        else version 3 with ``views`` (older mfgtx refuses it instead of scoring one view)."""
        state = {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}
        if self.views == 1:
            del state["views"]
        return {"kind": "vit", "version": 2 if self.views == 1 else self.VERSION, **state}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> VitSpec:
        from mfgtx.images import VIEWS

        # version 1: whole images only; 2: and tiles; 3: and views
        if state.get("version") not in (1, 2, cls.VERSION):
            raise ValueError(
                f"input_spec version {state.get('version')!r}, expected 1 to {cls.VERSION}"
            )
        fields = {k: v for k, v in state.items() if k not in ("kind", "version")}
        views = fields.get("views", 1)
        if type(views) is not int or views not in VIEWS:
            raise ValueError(f"input_spec views {views!r}, expected one of {list(VIEWS)}")
        return cls(**{**fields, "class_names": tuple(fields["class_names"])})


# --------------------------------------------------------------------------- predictor


@dataclass(frozen=True)
class VitExplanation:
    """Attention maps of one image (non-causal diagnostics) and their deletion test.

    Attributes:
        maps: :class:`~mfgtx.explain.AttentionMaps` (predictions included).
        deletion: :class:`~mfgtx.explain.DeletionResult`, or ``None``.
        image: the image as the model read it ``(S, S)`` grey in [0, 1].
        row: the image's output row (the columns ``mfgtx score`` writes).

    With ``input_spec.views`` above 1 the maps and the deletion test read the image (or the
    worst tile) as read, one view, while ``row`` is the mean over the views, as scored.
    """

    maps: Any
    deletion: Any
    image: torch.Tensor
    row: dict[str, Any]


@dataclass(frozen=True)
class FittedTiles(Fitted):
    """A tiled ViT's :class:`~mfgtx.kinds.Fitted`: ``report`` is per photo, ``tile_report``
    the same comparison per tile."""

    tile_report: Any = None


class VitPredictor(Predictor):
    """The :class:`~mfgtx.kinds.Predictor` of a DefectViT bundle (see the module docstring)."""

    keys = ("image",)

    def tile_p(self, tiles: np.ndarray, batch_size: int = 256) -> np.ndarray:
        """``(N,)`` P(defect) of uint8 tiles ``(N, S, S[, C])`` of a tiled bundle (the mean
        over its views, as :meth:`probabilities`)."""
        from mfgtx.kinds._tiles import tile_tensor

        size, out = self.input_spec.image_size, [np.zeros(0)]
        for a in range(0, len(tiles), batch_size):
            x = tile_tensor(tiles[a : a + batch_size], size)
            out.append(self.probabilities(x, batch_size)[:, 1].astype(np.float64))
        return np.concatenate(out)

    def probabilities(self, images: torch.Tensor, batch_size: int = 64) -> np.ndarray:
        """``(N, K)`` calibrated class probabilities of images (or tiles) ``(N, C, s, s)`` in
        [0, 1]: the mean over the bundle's ``views`` views of each, a batch and a view at a
        time."""
        from mfgtx.images import surface_view

        n, cal, out = self.input_spec.views, self.calibration, []
        for a in range(0, len(images), batch_size):
            x = images[a : a + batch_size]
            p = sum(class_probabilities(self.logits(surface_view(x, k), batch_size), cal)
                    for k in range(n))  # fmt: skip
            out.append(p / n)
        k = self.model.config.num_classes
        return np.concatenate(out) if out else np.zeros((0, k))

    def logits(self, images: torch.Tensor, batch_size: int = 64) -> np.ndarray:
        """Logits for images ``(N, C, S, S)`` in [0, 1], normalised as in training."""
        spec, out = self.input_spec, []
        self.model.eval()
        with torch.no_grad():
            for a in range(0, len(images), batch_size):
                x = (images[a : a + batch_size] - spec.mean) / spec.std
                out.append(self.model(x).float().numpy())
        k = self.model.config.num_classes
        return np.concatenate(out) if out else np.zeros((0, k), np.float32)

    def load(
        self, sources: Iterable[tuple[str, bytes]]
    ) -> tuple[torch.Tensor, list[int], list[Any]]:
        """``(images, kept positions, errors)`` read and resized exactly as in training, an
        image at a time (``sources`` may be a generator)."""
        from mfgtx.images import load_images

        spec = self.input_spec
        return load_images(sources, spec.image_size, mode=spec.mode, min_size=spec.min_size)

    def columns_of(self, prob: np.ndarray) -> dict[str, Any]:
        """The output columns (without ``image`` and ``bundle_id``) of class probabilities
        ``prob`` ``(N, K)`` (:meth:`probabilities`): ``predicted``, ``predicted_class``,
        ``p_<k>`` and, where it is defined, ``p_defect`` and, with a threshold, ``decision``.
        A tiled bundle's tiles always get ``p_defect`` (P(class 1)), as :meth:`tile_p`."""
        spec, cal = self.input_spec, self.calibration
        pred = prob.argmax(1)
        cols: dict[str, Any] = {
            "predicted": pred.astype(np.int64),
            "predicted_class": [spec.class_names[int(k)] for k in pred],
        }
        for k in range(prob.shape[1]):
            cols[f"p_{k}"] = prob[:, k].astype(np.float64)
        if spec.tiled:  # good and defect: P(defect) as tile_p reads it, calibrated or not
            cols["p_defect"] = prob[:, 1].astype(np.float64)
            if cal is not None and cal.threshold is not None:
                cols["decision"] = (cols["p_defect"] > cal.threshold.threshold).astype(np.int64)
        elif cal is not None and cal.good_class is not None:
            cols["p_defect"] = cal.defect_of(prob).astype(np.float64)
            if cal.threshold is not None:
                cols["decision"] = cal.decide_of(prob).astype(np.int64)
        return cols

    @property
    def tile_report(self) -> Any:
        """A tiled bundle's per-tile comparison with the baselines (``None`` otherwise)."""
        from mfgtx.baselines import EvaluationReport

        state = (self.bundle.manifest.get("metrics") or {}).get("tiles")
        return EvaluationReport.from_dict(state) if state else None

    def score(
        self,
        data: str | Path | Iterable[tuple[str, bytes]],
        *,
        batch_size: int = 256,
        per_tile: bool = False,
    ) -> Scored:
        """Output rows and errors for ``data``: a folder, a ``.zip`` or a CSV manifest of
        images, or ``(name, bytes)`` pairs. A file that cannot be used (unreadable, corrupt,
        truncated, too large, 16-bit, palette, alpha, too small, listed twice) is an error
        row; the others are scored.

        A tiled bundle writes one row per photo: ``image``, ``bundle_id``, ``top`` and
        ``left`` of its worst tile, ``tiles`` (how many were scored), that tile's
        ``predicted``, ``predicted_class``, ``p_<k>``, ``p_defect`` (the photo's score) and
        ``decision``; with ``per_tile`` one row per tile instead (keys ``image``, ``top``,
        ``left``)."""
        if per_tile and not self.input_spec.tiled:
            raise ValueError("per_tile: this bundle reads whole images, not tiles")
        parts: list[pd.DataFrame] = []
        errors: list[dict[str, object]] = []
        # a tiled bundle reads a few photos at a time and scores batch_size tiles a pass
        group = 8 if self.input_spec.tiled else batch_size
        for batch in _batches(data, group, errors):
            names: list[str] = []  # of the files read, in the order read
            sources = _each_read(batch, errors, names)  # a file read when it is reached
            if self.input_spec.tiled:
                from mfgtx.kinds._tile_scores import score_photos

                rows, bad_photos = score_photos(
                    self, list(sources), batch_size=batch_size, per_tile=per_tile
                )
                errors += [_error_of(e.source, e.reason) for e in bad_photos]
                if rows is not None:
                    parts.append(rows)
                continue
            images, kept, bad = self.load(sources)  # one full-size image in memory at a time
            errors += [_error_of(e.source, e.reason) for e in bad]
            if not kept:
                continue
            cols = self.columns_of(self.probabilities(images, len(images)))
            parts.append(
                pd.DataFrame(
                    {"image": [names[i] for i in kept], "bundle_id": self.bundle_id, **cols}
                )
            )
        rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["image"])
        n = rows["image"].nunique() if len(rows) else 0
        return Scored(rows, errors, lots=n, windows=len(rows))

    def explain(
        self, data: tuple[str, bytes], *, which: str = "rollout", deletion: bool = True
    ) -> VitExplanation:
        """Attention maps of the image ``(name, bytes)`` and the deletion test beside them.

        Raises:
            DataError: the image cannot be used (the reason of the image reader).
        """
        from mfgtx.data import DataError
        from mfgtx.explain import attention_maps, deletion_test

        spec = self.input_spec
        if spec.tiled:
            images, row = self._worst_tile(data)
        else:
            images, _, errors = self.load([data])
            if errors:
                raise DataError(f"{data[0]}: {errors[0].reason}")
        x = (images - spec.mean) / spec.std  # (1, C, S, S)
        maps = attention_maps(self.model, x)
        if not spec.tiled:
            cols = self.columns_of(self.probabilities(images))  # over the views, as scored
            row = {"image": data[0], **{k: v[0] for k, v in cols.items()}}
        check = None
        if deletion:
            check = deletion_test(self.model, x, maps, which=which, fraction=0.1, n_random=5)
        return VitExplanation(maps, check, images[0].mean(0), row)

    def _worst_tile(self, data: tuple[str, bytes]) -> tuple[torch.Tensor, dict[str, Any]]:
        """The worst tile of a photo ``(1, C, S, S)`` and the photo's output row."""
        from mfgtx.data import DataError
        from mfgtx.images import TileSpec, cut_tiles, read_image
        from mfgtx.kinds._tile_scores import score_photos
        from mfgtx.kinds._tiles import tile_tensor

        spec = self.input_spec
        rows, bad = score_photos(self, [data], batch_size=256, per_tile=False)
        if rows is None:
            raise DataError(f"{data[0]}: {bad[0].reason}")
        row = rows.iloc[0].to_dict()
        photo = read_image(data, mode=spec.mode, min_size=1)
        tiles, pos = cut_tiles(photo, TileSpec(spec.tile_size, spec.tile_stride), name=data[0])
        k = int(np.flatnonzero((pos[:, 0] == row["top"]) & (pos[:, 1] == row["left"]))[0])
        return tile_tensor(tiles[k : k + 1], spec.image_size), row


def _over_views(calibration: Calibration, p_defect: np.ndarray, defect: np.ndarray) -> Calibration:
    """``calibration`` with its cost threshold chosen again on validation P(defect) taken as
    scoring takes it, over the views (its temperature, fitted on one view, kept)."""
    assert calibration.threshold is not None
    cost = calibration.threshold.cost_missed_defect
    choice = choose_threshold(p_defect, defect.astype(int), cost_missed_defect=cost)
    return Calibration(calibration.temperature, choice, good_class=calibration.good_class)


def _read(key: str, where: Any) -> tuple[str, bytes]:
    from mfgtx.images import read_listed

    if isinstance(where, bytes | bytearray):
        return key, bytes(where)
    return read_listed(key, where)


def _each_read(
    batch: list[tuple[str, Any]], errors: list[dict[str, object]], names: list[str]
) -> Iterator[tuple[str, bytes]]:
    """``(key, bytes)`` of each file of ``batch``, read when the consumer reaches it (its
    key appended to ``names``); a file that cannot be read is an error row instead."""
    from mfgtx.images import ImageError

    for key, where in batch:
        try:
            source = _read(key, where)
        except ImageError as e:
            errors.append(_error_of(e.source, e.reason))
            continue
        names.append(source[0])
        yield source


def _listed(data: str | Path | Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, Any]]:
    from mfgtx.data import DataError
    from mfgtx.images import iter_image_files

    if isinstance(data, str | Path):
        try:
            yield from iter_image_files(data)
        except ValueError as e:
            raise DataError(str(e)) from e
        return
    yield from data


def _batches(
    data: str | Path | Iterable[tuple[str, bytes]], size: int, errors: list[dict[str, object]]
) -> Iterator[list[tuple[str, Any]]]:
    """Batches of ``(key, where)``; a key listed again (a repeated manifest row, a zip with a
    member twice) goes to ``errors`` and is scored once."""
    batch: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for item in _listed(data):
        if item[0] in seen:
            errors.append(_error_of(item[0], "listed twice; scored once"))
            continue
        seen.add(item[0])
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _error_of(file: str | None, reason: str) -> dict[str, object]:
    return {"lot": None, "file": file, "line": None, "column": None, "reason": reason}


# --------------------------------------------------------------------------- kind


class VitKind(Kind[Any, VitSpec, "PreparedImages | PreparedTiles"]):
    """The ``vit`` kind (see the module docstring)."""

    name = "vit"
    model_name = "mfgtx.DefectViT"
    model_class = DefectViT
    section_key = "vit"
    Section = VitSection
    job_sections = ("images", "vit")

    # ------------------------------------------------------------------ the job seam

    def check_train(self, job: JobSettings) -> None:
        job.require("images")
        if job.train.ensemble is not None:
            raise ConfigError(f"{job.source_file}: train.ensemble: is for sensor and forecast jobs")

    def read(self, job: JobSettings, rows: RowReader) -> PreparedImages | PreparedTiles:
        job.require("images")
        try:
            return prepare_images(job.images, job.split, seed=job.train.seed)
        except ValueError as e:
            from mfgtx.data import DataError

            if isinstance(e, DataError | ConfigError):
                raise
            raise ConfigError(f"{job.source_file}: {e}") from e

    def fingerprint(
        self, job: JobSettings, data: PreparedImages | PreparedTiles
    ) -> tuple[Any, ...]:
        """The files (not their pixels in memory), their labels and the training set."""
        seen = np.concatenate([data.train, data.val])
        files = [data.hashes[int(i)] for i in seen]
        if isinstance(data, PreparedTiles):  # photos: their files, tile labels and the split
            return (*files, data.tiles["label"].to_numpy()[data.tiles_of(seen)], data.train)
        return (*files, data.labels[seen], data.train)

    def writes_left_out(self, job: JobSettings) -> bool:
        return job.images is not None and job.images.tiles is not None

    def left_out(
        self, job: JobSettings, data: PreparedImages | PreparedTiles
    ) -> list[dict[str, Any]] | None:
        return data.errors if isinstance(data, PreparedTiles) else None

    def release(self, data: PreparedImages | PreparedTiles) -> None:
        data.close()  # the decoded photos' scratch file

    def train(
        self, data: PreparedImages | PreparedTiles, job: JobSettings, setup: FitSetup
    ) -> Fitted:
        return self.fit(
            data,
            images=job.images,
            section=self.section(job),
            plan=job.split,
            train=setup.train,
            cost_ratio=job.calibration.cost_ratio,
            run_key=setup.run_key,
            on_step=setup.on_step,
            judge=setup.judge,
        )

    def audit(
        self, job: JobSettings, data: PreparedImages | PreparedTiles
    ) -> tuple[dict[str, Any], Any]:
        data.close()  # the audit reads the split, not the pixels
        report = data.audit_report()
        summary = {
            "command": "audit",
            "passed": report.passed,
            "failed": list(report.failed),
            "method": data.split.method,
            "images": data.counts,
        }
        return summary, report

    def evaluate(
        self, predictor: Any, job: JobSettings, data: PreparedImages | PreparedTiles
    ) -> tuple[Any, dict[str, float], bool]:
        spec = predictor.input_spec
        asked = (job.images.image_size, job.images.mode)
        if asked != (spec.image_size, spec.mode):
            raise ConfigError(
                f"{job.source_file}: images: the bundle reads {spec.image_size}-px "
                f"{spec.mode} images; the job asks for {asked[0]}-px {asked[1]}"
            )
        if tuple(data.names) != tuple(spec.class_names):
            raise ConfigError(
                f"{job.source_file}: images.path: classes {data.names} differ from the "
                f"bundle's {list(spec.class_names)}"
            )
        report, extra = self.judge(predictor, data, model_name="bundle")
        return report, extra, data.audit_report().passed

    def check_external(self, job: JobSettings) -> None:
        raise ConfigError(
            f"{job.source_file}: evaluate: an external test set is read as sensor rows; "
            "for an image bundle point images.path at the labelled test images instead"
        )

    def bench(
        self, predictor: Any, job: JobSettings, rows: RowReader, *, batch: int, repeats: int
    ) -> dict[str, Any]:
        import time

        if predictor.input_spec.tiled:
            return _bench_photos(job, predictor, batch, repeats)
        job.require("images")
        images, _, _ = predictor.load(image_records(job.images).read_bytes())
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            predictor.probabilities(images, batch)
            best = min(best, time.perf_counter() - t0)
        return {
            "command": "bench",
            "bundle_id": predictor.bundle_id,
            "images": len(images),
            "image_size": predictor.input_spec.image_size,
            "views": predictor.input_spec.views,
            "batch_size": batch,
            "threads": torch.get_num_threads(),
            "seconds": round(best, 4),
            "images_per_s": round(len(images) / best, 1),
        }

    def score_source(self, job: JobSettings) -> tuple[Any, Any]:
        source = job.score.images or (job.images.path if job.images is not None else None)
        if source is None:
            raise ConfigError(f"{job.source_file}: score.images: name the images to score")
        return source, None

    def score(self, predictor: Any, job: JobSettings, source: Any, rows: RowScorer) -> JobScores:
        sc = job.score
        if sc.per_tile and not predictor.input_spec.tiled:
            raise ConfigError(
                f"{job.source_file}: score.per_tile: the bundle reads whole images, not "
                "tiles; nothing was written"
            )
        options = {"per_tile": True} if sc.per_tile else {}
        scored = predictor.score(source, batch_size=sc.batch_size, **options)
        for e in scored.errors:
            log.warning("image not scored: %s: %s", e["file"], e["reason"])
        keys = ("image", "top", "left") if sc.per_tile else predictor.keys
        return JobScores(scored.rows, scored.errors, keys, "images", lots=scored.lots)

    def onnx_signature(self, predictor: Any) -> tuple[tuple[str, ...], tuple[str, ...], Any]:
        return ("images",), ("logits",), Vit(predictor.model)

    def onnx_inputs(
        self, predictor: Any, data: Any, idx: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        spec = predictor.input_spec
        images = torch.as_tensor(data)
        return {"images": ((images - spec.mean) / spec.std).float().numpy()}

    def onnx_example(self, predictor: Any, names: tuple[str, ...]) -> dict[str, Any]:
        c = graph_config(predictor.model)
        g = torch.Generator().manual_seed(0)
        s = predictor.input_spec.image_size
        return {"images": torch.randn(2, c.in_chans, s, s, generator=g)}

    def onnx_data(self, predictor: Any, job: JobSettings, rows: RowReader) -> tuple[Any, str]:
        job.require("images")
        images, _, _ = predictor.load(image_records(job.images).read_bytes())
        return self.onnx_inputs(predictor, images), "images"

    # ------------------------------------------------------------------ fitting

    def fit(
        self,
        prep: PreparedImages,
        *,
        images: ImagesSection,
        section: Any,
        plan: SplitPlan,
        train: TrainConfig,
        cost_ratio: float | None = None,
        run_key: dict[str, Any] | None = None,
        on_step: Any = None,
        judge: bool = True,
    ) -> Fitted:
        """Train the ViT on ``prep``'s training images (checkpoint on its validation
        images), calibrate, and compare it with the image baselines on its test images.

        Raises:
            LeakageError: the split fails its audit.
            ValueError: settings that do not fit the data (naming them).
        """
        from mfgtx.images import ImageDataset, SurfaceAugment, class_weights
        from mfgtx.split import LeakageError

        audit_report = prep.audit_report()
        if not audit_report.passed:
            raise LeakageError(audit_report)
        if isinstance(prep, PreparedTiles):
            return self._fit_tiles(
                prep, audit_report, images=images, section=section, plan=plan, train=train,
                cost_ratio=cost_ratio, run_key=run_key, on_step=on_step, judge=judge,
            )  # fmt: skip
        names, labels = prep.names, prep.labels
        try:
            config = config_from(
                ViTConfig,
                section,
                image_size=images.image_size,
                in_chans=1 if images.mode == "L" else 3,
                num_classes=len(names),
                class_weights=class_weights(labels[prep.train], len(names)),
            )
        except ValueError as e:  # settings that do not fit the data, e.g. patch sizes
            raise ValueError(f"{self.section_key}: {e}") from e
        augment = SurfaceAugment(rot90=images.rot90) if images.augment else None

        def data(idx: np.ndarray, aug: Any = None) -> Any:
            return ImageDataset(prep.images[idx], labels[idx], augment=aug, mean=MEAN, std=STD)

        torch.manual_seed(train.seed)
        model = DefectViT(config)
        fitted = fit(
            model, data(prep.train, augment), data(prep.val), train, on_step=on_step,
            run_key=run_key,
        )  # fmt: skip
        spec = VitSpec(
            image_size=images.image_size,
            mode=images.mode,
            min_size=images.min_size,
            mean=MEAN,
            std=STD,
            class_names=tuple(names),
            good_class=images.good_class,
            views=images.views,
        )
        split_info = {
            **plan.to_dict(),
            "method": prep.split.method,
            "seed": train.seed,
            "duplicate_files_across_sets": prep.duplicates_across,
        }
        result = Fitted(
            model=model,
            spec=spec,
            fit=fitted,
            report=None,
            audit=audit_report,
            split=split_info,
            counts=prep.counts,
            train_config=train,
        )
        if not judge:
            return result
        good = None if images.good_class is None else names.index(images.good_class)
        val_logits = predict(model, data(prep.val)).numpy()
        calibration = fit_calibration(
            val_logits, labels[prep.val], cost_ratio=cost_ratio if good is not None else None,
            good_class=good,
        )  # fmt: skip
        predictor = VitPredictor(self, Trained(model, calibration), spec)
        if images.views > 1 and calibration is not None and calibration.threshold is not None:
            p = calibration.defect_of(predictor.probabilities(prep.images[prep.val]))
            calibration = _over_views(calibration, p, labels[prep.val] != good)
            predictor = VitPredictor(self, Trained(model, calibration), spec)
        report, extra = self.judge(predictor, prep)
        return replace(result, report=report, calibration=calibration, extra_metrics=extra)

    def _fit_tiles(
        self,
        prep: PreparedTiles,
        audit_report: Any,
        *,
        images: ImagesSection,
        section: Any,
        plan: SplitPlan,
        train: TrainConfig,
        cost_ratio: float | None,
        run_key: dict[str, Any] | None,
        on_step: Any,
        judge: bool,
    ) -> Fitted:
        """:meth:`fit` on tiles (see :mod:`mfgtx.kinds._tiles`): balanced draws (or class
        weights) when a class is rare, training tiles ``train_stride`` apart, temperature on
        the validation tiles, threshold on the validation photos."""
        from mfgtx.images import SurfaceAugment, plan_balancing
        from mfgtx.kinds._tile_scores import image_threshold, photo_scores
        from mfgtx.kinds._tiles import tile_tensor

        tiles = images.tiles
        assert tiles is not None
        train_rows = prep.training_tiles()
        train_labels = train_rows["label"].to_numpy()
        val_rows = prep.tiles_of(prep.val, labelled=True)
        labels = prep.tiles["label"].to_numpy()
        balancing = plan_balancing(train_labels, 2, method=tiles.balance)
        if balancing.method != "none":
            log.info(
                "rare class(es) %s: %s of %d training tiles; %s",
                [prep.names[k] for k in balancing.rare],
                [balancing.counts[k] for k in balancing.rare],
                len(train_rows),
                "every epoch draws each class equally often"
                if balancing.method == "sampler"
                else f"the loss weighs classes by inverse frequency "
                f"{[round(w, 4) for w in balancing.class_weights or ()]}",
            )
        draw = balancing.sample_weights(train_labels) if balancing.method == "sampler" else None
        try:
            config = config_from(
                ViTConfig, section, image_size=images.image_size,
                in_chans=1 if images.mode == "L" else 3, num_classes=2,
                class_weights=balancing.class_weights,
            )  # fmt: skip
        except ValueError as e:
            raise ValueError(f"{self.section_key}: {e}") from e
        # no random crop: a pit at a tile's edge would be cut off and keep its label
        augment = (
            SurfaceAugment(rot90=images.rot90, crop_scale=(1.0, 1.0)) if images.augment else None
        )
        torch.manual_seed(train.seed)
        model = DefectViT(config)
        fitted = fit(
            model, prep.dataset(train_rows, augment), prep.dataset(val_rows), train,
            on_step=on_step, run_key=run_key, sample_weights=draw,
        )  # fmt: skip
        spec = VitSpec(
            image_size=images.image_size, mode=images.mode, min_size=images.min_size,
            mean=MEAN, std=STD, class_names=TILE_CLASSES, good_class=TILE_CLASSES[0],
            tile_size=tiles.size, tile_stride=tiles.stride, views=images.views,
        )  # fmt: skip
        split_info = {
            **plan.to_dict(),
            "method": prep.split.method,
            "seed": train.seed,
            "duplicate_files_across_sets": prep.duplicates_across,
            "unit": "photo" if prep.split.method == "stratified" else "lot",
            "balancing": balancing.method,
            "left_out": prep.errors[:50],
        }
        result = FittedTiles(
            model=model, spec=spec, fit=fitted, report=None, audit=audit_report,
            split=split_info, counts=prep.counts, train_config=train,
        )  # fmt: skip
        if not judge:
            return result
        log.info(
            "calibrating on the %d validation tiles of %d photos", len(val_rows), len(prep.val)
        )
        predictor = VitPredictor(self, Trained(model, None), spec)
        val_logits = prep.apply(
            val_rows, lambda tiles: predictor.logits(tile_tensor(tiles, images.image_size))
        )
        # a few defect tiles are often all above every good one: the temperature then stays
        # at 1 (TemperatureScaler.fit says why), so confident tiles do not all tie at P = 1
        calibration = fit_calibration(val_logits, labels[val_rows].astype(int),
                                      cost_ratio=cost_ratio, good_class=0)  # fmt: skip
        where = "validation tiles"
        if calibration is not None and cost_ratio is not None:
            predictor = VitPredictor(self, Trained(model, calibration), spec)
            val = photo_scores(prep, prep.val, predictor.tile_p)
            choice, why = image_threshold(val.image, prep.image_labels[prep.val], cost_ratio)
            if choice is None:
                log.warning("threshold chosen on the validation tiles: %s", why)
                if images.views > 1 and calibration.threshold is not None:
                    p = prep.apply(val_rows, predictor.tile_p)
                    calibration = _over_views(calibration, p, labels[val_rows] == 1)
            else:
                calibration = Calibration(calibration.temperature, choice, good_class=0)
                where = "validation photos"
        split_info["threshold_chosen_on"] = where
        predictor = VitPredictor(self, Trained(model, calibration), spec)
        log.info(
            "judging on the %d test photos (%d tiles) beside the baselines",
            len(prep.test),
            len(prep.tiles_of(prep.test)),
        )
        report, tile_report, extra = self._judge_tiles(predictor, prep, cost_ratio)
        return replace(
            result, report=report, calibration=calibration, extra_metrics=extra,
            tile_report=tile_report,
        )  # fmt: skip

    def _judge_tiles(
        self,
        predictor: VitPredictor,
        prep: PreparedTiles,
        cost_ratio: float | None,
        model_name: str = "DefectViT",
    ) -> tuple[Any, Any, dict[str, float]]:
        from mfgtx.kinds._tile_scores import judge_tiles

        cal = predictor.calibration
        threshold = None if cal is None or cal.threshold is None else cal.threshold.threshold
        return judge_tiles(
            prep, predictor.tile_p, threshold, cost_ratio=cost_ratio or 1.0,
            model_name=model_name, views=predictor.input_spec.views,
        )  # fmt: skip

    def save(self, path: str | Path, fitted: Fitted, *, job: Any = None) -> Path:
        """:meth:`Kind.save`; a tiled bundle also keeps its per-tile report beside the
        per-photo one (``metrics.tiles``)."""
        tile_report = getattr(fitted, "tile_report", None)
        if tile_report is None:
            return super().save(path, fitted, job=job)
        from mfgtx.artifacts import save_bundle

        return save_bundle(
            path,
            fitted.model,
            model_name=self.model_name,
            kind=self.name,
            input_spec=fitted.spec,
            split=fitted.split,
            audit=fitted.audit,
            metrics={
                **fitted.report.to_dict(),
                "extra": dict(fitted.extra_metrics),
                "tiles": tile_report.to_dict(),
            }
            if fitted.report is not None
            else None,
            train_config=fitted.train_config,
            calibration=fitted.calibration,
            precision=fitted.fit.precision,
            extra={"job_file": dict(job)} if job is not None else None,
            overwrite=True,
        )

    def judge(
        self,
        predictor: VitPredictor,
        prep: PreparedImages | PreparedTiles,
        *,
        model_name: str = "DefectViT",
    ) -> tuple[Any, dict[str, float]]:
        """The report of ``predictor`` on ``prep``'s test images beside the majority class
        and HOG + logistic regression fitted on the training and validation images, and
        the flag recall and false-alarm rate at the bundle's threshold. Tiled: the
        per-photo report, with the per-tile metrics in the extra figures."""
        if isinstance(prep, PreparedTiles):
            cost = None
            if predictor.calibration is not None and predictor.calibration.threshold is not None:
                cost = predictor.calibration.threshold.cost_missed_defect
            report, _, extra = self._judge_tiles(predictor, prep, cost, model_name)
            return report, extra
        prob = predictor.probabilities(prep.images[prep.test])
        report = compare_images(prep, prob, model_name=model_name)
        extra: dict[str, float] = {}
        cal, good_name = predictor.calibration, predictor.input_spec.good_class
        if cal is not None and cal.threshold is not None and good_name is not None:
            good = prep.names.index(good_name)
            flagged = cal.decide_of(prob).astype(bool)
            y = prep.labels[prep.test]
            if (y != good).any():
                extra["flag_recall"] = round(float(flagged[y != good].mean()), 6)
            if (y == good).any():
                extra["false_alarm_rate"] = round(float(flagged[y == good].mean()), 6)
        return report, extra

    def spec_from_bundle(self, bundle: Bundle) -> VitSpec:
        if bundle.input_spec is not None:
            try:
                return VitSpec.from_dict(bundle.input_spec)
            except (KeyError, TypeError, ValueError) as e:
                raise BundleError(f"{bundle.path}: bad input_spec: {e}", file=bundle.path) from e
        job = self.old_layout(bundle, "class_names", "image_size")  # format 2
        return VitSpec(
            image_size=int(job["image_size"]),
            mode=job.get("mode", "L"),
            min_size=int(job.get("min_size", 8)),
            mean=float(job.get("mean", MEAN)),
            std=float(job.get("std", STD)),
            class_names=tuple(job["class_names"]),
            good_class=job.get("good_class"),
        )

    def predictor(self, bundle: Bundle) -> VitPredictor:
        return VitPredictor(self, bundle, self.spec_from_bundle(bundle))


def _bench_photos(job: JobSettings, predictor: Any, batch: int, repeats: int) -> dict[str, Any]:
    """Bench of a tiled bundle: full-size photos per second (decoding, cutting and scoring
    every tile, as ``mfgtx score`` does; the files are read once before). The photos are
    those ``score`` reads: ``score.images``, else ``images.path``, with no label needed."""
    import time

    from mfgtx.images import ImageError, iter_image_files, read_listed

    source = (job.score.images if job.score is not None else None) or (
        job.images.path if job.images is not None else None
    )
    if source is None:
        raise ConfigError(f"{job.source_file}: score.images: name the photos to time")
    photos = []
    for key, where in iter_image_files(source):
        try:
            photos.append(read_listed(key, where))
        except ImageError as e:  # scoring lists it as an error row; not timed here
            log.warning("photo left out of the timing: %s: %s", e.source, e.reason)
    best, scored = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        scored = predictor.score(photos, batch_size=batch)
        best = min(best, time.perf_counter() - t0)
    assert scored is not None
    n, tiles = len(scored.rows), int(scored.rows["tiles"].sum()) if len(scored.rows) else 0
    return {
        "command": "bench",
        "bundle_id": predictor.bundle_id,
        "images": n,
        "tiles": tiles,
        "tile_size": predictor.input_spec.tile_size,
        "views": predictor.input_spec.views,
        "batch_size": batch,
        "threads": torch.get_num_threads(),
        "seconds": round(best, 4),
        "images_per_s": round(n / best, 1),
        "tiles_per_s": round(tiles / best, 1),
    }


def compare_images(
    prep: PreparedImages,
    prob: np.ndarray,
    model_name: str = "DefectViT",
    n_resamples: int | None = 1000,
) -> Any:
    """The :class:`~mfgtx.baselines.EvaluationReport` of test probabilities ``prob`` next to
    the majority class and HOG + logistic regression, both fitted on the training and
    validation images (everything the model learned from or chose its checkpoint on); how
    sure the model's lead is, by a paired bootstrap over the test lots, or over the distinct
    test images when there are no lots."""
    from mfgtx.baselines import (
        EvaluationReport,
        HogLogistic,
        MajorityImageClass,
        ReportRow,
        bootstrap_differences,
    )
    from mfgtx.metrics import classification_metrics

    size, k = int(prep.images.shape[-1]), len(prep.names)
    fit_idx = np.concatenate([prep.train, prep.val])
    pixels = prep.images  # in a scratch file: the baselines read a batch at a time
    y = prep.labels[prep.test]
    reasons: list[str] = []
    rows = [ReportRow(model_name, "model", classification_metrics(y, prob, reasons=reasons))]
    predictions = {model_name: prob}
    for baseline in (
        MajorityImageClass(),
        HogLogistic(cell=16 if size >= 64 else max(4, size // 4)),
    ):
        p = baseline.fit(pixels[fit_idx], prep.labels[fit_idx], k).predict_proba(pixels[prep.test])
        predictions[baseline.name] = p
        rows.append(
            ReportRow(baseline.name, "baseline", classification_metrics(y, p, reasons=reasons))
        )
    unit = "test lots" if prep.split.method == "lot_time" else "distinct test images"
    differences, notes = bootstrap_differences(
        rows, y, predictions, prep.groups[prep.test], "f1", n_resamples, unit=unit
    )
    return EvaluationReport(
        "classification",
        n_test=len(prep.test),
        rows=tuple(rows),
        primary="f1",
        n_train=len(fit_idx),
        unit="images",
        notes=tuple(notes),
        differences=differences,
    )


VIT = register_kind(VitKind())
