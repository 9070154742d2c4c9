"""The one notice every attention map carries, defined once for the whole library."""

from __future__ import annotations

__all__ = ["KIND", "NOTICE", "SHORT_NOTICE"]

#: The ``kind`` of every attention-map result and figure.
KIND = "non-causal diagnostic"

#: Shown on every figure of attention weights and carried by every result.
NOTICE = (
    "Attention weights are a non-causal diagnostic: they show how a layer mixed the values "
    "of its inputs, not why the model predicted what it did (values, later layers and the "
    "residual path all contribute). The deletion test beside the map measures how much the "
    "prediction actually depends on the most-attended inputs."
)

#: A one-line form for figure titles and table captions.
SHORT_NOTICE = "non-causal diagnostic: how values were mixed, not why"
