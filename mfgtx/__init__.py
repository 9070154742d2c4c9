"""mfgtx: manufacturing analytics on Transformer models.

Subpackages: :mod:`mfgtx.nn` (the Transformer library), :mod:`mfgtx.models` (the sensor
encoder, the forecaster, the defect ViT), :mod:`mfgtx.data` (sensor tables and windows),
:mod:`mfgtx.split` (leakage-safe splitting and its audit), :mod:`mfgtx.train` (the training
engine), :mod:`mfgtx.kinds` (one module per model kind; :func:`load`), :mod:`mfgtx.jobfile`
(a job file and the data it names, read), :mod:`mfgtx.jobs` (the ``mfgtx`` command's jobs).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mfgtx._version import __version__

__all__ = ["__version__", "load"]

# A library never configures logging; applications (the CLI, the dashboard) do.
logging.getLogger(__name__).addHandler(logging.NullHandler())


def load(path: str | Path, *, map_location: str = "cpu") -> Any:
    """The predictor of the model bundle at ``path`` (:func:`mfgtx.kinds.load`).

    ``load(path).predict(frame)`` gives exactly the rows ``mfgtx score`` writes for the same
    input; see the README section "Python: mfgtx.load".
    """
    from mfgtx.kinds import load as _load

    return _load(path, map_location=map_location)
