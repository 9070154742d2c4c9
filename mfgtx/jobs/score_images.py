"""``score`` for a DefectViT bundle: every image of a folder, zip or manifest, a batch at a time.

A file that cannot be read or is not a usable image (corrupt, truncated, a decompression bomb,
16-bit, palette, alpha, too small) goes to the errors file with the reason; the others are
scored. Images are read and resized exactly as in training (:func:`mfgtx.images.load_images`
with the bundle's size, colour mode and normalisation). Output columns are described in
:mod:`mfgtx.jobs.score`.
"""

from __future__ import annotations

import logging
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mfgtx._files import remove_leftovers
from mfgtx.data import DataError
from mfgtx.jobs._lock import output_lock
from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.sinks import describe_sink, write_errors, write_scores

__all__ = ["iter_image_files", "score_images"]

log = logging.getLogger(__name__)

KEYS = ("image",)


def iter_image_files(source: str | Path) -> Iterator[tuple[str, Any]]:
    """``(key, path or (name, bytes) loader)`` of every image of ``source``, in name order.

    ``source`` is a folder (searched recursively; files whose suffix is not an image suffix
    are passed over), a ``.zip`` (read in memory, never extracted) or a CSV manifest whose
    ``path`` column lists files relative to the manifest's folder. The key is the path
    relative to the folder, zip or manifest folder.

    Raises:
        DataError: ``source`` does not exist, or a manifest without a ``path`` column.
    """
    from mfgtx.images.records import IMAGE_SUFFIXES

    root = Path(source)
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES:
                yield p.relative_to(root).as_posix(), p
        return
    if root.is_file() and root.suffix.lower() == ".zip":
        with zipfile.ZipFile(root) as z:
            names = sorted(n for n in z.namelist() if Path(n).suffix.lower() in IMAGE_SUFFIXES)
        for n in names:
            yield n, (root, n)
        return
    if root.is_file() and root.suffix.lower() == ".csv":
        frame = pd.read_csv(root, dtype=str)
        if "path" not in frame.columns:
            raise DataError(
                f"{root}: a manifest needs a 'path' column; found {list(frame.columns)}"
            )
        for p in frame["path"].dropna():
            yield str(p), root.parent / str(p)
        return
    raise DataError(f"{root}: not a folder, a .zip or a CSV manifest of images")


def _read(key: str, where: Any) -> tuple[str, bytes]:
    """``(key, bytes)``; raises :class:`~mfgtx.images.ImageError` when the file cannot be
    read or is too large (checked before reading: :data:`~mfgtx.images.MAX_IMAGE_BYTES`)."""
    from mfgtx.images import ImageError, read_image_file, read_zip_member

    try:
        if isinstance(where, tuple):
            zip_path, member = where
            with zipfile.ZipFile(zip_path) as z:
                return key, read_zip_member(z, member)
        return key, read_image_file(where)
    except ImageError as e:
        raise ImageError(key, e.reason) from e
    except (OSError, zipfile.BadZipFile) as e:
        raise ImageError(key, f"cannot be read ({getattr(e, 'strerror', None) or e})") from e


def _batches(
    source: str, size: int, errors: list[dict[str, object]]
) -> Iterator[list[tuple[str, Any]]]:
    """Batches of ``(key, where)``; a key listed again (a repeated manifest row, a zip with a
    member twice) goes to ``errors`` and is scored once."""
    batch: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for item in iter_image_files(source):
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


def score_images(config: JobConfig, bundle: Any) -> Any:
    """Score the images of ``score.images`` (default ``images.path``) with a ViT ``bundle``."""
    from mfgtx.calibration import class_probabilities
    from mfgtx.images import ImageError, load_images
    from mfgtx.jobs.score import ScoreOutcome, check_score_outputs
    from mfgtx.jobs.vit import vit_logits

    sc = config.score
    assert sc is not None  # score() checked
    source = sc.images or (config.images.path if config.images is not None else None)
    if source is None:
        raise ConfigError(f"{config.source_file}: score.images: name the images to score")
    job = bundle.manifest["extra"]["job"]
    names = list(job["class_names"])
    size, mode = int(job["image_size"]), str(job.get("mode", "L"))
    min_size = int(job.get("min_size", 8))
    cal = bundle.calibration
    target, errors_path = check_score_outputs(config, None)
    t0 = time.perf_counter()
    with output_lock(target):
        remove_leftovers(target)
        remove_leftovers(errors_path)
        parts: list[pd.DataFrame] = []
        errors: list[dict[str, object]] = []
        for batch in _batches(source, sc.batch_size, errors):
            sources, keys = [], []
            for key, where in batch:
                try:
                    sources.append(_read(key, where))
                    keys.append(key)
                except ImageError as e:
                    errors.append(_error(e))
            images, kept, bad = load_images(sources, size, mode=mode, min_size=min_size)  # type: ignore[arg-type]
            errors += [_error(e) for e in bad]
            if not kept:
                continue
            logits = vit_logits(bundle, images, len(images))
            prob = class_probabilities(logits, cal)
            pred = prob.argmax(1)
            cols: dict[str, Any] = {
                "image": [keys[i] for i in kept],
                "bundle_id": bundle.bundle_id,
                "predicted": pred.astype(np.int64),
                "predicted_class": [names[int(k)] for k in pred],
            }
            for k in range(prob.shape[1]):
                cols[f"p_{k}"] = prob[:, k].astype(np.float64)
            if cal is not None and cal.good_class is not None:
                cols["p_defect"] = cal.defect_probability(logits).astype(np.float64)
                if cal.threshold is not None:
                    cols["decision"] = cal.decide(logits).astype(np.int64)
            parts.append(pd.DataFrame(cols))
        for e in errors:
            log.warning("image not scored: %s: %s", e["file"], e["reason"])
        if not parts:
            write_errors(errors_path, errors)
            raise DataError(
                f"{source}: no image could be scored ({len(errors)} bad, see {errors_path})"
            )
        frame = pd.concat(parts, ignore_index=True)
        rows = write_scores(sc.output, frame, KEYS)
        write_errors(errors_path, errors)
    seconds = time.perf_counter() - t0
    n = len(frame)
    log.info("scored %d images in %.2f s (%d bad)", n, seconds, len(errors))
    return ScoreOutcome(
        bundle_id=bundle.bundle_id,
        output=describe_sink(sc.output),
        errors_file=str(errors_path),
        lots=0,
        windows=0,
        bad_lots=0,
        output_rows=rows,
        seconds=round(seconds, 3),
        windows_per_s=float("nan"),
        kind="vit",
        images=n,
        bad_images=len(errors),
        images_per_s=round(n / seconds, 1) if seconds > 0 else float("nan"),
    )


def _error(err: Exception) -> dict[str, object]:
    return _error_of(getattr(err, "source", None), getattr(err, "reason", str(err)))


def _error_of(file: str | None, reason: str) -> dict[str, object]:
    return {"lot": None, "file": file, "line": None, "column": None, "reason": reason}
