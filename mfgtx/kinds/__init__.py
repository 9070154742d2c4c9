"""mfgtx.kinds: one module per model kind, and :func:`load`, the one way to use a bundle.

A kind is the only place that knows its model exists: its job-file section, its frozen
input specification (saved in the bundle), how it is built from data, trained, calibrated
and compared with baselines, how its bundle is read, and how it predicts.

======== ============================== ================= ==========================
kind     model                          job-file section  input
======== ============================== ================= ==========================
sensor   :class:`~mfgtx.models.SensorEncoder`  ``model``   sensor rows (lot quality, RUL)
forecast :class:`~mfgtx.models.CausalForecaster` ``forecast`` sensor rows
vit      :class:`~mfgtx.models.DefectViT`      ``vit``     images
======== ============================== ================= ==========================

Example:
    >>> import mfgtx
    >>> predictor = mfgtx.load("runs/sample/models/sample_quality")  # doctest: +SKIP
    >>> predictor.predict(frame_of_sensor_rows)                       # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from mfgtx.artifacts import Bundle, BundleError, load_bundle
from mfgtx.kinds._fitting import Fitted
from mfgtx.kinds._job import FitRequest, FitSetup, JobScores, JobSettings
from mfgtx.kinds._kind import Kind
from mfgtx.kinds._predictor import InputSpec, Predictor, Scored, Trained
from mfgtx.kinds._registry import (
    KINDS,
    job_kind,
    kind_named,
    kind_of_class,
    load_plugins,
    model_classes,
    register_kind,
)
from mfgtx.kinds._split import CrossFit, SplitWindows, cross_fit, split_windows
from mfgtx.kinds._window_kind import WindowData, WindowKind
from mfgtx.kinds._windows import WindowPredictor, WindowSpec
from mfgtx.kinds._words import probability_column
from mfgtx.kinds.forecast import FORECAST, ForecastPredictor, ForecastSection, ForecastSpec
from mfgtx.kinds.sensor import SENSOR, SensorPredictor, SensorSection, SensorSpec
from mfgtx.kinds.vit import VIT, ImagesSection, VitPredictor, VitSection, VitSpec
from mfgtx.kinds.vit.tile_scores import baseline_scorers, image_threshold, photo_scores
from mfgtx.kinds.vit.tiles import prepare_tiles

__all__ = [
    "FORECAST",
    "KINDS",
    "MODEL_CLASSES",
    "SENSOR",
    "VIT",
    "CrossFit",
    "FitRequest",
    "FitSetup",
    "Fitted",
    "ForecastPredictor",
    "ForecastSection",
    "ForecastSpec",
    "ImagesSection",
    "InputSpec",
    "JobScores",
    "JobSettings",
    "Kind",
    "Predictor",
    "Scored",
    "SensorPredictor",
    "SensorSection",
    "SensorSpec",
    "SplitWindows",
    "Trained",
    "VitPredictor",
    "VitSection",
    "VitSpec",
    "WindowData",
    "WindowKind",
    "WindowPredictor",
    "WindowSpec",
    "baseline_scorers",
    "cross_fit",
    "image_threshold",
    "job_kind",
    "kind_named",
    "kind_of",
    "kind_of_class",
    "load",
    "load_plugins",
    "model_classes",
    "photo_scores",
    "prepare_tiles",
    "probability_column",
    "register_kind",
    "split_windows",
]

load_plugins()  # the kinds of other packages (MFGTX_KINDS, entry points ``mfgtx.kinds``)

#: The model classes by the name bundle manifests give them (of the kinds registered at
#: import; :func:`model_classes` also sees kinds registered later).
MODEL_CLASSES = model_classes()


def kind_of(bundle: Bundle) -> Kind:
    """The kind that wrote ``bundle`` (or, for a bundle of an earlier layout, the kind of
    its model class).

    Raises:
        BundleError: the bundle holds no model of an mfgtx kind.
    """
    if bundle.kind is not None:
        if bundle.kind not in KINDS:
            raise BundleError(
                f"{bundle.path} is a {bundle.kind!r} bundle, which this mfgtx does not know "
                f"(kinds: {sorted(KINDS)}); upgrade mfgtx",
                file=bundle.path,
            )
        return KINDS[bundle.kind]
    name = bundle.manifest["model"]["class"]
    kind = kind_of_class(name)
    if kind is not None:
        return kind
    raise BundleError(
        f"{bundle.path} holds a {name!r} model, not one of mfgtx's kinds; load it with "
        f"mfgtx.artifacts.load_bundle(path, classes={{{name!r}: YourModel}})",
        file=bundle.path,
    )


def load(path: str | Path, *, map_location: str = "cpu") -> Predictor:
    """The :class:`Predictor` of the bundle at ``path``, verified, ready to predict.

    ``predict(frame or images)`` returns exactly the rows ``mfgtx score`` writes for the
    same input; ``explain(...)`` the attention maps of :mod:`mfgtx.explain` with their
    deletion test; ``report``, ``audit`` and ``input_spec`` what the bundle records.

    Raises:
        BundleError: the bundle is missing, damaged, unsigned where a key is configured, or
            lacks the input specification its model needs.
    """
    bundle = load_bundle(path, classes=model_classes(), map_location=map_location)
    return kind_of(bundle).predictor(bundle)
