"""Photo scores from tile scores, and detection metrics against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, confusion_matrix, recall_score, roc_auc_score

from mfgtx.images import image_scores
from mfgtx.metrics import HIGHER_IS_BETTER, MetricWarning, average_precision, detection_metrics


def test_photo_score_is_its_worst_tile_and_where_it_is() -> None:
    p = [0.2, 0.9, 0.1, 0.4, 0.4, 0.05]
    image = [1, 0, 1, 2, 2, 0]  # tiles of three photos, interleaved
    top = [0, 64, 0, 0, 64, 0]
    left = [0, 0, 64, 128, 0, 64]
    s = image_scores(p, image, top=top, left=left)
    assert s.score.tolist() == [0.9, 0.2, 0.4]
    assert s.tile.tolist() == [1, 0, 3]  # photo 2: a tie, the first tile
    assert s.top.tolist() == [64, 0, 0] and s.left.tolist() == [0, 0, 128]
    assert s.n_tiles.tolist() == [2, 2, 2]


def test_photo_scores_match_a_groupby_max_on_random_tiles() -> None:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 40, 2000)
    image[:40] = np.arange(40)  # every photo has a tile
    p = rng.random(2000)
    pos = rng.integers(0, 500, (2000, 2))
    s = image_scores(p, image, top=pos[:, 0], left=pos[:, 1])
    for m in range(40):
        rows = np.flatnonzero(image == m)
        best = rows[np.argmax(p[rows])]
        assert s.score[m] == p[best] and s.tile[m] == best
        assert (s.top[m], s.left[m]) == tuple(pos[best])


def test_every_photo_must_be_scored_and_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match=r"1 photo\(s\) have no scored tile, first \[1\]"):
        image_scores([0.5, 0.5], [0, 2], top=[0, 0], left=[0, 0])
    with pytest.raises(ValueError, match=r"2 photo\(s\) have no scored tile, first \[1, 2\]"):
        image_scores([0.5], [0], top=[0], left=[0], n_images=3)
    with pytest.raises(ValueError, match="tile 1 has P\\(defect\\) 1.5, not in \\[0, 1\\]"):
        image_scores([0.5, 1.5], [0, 0], top=[0, 0], left=[0, 0])
    with pytest.raises(ValueError, match="must all be \\(N,\\)"):
        image_scores([0.5, 0.2], [0], top=[0], left=[0])
    with pytest.raises(ValueError, match="photo number 3 >= n_images=2"):
        image_scores([0.5], [3], top=[0], left=[0], n_images=2)


@pytest.mark.parametrize("seed", range(5))
def test_average_precision_and_roc_auc_match_sklearn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 300
    y = (rng.random(n) < 0.05 + 0.1 * seed).astype(int)
    y[0] = 1
    p = np.clip(rng.random(n) * 0.6 + 0.4 * y * rng.random(n), 0, 1).round(1)  # many ties
    assert average_precision(y, p) == pytest.approx(average_precision_score(y, p), abs=1e-12)
    m = detection_metrics(y, p, 0.5)
    assert m["average_precision"] == pytest.approx(average_precision_score(y, p), abs=1e-12)
    assert m["roc_auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    flagged = (p > 0.5).astype(int)
    assert m["recall"] == pytest.approx(recall_score(y, flagged))
    tn, fp, _, _ = confusion_matrix(y, flagged, labels=[0, 1]).ravel()
    assert m["false_alarm_rate"] == pytest.approx(fp / (fp + tn))


def test_average_precision_rewards_ranking_the_rare_defect_first() -> None:
    y = [0] * 99 + [1]
    first = [0.1] * 99 + [0.9]
    last = [0.5] * 99 + [0.1]
    assert average_precision(y, first) == 1.0
    assert average_precision(y, last) == pytest.approx(0.01)  # found only at the very end


def test_detection_metrics_flag_strictly_above_the_threshold_and_say_what_is_undefined() -> None:
    m = detection_metrics([0, 1, 1], [0.5, 0.5, 0.6], 0.5)
    assert m["recall"] == 0.5 and m["false_alarm_rate"] == 0.0
    reasons: list[str] = []
    only_good = detection_metrics([0, 0], [0.2, 0.7], 0.5, reasons=reasons)
    assert math.isnan(only_good["recall"]) and math.isnan(only_good["average_precision"])
    assert only_good["false_alarm_rate"] == 0.5
    assert any("recall is undefined: the samples hold no defect" in r for r in reasons)
    with pytest.warns(MetricWarning) as caught:
        detection_metrics([1, 1], [0.2, 0.7], 0.5)
    said = [str(w.message) for w in caught]
    assert "false_alarm_rate is undefined: the samples hold no good part" in said
    assert "roc_auc is undefined: the samples hold only class 1" in said
    with pytest.raises(ValueError, match="threshold must be a number in \\[0, 1\\]"):
        detection_metrics([0, 1], [0.2, 0.7], 1.5)
    with pytest.raises(ValueError, match="detection_metrics is for binary problems"):
        detection_metrics([0, 1, 2], np.full((3, 3), 1 / 3), 0.5)
    assert HIGHER_IS_BETTER["average_precision"] and not HIGHER_IS_BETTER["false_alarm_rate"]
    assert HIGHER_IS_BETTER["recall"]
