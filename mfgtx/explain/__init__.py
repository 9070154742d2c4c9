"""mfgtx.explain: attention maps as non-causal diagnostics, with a faithfulness check.

An attention weight says how a layer and head mixed values, not what caused the output
(Jain & Wallace, 2019): values, later layers and residual paths all contribute. So every
map here is labelled ``kind = "non-causal diagnostic"`` and carries :data:`NOTICE`, every
figure shows it, and each map comes with a deletion test that measures how much the
prediction actually moves when the most-attended inputs are removed, against random ones.

Typical use::

    maps = attention_maps(model, x)                  # predictions in maps.prediction
    check = deletion_test(model, x, maps, fraction=0.1)
    attention_figure(maps, 0), deletion_figure(check)
    check.sentence()   # "masking the 10% most-attended ... moved ... by X; random ... Y +/- Z"
"""

from mfgtx.explain.deletion import DeletionResult, run_deletion
from mfgtx.explain.dispatch import (
    attention_maps,
    deletion_test,
    register_deleter,
    register_explainer,
)
from mfgtx.explain.figures import attention_figure, deletion_figure, query_key_figure
from mfgtx.explain.maps import AttentionMaps
from mfgtx.explain.notice import KIND, NOTICE, SHORT_NOTICE
from mfgtx.explain.overlap import OverlapScore, overlap_score
from mfgtx.explain.rollout import attention_rollout

__all__ = [
    "KIND",
    "NOTICE",
    "SHORT_NOTICE",
    "AttentionMaps",
    "DeletionResult",
    "OverlapScore",
    "attention_figure",
    "attention_maps",
    "attention_rollout",
    "deletion_figure",
    "deletion_test",
    "overlap_score",
    "query_key_figure",
    "register_deleter",
    "register_explainer",
    "run_deletion",
]
