"""DefectViT: shapes, positions, stochastic depth, the small-defect guard, training, bundles."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from mfgtx.calibration import CalibrationWarning, TemperatureScaler, choose_threshold
from mfgtx.images import ImageDataset
from mfgtx.metrics import log_loss
from mfgtx.models import ClassLoss, DefectSizeGuard, DefectSizeWarning, DefectViT, ViTConfig
from mfgtx.train import TrainConfig, fit, predict
from tests.bundles import load as load_bundle
from tests.bundles import save as save_bundle

TINY = ViTConfig(
    image_size=32, patch_size=8, in_chans=1, num_classes=3, d_model=16, n_heads=2, n_layers=2,
    d_ff=32, dropout=0.0, stem="linear",
)  # fmt: skip


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from threads; on a shared 2-core machine they lose a lot."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny(**changes) -> ViTConfig:
    return dataclasses.replace(TINY, **changes)


def test_vit_tiny_config_is_valid() -> None:
    cfg = ViTConfig(
        image_size=224, patch_size=16, in_chans=1, num_classes=6, d_model=192, n_heads=3,
        n_layers=12, d_ff=768, dropout=0.0, stem="linear",
    )  # fmt: skip
    assert cfg.n_patches == 196
    model = DefectViT(cfg)
    n = sum(p.numel() for p in model.parameters())
    assert 5.3e6 < n < 5.6e6  # ViT-Tiny size


@pytest.mark.parametrize("stem", ["linear", "conv"])
@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_logits_shape_for_several_image_sizes(stem, positional, pooling) -> None:
    model = DefectViT(tiny(stem=stem, positional=positional, pooling=pooling)).eval()
    for h, w in [(32, 32), (16, 16), (48, 64), (64, 24)]:
        assert model(torch.randn(2, 1, h, w)).shape == (2, 3)


def test_rgb_input_and_wrong_channels() -> None:
    model = DefectViT(tiny(in_chans=3))
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 3)
    with pytest.raises(ValueError, match=r"images must have shape \(B, C=3, H, W\)"):
        model(torch.randn(2, 1, 32, 32))
    with pytest.raises(ValueError, match="multiples of patch_size=8"):
        model(torch.randn(2, 3, 30, 32))


def test_learned_positions_are_used_unchanged_at_the_trained_size_and_resampled_else() -> None:
    model = DefectViT(tiny())
    assert model.positions(4, 4) is model.pos
    big = model.positions(8, 6)
    assert big.shape == (1, 48, 16)
    # bicubic resampling of a constant table stays constant
    with torch.no_grad():
        model.pos.fill_(0.3)
    assert torch.allclose(model.positions(8, 6), torch.full((1, 48, 16), 0.3), atol=1e-5)


def test_sinusoidal_positions_span_the_same_range_at_other_sizes() -> None:
    model = DefectViT(tiny(positional="sinusoidal"))
    p4 = model.positions(4, 4).reshape(4, 4, 16)
    p8 = model.positions(8, 8).reshape(8, 8, 16)
    assert torch.allclose(p8[::2, ::2], p4, atol=1e-6)  # every other position coincides
    assert not torch.allclose(p4[0, 0], p4[1, 0])


def test_predictions_depend_on_position() -> None:
    model = DefectViT(tiny(pooling="mean")).eval()
    x = torch.zeros(1, 1, 32, 32)
    x[..., :8, :8] = 1.0  # a bright patch top-left ...
    y = torch.zeros(1, 1, 32, 32)
    y[..., -8:, -8:] = 1.0  # ... or bottom-right
    assert not torch.allclose(model(x), model(y))


def test_stochastic_depth_is_random_in_training_and_off_in_eval() -> None:
    model = DefectViT(tiny(drop_path=0.5, n_layers=4))
    assert model.drop_rates[0] == 0.0 and model.drop_rates[-1] == 0.5
    x = torch.randn(8, 1, 32, 32)
    model.train()
    outs = [model(x) for _ in range(4)]
    assert any(not torch.allclose(outs[0], o) for o in outs[1:])
    model.eval()
    assert torch.equal(model(x), model(x))
    plain = DefectViT(tiny(drop_path=0.0, n_layers=4))
    plain.load_state_dict(model.state_dict())
    assert torch.allclose(plain.eval()(x), model(x), atol=1e-6)


def _old_drop_path(update: torch.Tensor, p: float) -> torch.Tensor:
    """What DefectViT did before the encoder had drop-path (main 78eb306)."""
    keep = torch.rand(update.shape[0], 1, 1, device=update.device) >= p  # (B, 1, 1)
    return update * keep.to(update.dtype) / (1.0 - p)


def _old_forward(
    model: DefectViT, rates: tuple[float, ...], images: torch.Tensor, need_weights: bool = False
):
    """DefectViT's forward before this change (main 78eb306): its own loop over the blocks of
    an encoder without drop-path (``model``), drop-path ``rates`` applied to
    ``block(x).output - x``."""
    assert model.drop_rates == (0.0,) * len(rates)
    x = model.tokens(images)
    if model.cls is not None:
        x = torch.cat([model.cls.expand(x.shape[0], -1, -1), x], dim=1)
    x = model.encoder.dropout(x)
    weights = []
    for block, p in zip(model.encoder.blocks, rates, strict=True):
        if need_weights:
            out = block(x, need_weights=True)
            x = out.output
            weights.append(out.weights)
        elif p > 0.0 and model.training:
            x = x + _old_drop_path(block(x).output - x, p)
        else:
            x = block(x).output
    x = model.encoder.norm(x)
    logits = model.head(x[:, 0] if model.cls is not None else x.mean(1))
    return (logits, tuple(weights)) if need_weights else logits


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"drop_path": 0.3, "n_layers": 3, "dropout": 0.1},
        {"pooling": "mean", "stem": "conv", "drop_path": 0.2},
        {"positional": "sinusoidal", "n_layers": 1, "drop_path": 0.1},
    ],
)
def test_encoder_forward_equals_the_block_loop_it_replaced(changes) -> None:
    """Parity: eval outputs and attention maps bit for bit; in training the same random
    stream gives the same outputs (stochastic depth of whole blocks, as before)."""
    torch.manual_seed(0)
    model = DefectViT(tiny(**changes)).eval()
    c = model.config
    rates = tuple(c.drop_path * i / max(c.n_layers - 1, 1) for i in range(c.n_layers))  # as before
    assert model.drop_rates == rates
    old = DefectViT(tiny(**changes | {"drop_path": 0.0})).eval()
    old.load_state_dict(model.state_dict())
    images = torch.randn(5, 1, 32, 32)
    assert torch.equal(model(images), _old_forward(old, rates, images))
    logits, weights = model.forward_with_attention(images)
    old_logits, old_weights = _old_forward(old, rates, images, need_weights=True)
    assert torch.equal(logits, old_logits) and len(weights) == len(old_weights)
    assert all(torch.equal(a, b) for a, b in zip(weights, old_weights, strict=True))
    model.train(), old.train()
    for seed in range(3):
        torch.manual_seed(seed)
        new = model(images)
        torch.manual_seed(seed)
        expected = _old_forward(old, rates, images)
        torch.testing.assert_close(new, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("image_size", 30, "not a multiple of patch_size"),
        ("in_chans", 2, "in_chans must be 1"),
        ("num_classes", 1, "num_classes must be >= 2"),
        ("stem", "resnet", "stem must be"),
        ("drop_path", 1.0, "drop_path must be in"),
        ("n_heads", 3, "not divisible by n_heads"),
        ("d_model", 18, "divisible by 4"),
    ],
)
def test_config_errors_name_the_field(field, value, match) -> None:
    changes = {field: value}
    if field == "d_model":
        changes |= {"positional": "sinusoidal", "n_heads": 2}
    with pytest.raises(ValueError, match=match):
        tiny(**changes)


def test_conv_stem_needs_power_of_two_patch() -> None:
    with pytest.raises(ValueError, match="power of two"):
        ViTConfig(image_size=36, patch_size=12, stem="conv", d_model=16, n_heads=2)


def test_class_weights_must_fit_the_classes() -> None:
    with pytest.raises(ValueError, match=r"one positive weight per class \(3\)"):
        DefectViT(tiny(), loss=ClassLoss(class_weights=(1.0, 2.0)))
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        ClassLoss(label_smoothing=1.0)


def _guard(image_size: int, patch_size: int, **kw) -> None:
    DefectSizeGuard(**kw).check(tiny(image_size=image_size, patch_size=patch_size))


def test_small_defect_guard_warns_below_half_a_patch_and_refuses_when_strict() -> None:
    # 512-px source images resized to 128: a 6-px defect becomes 1.5 px, patch 16 -> warn
    with pytest.warns(
        DefectSizeWarning, match=r"6 px in 512 px images resized to 128 px is 1.5 px"
    ):
        _guard(128, 16, min_defect_px=6, source_size=512)
    with pytest.raises(ValueError, match=r"image_size \(>= 683\)"):
        _guard(128, 16, min_defect_px=6, source_size=512, strict_defect_size=True)
    # exactly half a patch (32 px -> 8 px with patch 16) passes silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _guard(128, 16, min_defect_px=32, source_size=512)
        _guard(128, 8, min_defect_px=16, source_size=512)
        _guard(128, 16, min_defect_px=8)  # no resizing
        _guard(128, 16, min_defect_px=None, source_size=512)  # no guard
    with pytest.warns(DefectSizeWarning):
        _guard(128, 16, min_defect_px=31.9, source_size=512)
    with pytest.raises(ValueError, match="min_defect_px must be positive"):
        DefectSizeGuard(min_defect_px=0)
    with pytest.raises(ValueError, match="source_size must be a positive integer"):
        DefectSizeGuard(min_defect_px=4, source_size=0)


def _toy_images(n: int, seed: int) -> tuple[torch.Tensor, np.ndarray]:
    """Class 0 plain, class 1 a horizontal bar, class 2 a vertical bar, in [0, 1]."""
    g = torch.Generator().manual_seed(seed)
    x = 0.5 + 0.05 * torch.randn(n, 1, 32, 32, generator=g)
    y = np.arange(n) % 3
    for i in range(n):
        pos = int(torch.randint(4, 28, (), generator=g))
        if y[i] == 1:
            x[i, 0, pos - 1 : pos + 2, 4:28] = 0.9
        elif y[i] == 2:
            x[i, 0, 4:28, pos - 1 : pos + 2] = 0.1
    return x.clamp(0, 1), y


@pytest.fixture(scope="module")
def trained() -> tuple[DefectViT, ImageDataset]:
    torch.manual_seed(0)
    x, y = _toy_images(48, seed=1)
    data = ImageDataset(x, y)
    model = DefectViT(
        tiny(stem="conv", pooling="mean"), loss=ClassLoss(class_weights=(1.0, 1.0, 2.0))
    )
    fit(model, data, data, TrainConfig(epochs=20, batch_size=16, lr=5e-3, patience=None,
                                      progress="off", precision="fp32", warmup_fraction=0.1))  # fmt: skip
    return model, data


def test_overfits_a_tiny_set(trained) -> None:
    model, data = trained
    logits = predict(model, data)
    assert (logits.argmax(1).numpy() == data.y.numpy()).mean() == 1.0


def test_untrained_model_does_not_classify_the_tiny_set() -> None:
    x, y = _toy_images(48, seed=1)
    logits = predict(DefectViT(tiny(stem="conv", pooling="mean")), ImageDataset(x, y))
    assert (logits.argmax(1).numpy() == y).mean() < 0.7


def test_calibration_and_threshold_on_validation(trained) -> None:
    model, _ = trained
    x, y = _toy_images(60, seed=2)
    logits = predict(model, ImageDataset(x, y)).numpy()
    y[::6] = (y[::6] + 1) % 3  # label noise: an over-confident model must be softened
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        scaler = TemperatureScaler.fit(logits, y)
    assert scaler.temperature > 1.0
    proba = scaler.transform(logits)
    raw = TemperatureScaler(1.0).transform(logits)
    assert log_loss(y, proba) < log_loss(y, raw)
    assert proba.shape == (60, 3) and np.allclose(proba.sum(1), 1.0)
    defect = (y != 0).astype(int)  # class 0 is "no defect"
    p_defect = 1.0 - proba[:, 0]
    cheap = choose_threshold(p_defect, defect, cost_missed_defect=1.0)
    dear = choose_threshold(p_defect, defect, cost_missed_defect=50.0)
    assert dear.threshold <= cheap.threshold
    assert dear.fn <= cheap.fn


def test_save_load_round_trip_gives_identical_predictions(trained, tmp_path) -> None:
    model, data = trained
    save_bundle(tmp_path / "vit", model)
    loaded = load_bundle(tmp_path / "vit").model
    assert isinstance(loaded, DefectViT) and loaded.config == model.config
    assert torch.equal(predict(loaded, data), predict(model, data))


def test_conv_stem_runs_channels_last_with_the_state_dict_of_a_plain_one() -> None:
    torch.manual_seed(0)
    model = DefectViT(tiny(stem="conv")).eval()
    convs = [m for m in model.stem.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs and all(c.weight.is_contiguous(memory_format=torch.channels_last) for c in convs)
    x = torch.randn(2, 1, 32, 32)
    assert model.stem(x).is_contiguous(memory_format=torch.channels_last)
    plain = DefectViT(tiny(stem="conv")).eval()
    plain.stem.to(memory_format=torch.contiguous_format)
    plain.load_state_dict(model.state_dict())
    assert plain.state_dict().keys() == model.state_dict().keys()
    torch.testing.assert_close(plain(x), model(x), atol=1e-5, rtol=1e-5)
