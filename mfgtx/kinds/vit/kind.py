"""The ``vit`` kind (:class:`VitKind`): trains, judges and scores a :class:`~mfgtx.models.DefectViT`
(see :mod:`mfgtx.kinds.vit`).

Shape legend: ``N`` images, ``C`` channels, ``S`` image side, ``K`` classes."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mfgtx._config import ConfigError
from mfgtx.artifacts import Bundle, BundleError
from mfgtx.calibration import Calibration, choose_threshold, fit_calibration
from mfgtx.kinds._fitting import Fitted
from mfgtx.kinds._job import (
    FitRequest,
    FitSetup,
    JobScores,
    JobSettings,
    RowReader,
    RowScorer,
)
from mfgtx.kinds._kind import Kind
from mfgtx.kinds._onnx import Vit
from mfgtx.kinds._onnx import member_config as graph_config
from mfgtx.kinds._predictor import Trained
from mfgtx.kinds._registry import register_kind
from mfgtx.kinds.vit.images import ImagesSection, PreparedImages, image_records, prepare_images
from mfgtx.kinds.vit.predictor import VitPredictor
from mfgtx.kinds.vit.report import compare_images
from mfgtx.kinds.vit.section import VitSection
from mfgtx.kinds.vit.spec import MEAN, STD, VitSpec
from mfgtx.kinds.vit.tiles import TILE_CLASSES, PreparedTiles
from mfgtx.models import DefectViT, ViTConfig
from mfgtx.train import fit, predict

__all__ = ["VIT", "FittedTiles", "VitKind"]

log = logging.getLogger("mfgtx.kinds")


@dataclass(frozen=True)
class FittedTiles(Fitted):
    """A tiled ViT's :class:`~mfgtx.kinds.Fitted`: ``report`` is per photo, ``tile_report``
    the same comparison per tile."""

    tile_report: Any = None


def _over_views(calibration: Calibration, p_defect: np.ndarray, defect: np.ndarray) -> Calibration:
    """``calibration`` with its cost threshold chosen again on validation P(defect) taken as
    scoring takes it, over the views (its temperature, fitted on one view, kept)."""
    assert calibration.threshold is not None
    cost = calibration.threshold.cost_missed_defect
    choice = choose_threshold(p_defect, defect.astype(int), cost_missed_defect=cost)
    return Calibration(calibration.temperature, choice, good_class=calibration.good_class)


class VitKind(Kind[VitSection, VitSpec, "PreparedImages | PreparedTiles"]):
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
        try:  # the image size is the job's too, not the data's: refused before any image
            ViTConfig.check(self.section(job), image_size=job.images.image_size)
        except ValueError as e:
            raise ConfigError(f"{job.source_file}: images.image_size, vit.patch_size: {e}") from e

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
        return self.fit(data, job.images, self.fit_request(job, setup))

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
        prep: PreparedImages | PreparedTiles,
        images: ImagesSection,
        request: FitRequest[VitSection],
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
            return self._fit_tiles(prep, audit_report, images, request)
        names, labels = prep.names, prep.labels
        try:
            config = request.section.model_config(
                image_size=images.image_size,
                in_chans=1 if images.mode == "L" else 3,
                num_classes=len(names),
            )
            loss = request.section.loss(class_weights(labels[prep.train], len(names)))
        except ValueError as e:  # settings that do not fit the data, e.g. patch sizes
            raise ValueError(f"{self.section_key}: {e}") from e
        augment = SurfaceAugment(rot90=images.rot90) if images.augment else None

        def data(idx: np.ndarray, aug: Any = None) -> Any:
            return ImageDataset(prep.images[idx], labels[idx], augment=aug, mean=MEAN, std=STD)

        torch.manual_seed(request.train.seed)
        model = DefectViT(config, loss=loss)
        fitted = fit(
            model, data(prep.train, augment), data(prep.val), request.train,
            on_step=request.on_step, run_key=request.run_key,
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
            **request.plan.to_dict(),
            "method": prep.split.method,
            "seed": request.train.seed,
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
            train_config=request.train,
        )
        if not request.judge:
            return result
        good = None if images.good_class is None else names.index(images.good_class)
        val_logits = predict(model, data(prep.val)).numpy()
        calibration = fit_calibration(
            val_logits, labels[prep.val],
            cost_ratio=request.cost_ratio if good is not None else None, good_class=good,
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
        images: ImagesSection,
        request: FitRequest[VitSection],
    ) -> Fitted:
        """:meth:`fit` on tiles (see :mod:`mfgtx.kinds.vit.tiles`): balanced draws (or class
        weights) when a class is rare, training tiles ``train_stride`` apart, temperature on
        the validation tiles, threshold on the validation photos."""
        from mfgtx.images import SurfaceAugment, plan_balancing
        from mfgtx.kinds.vit.tile_scores import image_threshold, photo_scores
        from mfgtx.kinds.vit.tiles import tile_tensor

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
        draw = (
            torch.from_numpy(balancing.sample_weights(train_labels))
            if balancing.method == "sampler"
            else None
        )
        try:
            config = request.section.model_config(
                image_size=images.image_size,
                in_chans=1 if images.mode == "L" else 3,
                num_classes=2,
            )
            loss = request.section.loss(balancing.class_weights)
        except ValueError as e:
            raise ValueError(f"{self.section_key}: {e}") from e
        # no random crop: a pit at a tile's edge would be cut off and keep its label
        augment = (
            SurfaceAugment(rot90=images.rot90, crop_scale=(1.0, 1.0)) if images.augment else None
        )
        torch.manual_seed(request.train.seed)
        model = DefectViT(config, loss=loss)
        fitted = fit(
            model, prep.dataset(train_rows, augment), prep.dataset(val_rows), request.train,
            on_step=request.on_step, run_key=request.run_key, sample_weights=draw,
        )  # fmt: skip
        spec = VitSpec(
            image_size=images.image_size, mode=images.mode, min_size=images.min_size,
            mean=MEAN, std=STD, class_names=TILE_CLASSES, good_class=TILE_CLASSES[0],
            tile_size=tiles.size, tile_stride=tiles.stride, views=images.views,
        )  # fmt: skip
        split_info = {
            **request.plan.to_dict(),
            "method": prep.split.method,
            "seed": request.train.seed,
            "duplicate_files_across_sets": prep.duplicates_across,
            "unit": "photo" if prep.split.method == "stratified" else "lot",
            "balancing": balancing.method,
            "left_out": prep.errors[:50],
        }
        result = FittedTiles(
            model=model, spec=spec, fit=fitted, report=None, audit=audit_report,
            split=split_info, counts=prep.counts, train_config=request.train,
        )  # fmt: skip
        if not request.judge:
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
                                      cost_ratio=request.cost_ratio, good_class=0)  # fmt: skip
        where = "validation tiles"
        if calibration is not None and request.cost_ratio is not None:
            predictor = VitPredictor(self, Trained(model, calibration), spec)
            val = photo_scores(prep, prep.val, predictor.tile_p)
            choice, why = image_threshold(
                val.image, prep.image_labels[prep.val], request.cost_ratio
            )
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
        report, tile_report, extra = self._judge_tiles(predictor, prep, request.cost_ratio)
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
        from mfgtx.kinds.vit.tile_scores import judge_tiles

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
            report, _, tile_extra = self._judge_tiles(predictor, prep, cost, model_name)
            return report, tile_extra
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


VIT = register_kind(VitKind())
