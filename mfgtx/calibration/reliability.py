"""Binned probabilities against observed frequencies, for a calibration plot."""

from __future__ import annotations

from typing import Any

import numpy as np

from mfgtx.metrics import _labels_proba


def reliability_curve(probabilities: object, labels: object, n_bins: int = 10) -> dict[str, Any]:
    """Predicted probability against observed frequency, in equal-width bins, for a plot.

    Binary input (``(N,)`` or ``(N, 2)``): P(defect) against the share of defects
    (``"kind": "positive_class"``). Multi-class: each sample's top probability against the
    share of correct top classes (``"kind": "top_label"``, the bins of
    :func:`mfgtx.metrics.expected_calibration_error`). A calibrated model lies on the diagonal.
    Bins are ``[k/n_bins, (k+1)/n_bins)``, the last one also holds 1.0.

    Returns:
        JSON-compatible ``{"kind", "bin_edges" (n_bins + 1), "mean_predicted",
        "observed_frequency", "counts" (n_bins each)}``; an empty bin has ``None`` for both
        means and count 0.

    >>> curve = reliability_curve([0.1, 0.2, 0.7, 0.9], [0, 1, 1, 1], n_bins=2)
    >>> curve["counts"], curve["mean_predicted"], curve["observed_frequency"]
    ([2, 2], [0.15000000000000002, 0.8], [0.5, 1.0])
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, found {n_bins!r}")
    y, p = _labels_proba(labels, probabilities, "reliability_curve")
    if p.shape[1] == 2:
        kind, predicted, hit = "positive_class", p[:, 1], (y == 1).astype(np.float64)
    else:
        kind, predicted = "top_label", p.max(axis=1)
        hit = (np.argmax(p, axis=1) == y).astype(np.float64)
    bins = np.minimum((predicted * n_bins).astype(np.int64), n_bins - 1)  # (N,)
    counts = np.bincount(bins, minlength=n_bins)
    pred_sum = np.bincount(bins, weights=predicted, minlength=n_bins)
    hit_sum = np.bincount(bins, weights=hit, minlength=n_bins)
    return {
        "kind": kind,
        "bin_edges": np.linspace(0.0, 1.0, n_bins + 1).tolist(),
        "mean_predicted": [
            float(s / c) if c else None for s, c in zip(pred_sum, counts, strict=True)
        ],
        "observed_frequency": [
            float(s / c) if c else None for s, c in zip(hit_sum, counts, strict=True)
        ],
        "counts": [int(c) for c in counts],
    }
