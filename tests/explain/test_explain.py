"""mfgtx.explain: maps, rollout, deletion test, overlap, figures with the notice."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mfgtx.explain import (
    KIND,
    NOTICE,
    attention_figure,
    attention_maps,
    attention_rollout,
    deletion_figure,
    deletion_test,
    overlap_score,
    query_key_figure,
    run_deletion,
)
from mfgtx.models import SensorEncoder, SensorEncoderConfig


def cfg(**kw) -> SensorEncoderConfig:
    base = dict(n_channels=3, max_len=24, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.1)
    return SensorEncoderConfig(**(base | kw))


# ---------------------------------------------------------------------------- rollout


def test_rollout_rows_sum_to_one_and_masked_keys_get_nothing() -> None:
    g = torch.Generator().manual_seed(0)
    layers = [torch.softmax(torch.randn(3, 2, 6, 6, generator=g), -1) for _ in range(3)]
    key_mask = torch.ones(3, 6, dtype=torch.bool)
    key_mask[1, 4:] = False
    r = attention_rollout(layers, key_mask)
    torch.testing.assert_close(r.sum(-1), torch.ones(3, 6))
    assert torch.all(r[1, :4, 4:] == 0)  # real tokens never draw on masked ones


def test_rollout_of_uniform_attention_is_known() -> None:
    # one layer of uniform attention over 4 tokens: (A + I) / 2 = 1/8 + I/2
    u = torch.full((1, 1, 4, 4), 0.25)
    expected = torch.full((4, 4), 0.125) + 0.5 * torch.eye(4)
    torch.testing.assert_close(attention_rollout([u])[0], expected)
    with pytest.raises(ValueError, match="at least one layer"):
        attention_rollout([])


# ---------------------------------------------------------------------------- maps

SHAPES = [
    ({}, 24, 24, "time step"),
    ({"patch_len": 4}, 6, 6, "patch"),
    ({"patch_len": 6, "stride": 3, "pooling": "cls"}, 8, 7, "patch"),
    ({"tokens": "sensor"}, 3, 3, "sensor"),
    ({"channel_independent": True, "patch_len": 4}, 6, 6, "patch"),
]


@pytest.mark.parametrize(("kw", "n", "m", "axis"), SHAPES)
def test_maps_have_the_documented_shapes(kw, n, m, axis) -> None:
    model = SensorEncoder(cfg(**kw))
    x = torch.randn(2, 24, 3)
    maps = attention_maps(model, x)
    assert maps.kind == KIND == "non-causal diagnostic" and maps.notice == NOTICE
    assert maps.axis == axis and len(maps.layers) == 2
    assert maps.layers[0].shape == (2, 2, n, n)  # (B, H, N, S) including a CLS token
    assert maps.query.shape == (2, 2, 2, m)  # (B, L, H, M) input tokens only
    assert maps.rollout.shape == maps.key_mask.shape == (2, m)
    assert maps.query_key(1, 0).shape == (2, n, n)
    if axis != "sensor":
        assert maps.per_step(maps.rollout, 24).shape == (2, 24)
    if kw.get("pooling") != "cls":  # no CLS: the mean query's weights sum to 1
        torch.testing.assert_close(maps.query.sum(-1), torch.ones(2, 2, 2))


@pytest.mark.parametrize("kw", [s[0] for s in SHAPES])
def test_predictions_with_maps_equal_predictions_without(kw) -> None:
    model = SensorEncoder(cfg(**kw)).train()  # dropout on: extraction must not use it
    x = torch.randn(4, 24, 3)
    x[0, 2:7, 1] = float("nan")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    maps = attention_maps(model, x)
    assert model.training  # the mode is restored
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(maps.prediction, model(x), atol=1e-5, rtol=0)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_missing_steps_hold_no_attention() -> None:
    model = SensorEncoder(cfg())
    x = torch.randn(1, 24, 3)
    x[0, :5] = float("nan")  # nothing observed in the first 5 steps
    maps = attention_maps(model, x)
    assert not maps.key_mask[0, :5].any()
    assert torch.all(maps.query[0, :, :, :5] == 0) and torch.all(maps.rollout[0, :5] == 0)


def test_unsupported_model_is_named() -> None:
    with pytest.raises(TypeError, match="no attention maps for Linear"):
        attention_maps(torch.nn.Linear(2, 2), torch.randn(1, 2))


# ---------------------------------------------------------------------------- deletion


def test_deletion_finds_the_positions_the_output_depends_on() -> None:
    # a synthetic model: the score is the sum of inputs 3 and 11 only
    x = torch.randn(16, 20).abs() + 1.0

    def score(keep: torch.Tensor) -> torch.Tensor:
        return (x * keep)[:, [3, 11]].sum(1)

    pointing = torch.zeros(16, 20)
    pointing[:, [3, 11]] = 1.0
    good = run_deletion(score, pointing, fraction=0.1, n_random=20)
    assert good.removed.tolist() == [2] * 16
    assert good.attended > 5 * good.random_mean  # the known positions matter more
    # a map pointing elsewhere moves nothing: the test says so
    wrong = run_deletion(score, 1.0 - pointing, fraction=0.1, n_random=20)
    assert wrong.attended == 0.0 < wrong.random_mean


def test_deletion_on_the_sensor_encoder_and_its_sentence() -> None:
    torch.manual_seed(0)
    model = SensorEncoder(cfg(patch_len=4, task="classification", n_outputs=2))
    x = torch.randn(3, 24, 3)
    maps = attention_maps(model, x)
    result = deletion_test(model, x, maps, fraction=0.2, n_random=5)
    assert result.removed.tolist() == [1, 1, 1]  # 20% of 6 patches
    assert result.random_change.shape == (5, 3)
    assert torch.isfinite(result.attended_change).all()
    assert result.sentence().startswith("masking the 20% most-attended patches moved the ")
    assert json.loads(json.dumps(result.to_dict()))["draws"] == 5
    sensor = SensorEncoder(cfg(tokens="sensor"))
    r = deletion_test(sensor, x, attention_maps(sensor, x), which="layer", fraction=0.3)
    assert r.unit == "sensors" and r.removed.tolist() == [1, 1, 1]


def test_deletion_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\)"):
        run_deletion(lambda keep: keep.sum(1).double(), torch.ones(1, 4), fraction=1.0)


# ---------------------------------------------------------------------------- overlap


def test_overlap_is_one_for_the_mask_itself_and_half_for_noise() -> None:
    rng = np.random.default_rng(0)
    masks = np.zeros((200, 16, 16), dtype=bool)
    for m in masks:
        r, c = rng.integers(0, 12, 2)
        m[r : r + 4, c : c + 4] = True
    exact = overlap_score(masks.astype(float), masks)
    assert exact.pointing_game == 1.0 and exact.auroc == 1.0 and exact.images == 200
    noise = overlap_score(rng.random(masks.shape), masks)
    assert abs(noise.auroc - 0.5) < 0.03 and noise.pointing_game < 0.2


def test_overlap_skips_images_without_a_region_and_checks_shapes() -> None:
    masks = np.zeros((2, 4, 4), dtype=bool)
    masks[0, 0, 0] = True
    assert overlap_score(np.ones((2, 4, 4)), masks).skipped == 1
    with pytest.raises(ValueError, match="one shape"):
        overlap_score(np.ones((2, 4, 4)), masks[:, :2])


# ---------------------------------------------------------------------------- figures


def _spec(fig) -> str:
    return json.dumps(fig.to_plotly_json(), default=str)


def test_every_figure_carries_the_notice_and_a_fixed_scale() -> None:
    model = SensorEncoder(cfg(patch_len=4))
    x = torch.randn(2, 24, 3)
    maps = attention_maps(model, x)
    check = deletion_test(model, x, maps, n_random=3)
    figures = [
        attention_figure(maps, 1),
        attention_figure(maps, 0, which="layer", layer=0),
        query_key_figure(maps, 0, layer=1, head=1),
        deletion_figure(check),
    ]
    first_line = NOTICE[:60]
    for fig in figures:
        spec = fig.to_plotly_json()
        assert spec["layout"]["meta"]["kind"] == KIND
        texts = " ".join(a["text"] for a in spec["layout"]["annotations"]).replace("<br>", " ")
        assert first_line in texts
        assert KIND in spec["layout"]["title"]["text"]
        for trace in spec["data"]:
            if trace["type"] == "heatmap":
                assert (trace["zmin"], trace["zmax"]) == (0.0, 1.0)
        lower = _spec(fig).lower()
        assert "explanation" not in lower and "importance" not in lower
