"""The dashboard's diagnostic charts on their own: flat maps labelled, plant labels, units."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import torch

from mfgtx.explain import KIND, NOTICE, run_deletion

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))
from _figures import (
    FLAT_LABEL,
    attention_bars,
    deletion_bars,
    deletion_sentence,
    is_flat,
    token_labels,
)


def _maps(weights: list[float], axis: str = "sensor", spans=None) -> SimpleNamespace:
    return SimpleNamespace(rollout=torch.tensor([weights]), axis=axis, spans=spans)


def test_a_flat_map_is_labelled_and_a_peaked_one_is_not() -> None:
    flat = _maps([0.2, 0.2001, 0.1999, 0.2, 0.2])
    peaked = _maps([0.6, 0.1, 0.1, 0.1, 0.1])
    assert is_flat(flat.rollout[0].numpy()) and not is_flat(peaked.rollout[0].numpy())
    names = ["a", "b", "c", "d", "e"]
    flat_title = attention_bars(flat, names, axis_title="sensor").layout.title.text
    peaked_title = attention_bars(peaked, names, axis_title="sensor").layout.title.text
    assert FLAT_LABEL in flat_title and FLAT_LABEL not in peaked_title
    assert KIND in flat_title and KIND in peaked_title
    fig = attention_bars(peaked, names, axis_title="sensor")
    assert fig.layout.meta["notice"] == NOTICE and not fig.layout.annotations
    assert fig.layout.yaxis.range[1] < 1.0  # the map's own scale, not 0..1


def test_labels_are_sensor_names_or_the_times_of_each_patch() -> None:
    assert token_labels(_maps([0.5, 0.5]), ["temp", "flow"], None) == ["temp", "flow"]
    spans = torch.tensor([[0, 2], [2, 4]])
    times = ["07:00", "07:01", "07:02", "07:03"]
    labels = token_labels(_maps([0.5, 0.5], axis="patch", spans=spans), [], times)
    assert labels == ["07:00 to 07:01", "07:02 to 07:03"]


def test_deletion_is_in_the_predictions_units() -> None:
    x = torch.tensor([[0.5, 0.1, 0.0, 0.0]])  # the score is the sum of the kept inputs
    result = run_deletion(lambda keep: (x * keep).sum(1), x, fraction=0.25, n_random=3)
    fig = deletion_bars(result, scale=100.0, unit="percentage points", watched="P(bad lot)")
    assert fig.layout.yaxis.title.text == "change of P(bad lot)<br>(percentage points)"
    assert fig.layout.yaxis.exponentformat == "none"  # 0.0004, never "400μ"
    assert abs(fig.data[0].y[0] - 50.0) < 1e-9  # 0.5 of probability = 50 points
    text = deletion_sentence(result, scale=100.0, unit="percentage points", watched="P(bad lot)")
    assert text.startswith("Masking the 25% most-attended tokens moved P(bad lot) by 50.00")
    assert "class 1" not in text


def test_small_changes_keep_their_digits_in_words() -> None:
    from _figures import amount

    assert [amount(v) for v in (0.0, 3e-05, 0.00042, 0.034, 0.5, 12.345)] == [
        "0.00", "0.00003", "0.00042", "0.034", "0.50", "12.35"
    ]  # fmt: skip
