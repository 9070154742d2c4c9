"""SensorEncoder: shapes and masks, learning, pretraining, bundles."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from mfgtx.models import ClassLoss, MaskedPretraining, SensorEncoder, SensorEncoderConfig
from mfgtx.train import TrainConfig, fit
from tests.bundles import load as load_bundle
from tests.bundles import save as save_bundle


def cfg(**kw) -> SensorEncoderConfig:
    base = dict(n_channels=3, max_len=24, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.0)
    return SensorEncoderConfig(**(base | kw))


VARIANTS = [
    {},
    {"patch_len": 4},
    {"patch_len": 6, "stride": 3},
    {"channel_independent": True, "patch_len": 4},
    {"pooling": "cls", "positional": "rotary"},
    {"positional": "learned", "norm_first": False},
    {"tokens": "sensor"},
    {"tokens": "sensor", "pooling": "cls", "positional": "learned"},
]


@pytest.mark.parametrize("kw", VARIANTS)
def test_shapes_and_missing_values_give_finite_outputs(kw: dict) -> None:
    model = SensorEncoder(cfg(**kw)).eval()
    x = torch.randn(4, 24, 3)
    x[0, 3:9, 1] = float("nan")  # a gap
    x[1, :, 2] = float("nan")  # a sensor missing for the whole window
    x[2] = float("nan")  # nothing observed at all
    out = model(x)
    assert out.shape == (4, 1) and torch.isfinite(out).all()
    # the same data given as zeros plus an explicit mask gives the same prediction
    mask = ~torch.isnan(x)
    torch.testing.assert_close(model(torch.nan_to_num(x), mask), out)


def test_a_graph_traced_on_fully_observed_windows_still_masks_missing_tokens() -> None:
    model = SensorEncoder(cfg(tokens="sensor")).eval()
    full = torch.randn(2, 24, 3)
    seen = torch.ones_like(full, dtype=torch.bool)
    with torch.no_grad():
        traced = torch.jit.trace(model, (full, seen), check_trace=False)
        gap = seen.clone()
        gap[1, :, 2] = False  # sensor 2 of window 1 missing: its token is masked
        x = full.clone()
        x[1, :, 2] = 1000.0  # under the mask
        torch.testing.assert_close(traced(x, gap), model(x, gap))
        torch.testing.assert_close(traced(full, seen), model(full, seen))


def test_missing_values_are_not_read_as_zeros() -> None:
    model = SensorEncoder(cfg()).eval()
    x = torch.randn(1, 24, 3)
    mask = torch.ones_like(x, dtype=torch.bool)
    mask[0, 5:10, 0] = False
    a = model(x, mask)
    x2 = x.clone()
    x2[0, 5:10, 0] = 1000.0  # whatever sits under the mask does not matter
    torch.testing.assert_close(model(x2, mask), a)
    assert not torch.allclose(model(x2), a)  # unmasked, the value does matter


def test_classification_head_and_class_weights() -> None:
    config = cfg(task="classification", n_outputs=2)
    torch.manual_seed(0)
    model = SensorEncoder(config, loss=ClassLoss(class_weights=(1.0, 5.0)))
    torch.manual_seed(0)
    plain = SensorEncoder(config)
    batch = {"x": torch.randn(8, 24, 3), "y": torch.tensor([0, 1] * 4)}
    assert model(batch["x"]).shape == (8, 2)
    weighted = model.loss(batch)
    assert torch.isfinite(weighted)
    # the weights shape the loss, not the model: same weights, same logits, another loss
    torch.testing.assert_close(model(batch["x"]), plain(batch["x"]))
    logits = plain(batch["x"]).float()
    expected = F.cross_entropy(logits, batch["y"], weight=torch.tensor([1.0, 5.0]))
    torch.testing.assert_close(weighted, expected)
    assert not torch.allclose(weighted, plain.loss(batch))
    assert "class_weights" not in model.state_dict()  # a bundle keeps no loss


@pytest.mark.parametrize(
    ("kw", "weights", "match"),
    [
        ({}, (1.0, 2.0), "class_weights needs task='classification'"),
        ({"task": "classification", "n_outputs": 3}, (1.0, 2.0), "one weight per class \\(3\\)"),
        ({"task": "classification", "n_outputs": 2}, (1.0, 0.0), "must be positive"),
    ],
)
def test_class_weights_must_fit_the_classifier(kw, weights, match) -> None:
    with pytest.raises(ValueError, match=match):
        SensorEncoder(cfg(**kw), loss=ClassLoss(class_weights=weights))


def test_quantiles_are_ordered_and_trained() -> None:
    model = SensorEncoder(cfg(quantiles=(0.1, 0.5, 0.9), target_scale=10.0))
    x = torch.randn(5, 24, 3)
    q = model.forward_quantiles(x)
    assert q.shape == (5, 1, 3) and (q[..., 1:] >= q[..., :-1]).all()
    assert torch.isfinite(model.loss({"x": x, "y": torch.randn(5, 1)}))


@pytest.mark.slow
def test_overfits_a_tiny_batch() -> None:
    torch.manual_seed(0)
    model = SensorEncoder(cfg(patch_len=4))
    x, y = torch.randn(16, 24, 3), torch.randn(16, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = model.loss({"x": x, "y": y}).item()
    for _ in range(150):
        loss = model.loss({"x": x, "y": y})
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05 * first


class Data(torch.utils.data.Dataset):
    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(24.0)
        phase = torch.rand(n, 1, 1, generator=g) * 6
        self.x = torch.sin(t[None, :, None] / 3 + phase) + 0.05 * torch.randn(n, 24, 3, generator=g)
        self.y = phase[:, 0]  # (n, 1)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": self.x[i], "observed": torch.ones(24, 3, dtype=torch.bool), "y": self.y[i]}


@pytest.mark.slow
def test_pretraining_then_fine_tuning() -> None:
    torch.manual_seed(0)
    model = SensorEncoder(cfg(patch_len=4))
    pre = MaskedPretraining(model, mask_ratio=0.4)
    data, val = Data(64, seed=1), Data(16, seed=2)
    train = TrainConfig(epochs=4, batch_size=16, lr=3e-3, progress="off", precision="fp32")
    before = {k: v.clone() for k, v in model.encoder.state_dict().items()}
    with torch.no_grad():
        initial = pre.loss(
            {"x": val.x, "observed": torch.ones_like(val.x, dtype=torch.bool)}
        ).item()
    result = fit(pre, data, val, TrainConfig(**(train.to_dict() | {"epochs": 8})))
    assert result.best_val_loss < 0.85 * initial  # masked patches are rebuilt
    after = model.encoder.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the shared encoder learned
    fine = fit(model, data, val, train)  # fine-tune the same encoder with its task head
    assert fine.best_val_loss < fine.history[0]["train_loss"]


def test_fused_kernel_in_training_and_weights_do_not_change_predictions() -> None:
    model = SensorEncoder(cfg(patch_len=4))
    batch = {"x": torch.randn(4, 24, 3), "y": torch.randn(4, 1)}
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        model.loss(batch).backward()
    model.eval()
    before = model(batch["x"])
    weights = model.attention_weights(batch["x"])
    assert len(weights) == 2 and weights[0].shape == (4, 2, 6, 6)
    torch.testing.assert_close(model(batch["x"]), before)


def test_bundle_round_trip_gives_identical_predictions(tmp_path: Path) -> None:
    model = SensorEncoder(cfg(patch_len=4, quantiles=(0.1, 0.9), target_scale=125.0)).eval()
    x = torch.randn(3, 24, 3)
    path = save_bundle(tmp_path / "rul", model, metrics={"rmse": 12.0})
    loaded = load_bundle(path)
    assert loaded.config == model.config
    assert torch.equal(loaded.model(x), model(x))
    assert torch.equal(loaded.model.forward_quantiles(x), model.forward_quantiles(x))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"n_channels": 0}, "n_channels must be a positive integer"),
        ({"task": "classification", "n_outputs": 1}, "n_outputs >= 2"),
        ({"quantiles": (0.5, 1.2)}, "quantiles"),
        ({"d_model": 10, "n_heads": 3}, "d_model=10 is not divisible by n_heads=3"),
        ({"patch_len": 30}, "patch_len=30 exceeds max_len=24"),
        ({"tokens": "sensor", "patch_len": 4}, "tokens='sensor' makes one token per sensor"),
        ({"tokens": "patch"}, "tokens must be 'time' or 'sensor'"),
    ],
)
def test_config_errors(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cfg(**kw)


def test_input_errors() -> None:
    model = SensorEncoder(cfg())
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, C=3\), found \(2, 24, 4\)"):
        model(torch.randn(2, 24, 4))
    with pytest.raises(
        ValueError, match=r"window length 30 must be in \[patch_len=1, max_len=24\]"
    ):
        model(torch.randn(2, 30, 3))


def test_sensor_tokens_pad_short_windows_with_missing_steps() -> None:
    model = SensorEncoder(cfg(tokens="sensor")).eval()
    assert model.config.n_patches(24) == 3  # one token per sensor
    x = torch.randn(2, 18, 3)
    padded = torch.cat([torch.full((2, 6, 3), float("nan")), x], dim=1)
    torch.testing.assert_close(model(x), model(padded))
    assert len(model.attention_weights(x)) == 2
    assert model.attention_weights(x)[0].shape == (2, 2, 3, 3)  # (B, H, sensors, sensors)


def test_sensor_tokens_pretrain_by_rebuilding_hidden_sensors() -> None:
    model = SensorEncoder(cfg(tokens="sensor"))
    pre = MaskedPretraining(model, mask_ratio=0.5)
    x = torch.randn(4, 24, 3)
    recon = pre.predict({"x": x})
    assert recon.shape == (4, 3, 24)  # every sensor's whole window
    assert torch.isfinite(pre.loss({"x": x}))
