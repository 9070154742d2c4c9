"""The :class:`~mfgtx.kinds.Predictor` of a ViT bundle (see :mod:`mfgtx.kinds.vit` for its
output columns).

Shape legend: ``N`` images, ``C`` channels, ``S`` image side, ``K`` classes."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from mfgtx.calibration import class_probabilities
from mfgtx.kinds._predictor import Predictor, Scored
from mfgtx.kinds._words import DEFECT, GOOD, decision_words, probability_column
from mfgtx.kinds.vit.reading import batches, each_read, error_row
from mfgtx.kinds.vit.spec import VitSpec

__all__ = ["VitExplanation", "VitPredictor"]

log = logging.getLogger("mfgtx.kinds")


@dataclass(frozen=True)
class VitExplanation:
    """Attention maps of one image (non-causal diagnostics) and their deletion test.

    Attributes:
        maps: :class:`~mfgtx.explain.AttentionMaps` (predictions included).
        deletion: :class:`~mfgtx.explain.DeletionResult`, or ``None``.
        image: the image as the model read it ``(S, S)`` grey in [0, 1].
        row: the image's output row (the columns ``mfgtx score`` writes).
        inputs: the normalised input the maps read ``(1, C, S, S)`` (the image, or the worst
            tile, one view), which :meth:`VitPredictor.deletion_of` tests again.

    With ``input_spec.views`` above 1 the maps and the deletion test read the image (or the
    worst tile) as read, one view, while ``row`` is the mean over the views, as scored.
    """

    maps: Any
    deletion: Any
    image: torch.Tensor
    row: dict[str, Any]
    inputs: torch.Tensor | None = None


class VitPredictor(Predictor[VitSpec]):
    """The :class:`~mfgtx.kinds.Predictor` of a DefectViT bundle (see the module docstring)."""

    keys = ("image",)

    def tile_p(self, tiles: np.ndarray, batch_size: int = 256) -> np.ndarray:
        """``(N,)`` P(defect) of uint8 tiles ``(N, S, S[, C])`` of a tiled bundle (the mean
        over its views, as :meth:`probabilities`)."""
        from mfgtx.kinds.vit.tiles import tile_tensor

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
        ``p_<class name>`` per class (the bundle's class names, :mod:`mfgtx.kinds._words`) and,
        where it is defined, ``p_defect`` and, with a threshold, ``decision`` (``defect`` or
        ``good``). A tiled bundle's tiles always get ``p_defect`` (the defect tile class's
        probability), as :meth:`tile_p`."""
        spec, cal = self.input_spec, self.calibration
        pred = prob.argmax(1)
        cols: dict[str, Any] = {
            "predicted": pred.astype(np.int64),
            "predicted_class": [spec.class_names[int(k)] for k in pred],
        }
        for k, name in enumerate(spec.class_names[: prob.shape[1]]):
            cols[probability_column(name)] = prob[:, k].astype(np.float64)
        flagged = None
        if spec.tiled:  # good and defect: P(defect) as tile_p reads it, calibrated or not
            cols[probability_column(DEFECT)] = prob[:, 1].astype(np.float64)
            if cal is not None and cal.threshold is not None:
                flagged = cols[probability_column(DEFECT)] > cal.threshold.threshold
        elif cal is not None and cal.good_class is not None:
            cols[probability_column(DEFECT)] = cal.defect_of(prob).astype(np.float64)
            if cal.threshold is not None:
                flagged = cal.decide_of(prob)
        if flagged is not None:
            cols["decision"] = decision_words(np.asarray(flagged, dtype=int), (GOOD, DEFECT))
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
        for batch in batches(data, group, errors):
            names: list[str] = []  # of the files read, in the order read
            sources = each_read(batch, errors, names)  # a file read when it is reached
            if self.input_spec.tiled:
                from mfgtx.kinds.vit.tile_scores import score_photos

                rows, bad_photos = score_photos(
                    self, list(sources), batch_size=batch_size, per_tile=per_tile
                )
                errors += [error_row(e.source, e.reason) for e in bad_photos]
                if rows is not None:
                    parts.append(rows)
                continue
            images, kept, bad = self.load(sources)  # one full-size image in memory at a time
            errors += [error_row(e.source, e.reason) for e in bad]
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
        from mfgtx.explain import attention_maps

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
        explained = VitExplanation(maps, None, images[0].mean(0), row, x)
        if not deletion:
            return explained
        return dataclasses.replace(explained, deletion=self.deletion_of(explained, which))

    def deletion_of(self, explained: VitExplanation, which: str = "rollout") -> Any:
        """The deletion test of ``explained``'s map ``which`` (``"rollout"`` or ``"layer"``),
        on the input its maps read: the image is not read, nor a photo's tiles scored, again
        (what :meth:`explain` with ``which`` gives, for another map kind)."""
        from mfgtx.explain import deletion_test

        if explained.inputs is None:
            raise ValueError("this explanation keeps no input to test: explain the image again")
        return deletion_test(
            self.model, explained.inputs, explained.maps, which=which, fraction=0.1, n_random=5
        )

    def _worst_tile(self, data: tuple[str, bytes]) -> tuple[torch.Tensor, dict[str, Any]]:
        """The worst tile of a photo ``(1, C, S, S)`` and the photo's output row."""
        from mfgtx.data import DataError
        from mfgtx.images import TileSpec, cut_tiles, read_image
        from mfgtx.kinds.vit.tile_scores import score_photos
        from mfgtx.kinds.vit.tiles import tile_tensor

        spec = self.input_spec
        assert spec.tile_size is not None  # explain() asks for a tiled bundle's worst tile only
        rows, bad = score_photos(self, [data], batch_size=256, per_tile=False)
        if rows is None:
            raise DataError(f"{data[0]}: {bad[0].reason}")
        row = rows.iloc[0].to_dict()
        photo = read_image(data, mode=spec.mode, min_size=1)
        tiles, pos = cut_tiles(photo, TileSpec(spec.tile_size, spec.tile_stride), name=data[0])
        k = int(np.flatnonzero((pos[:, 0] == row["top"]) & (pos[:, 1] == row["left"]))[0])
        return tile_tensor(tiles[k : k + 1], spec.image_size), row
