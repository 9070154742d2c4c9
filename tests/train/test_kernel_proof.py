"""Proof by PyTorch's own profiler events that every model trains on the CPU flash kernel.

For each model and each configuration a job file can ask for (``ModelSection``,
``ForecastSection``, ``VitSection`` in :mod:`mfgtx.jobfile.config`), one training step (loss,
backward, optimizer step) must run exactly one flash forward and one flash backward per
attention layer, and no math kernel, without a :class:`~mfgtx.nn.KernelWarning`. The proof is
two-sided: the last tests bypass SDPA in four ways (math kernel, hand-written softmax,
``attention()`` forced onto its explicit path, attention removed) and the proof must fail on
each. The older guard, ``sdpa_kernel(SDPBackend.FLASH_ATTENTION)`` around ``fit``
(``test_fit.py::test_fit_runs_on_the_flash_kernel``), passes all four.
"""

from __future__ import annotations

import importlib
import itertools
import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from kernels import assert_flash_training, assert_materialised_training
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

import mfgtx.nn.mha
from mfgtx.models import (
    CausalForecaster,
    ClassLoss,
    DefectViT,
    ForecasterConfig,
    MaskedPretraining,
    SensorEncoder,
    SensorEncoderConfig,
    ViTConfig,
)
from mfgtx.nn import AttentionOutput, KernelWarning, MultiHeadAttention, attention
from mfgtx.train import TrainConfig, fit

LAYERS = 2


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def training_step(model: nn.Module, batch: dict[str, Any]) -> Callable[[], None]:
    """One SGD step of ``model.loss``; fails on a KernelWarning."""
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model.train()

    def step() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error", KernelWarning)
            loss = model.loss(batch)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return step


# --- SensorEncoder: ModelSection (task, tokens, patch_len, quantiles) and model options ------


def encoder_configs() -> list[dict[str, Any]]:
    out = []
    for task, tokens, patch_len, quantiles in itertools.product(
        ("classification", "regression"), ("time", "sensor"), (1, 4), ((), (0.1, 0.9))
    ):
        if (tokens == "sensor" and patch_len != 1) or (quantiles and task != "regression"):
            continue
        out.append({"task": task, "tokens": tokens, "patch_len": patch_len, "quantiles": quantiles})
    return [
        *out,  # then options of the model that job files do not set
        {"pooling": "cls", "patch_len": 4},
        {"positional": "learned"},
        {"positional": "rotary", "norm_first": False},
        {"channel_independent": True, "patch_len": 4},
    ]


def encoder_batch(c: SensorEncoderConfig, gaps: bool) -> dict[str, torch.Tensor]:
    x = torch.randn(4, 16, 3)
    if gaps:  # a gap in one sensor and a whole window missing: the masked path
        x[0, 3:9, 1] = float("nan")
        x[2] = float("nan")
    y = torch.tensor([0, 1, 1, 0]) if c.task == "classification" else torch.randn(4, 1) * 50
    return {"x": x, "observed": ~torch.isnan(x), "y": y}


def encoder_of(kw: dict[str, Any]) -> SensorEncoder:
    base = dict(n_channels=3, max_len=16, d_model=16, n_heads=2, n_layers=LAYERS, d_ff=32,
                dropout=0.1, target_scale=50.0)  # fmt: skip
    if kw.get("task") == "classification":
        base |= {"n_outputs": 2, "target_scale": 1.0}
    return SensorEncoder(SensorEncoderConfig(**(base | kw)))


@pytest.mark.parametrize("gaps", [False, True], ids=["complete", "gaps"])
@pytest.mark.parametrize("kw", encoder_configs(), ids=str)
def test_sensor_encoder_trains_on_flash(kw: dict, gaps: bool) -> None:
    model = encoder_of(kw)
    assert_flash_training(training_step(model, encoder_batch(model.config, gaps)), LAYERS)


def test_masked_pretraining_trains_on_flash() -> None:
    model = MaskedPretraining(encoder_of({"patch_len": 4}))
    batch = encoder_batch(model.model.config, gaps=True)
    assert_flash_training(training_step(model, batch), LAYERS)


# --- CausalForecaster: ForecastSection (head, channel_independent, quantiles, linear_skip,
# covariates, patch_stride) and model options -------------------------------------------------


def forecaster_configs() -> list[dict[str, Any]]:
    out = []
    for head, ci, quantiles, skip, covariates in itertools.product(
        ("direct", "autoregressive"),
        (True, False),
        ((), (0.1, 0.5, 0.9)),
        ("off", "learned", "ridge"),
        (0, 1),
    ):
        if head == "autoregressive" and skip != "off":
            continue
        out.append({"head": head, "channel_independent": ci, "quantiles": quantiles,
                    "skip": skip, "n_past_covariates": covariates})  # fmt: skip
    return [
        *out,  # then options of the model that job files do not set
        {"head": "direct", "stride": 2},
        {"head": "autoregressive", "stride": 2, "n_future_covariates": 1},
        {"head": "autoregressive", "positional": "rotary", "revin": False},
        {"head": "direct", "positional": "learned", "norm_first": False},
    ]


def forecaster_of(kw: dict[str, Any]) -> tuple[CausalForecaster, dict[str, torch.Tensor]]:
    kw = dict(kw)
    skip = kw.pop("skip", "off")
    kw = {"quantiles": (), **kw}
    c = ForecasterConfig(n_channels=2, context_length=16, horizon=8, patch_len=4, d_model=16,
                         n_heads=2, n_layers=LAYERS, d_ff=32, dropout=0.1,
                         linear_skip=skip != "off", **kw)  # fmt: skip
    model = CausalForecaster(c)
    batch = {"x": torch.randn(3, 16, 2) * 4 + 9, "y": torch.randn(3, 8, 2) * 4 + 9}
    if c.n_past_covariates:
        batch["past_covariates"] = torch.randn(3, 16, 1)
    if c.n_future_covariates:
        batch["future_covariates"] = torch.randn(3, 24, 1)
    if skip == "ridge":  # what the job does: the ridge map on the training windows, frozen
        model.fit_linear_skip(batch["x"], batch["y"])
    return model, batch


@pytest.mark.parametrize("kw", forecaster_configs(), ids=str)
def test_forecaster_trains_on_flash(kw: dict) -> None:
    model, batch = forecaster_of(kw)
    assert_flash_training(training_step(model, batch), LAYERS)


# --- DefectViT: VitSection (stem, pooling, positional, drop_path, mode) ----------------------


def vit_configs() -> list[dict[str, Any]]:
    return [
        {"stem": stem, "pooling": pooling, "positional": positional, "drop_path": drop_path}
        for stem, pooling, positional, drop_path in itertools.product(
            ("conv", "linear"), ("cls", "mean"), ("learned", "sinusoidal"), (0.0, 0.2)
        )
    ] + [{"in_chans": 3, "stem": "conv"}, {"in_chans": 3, "stem": "linear", "drop_path": 0.2}]


def vit_of(kw: dict[str, Any]) -> tuple[DefectViT, dict[str, torch.Tensor]]:
    kw = {"stem": "linear", **kw}
    c = ViTConfig(image_size=16, patch_size=4, num_classes=3, d_model=16, n_heads=2,
                  n_layers=LAYERS, d_ff=32, dropout=0.1, **kw)  # fmt: skip
    images = torch.randn(4, c.in_chans, 16, 16)
    model = DefectViT(c, loss=ClassLoss(label_smoothing=0.1))
    return model, {"images": images, "y": torch.tensor([0, 1, 2, 0])}


@pytest.mark.parametrize("kw", vit_configs(), ids=str)
def test_vit_trains_on_flash(kw: dict) -> None:
    model, batch = vit_of(kw)
    assert_flash_training(training_step(model, batch), LAYERS)


# --- through the training engine ----------------------------------------------------------------


class _Items(torch.utils.data.Dataset):
    def __init__(self, batch: dict[str, torch.Tensor]) -> None:
        self.batch = batch

    def __len__(self) -> int:
        return len(next(iter(self.batch.values())))

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: v[i] for k, v in self.batch.items()}


def family_of(family: str) -> tuple[nn.Module, dict[str, torch.Tensor]]:
    if family == "encoder":
        model = encoder_of({"patch_len": 4})
        return model, encoder_batch(model.config, gaps=True)
    if family == "forecaster":
        return forecaster_of({"head": "autoregressive", "quantiles": (0.1, 0.9)})
    return vit_of({"stem": "conv"})


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("family", ["encoder", "forecaster", "vit"])
def test_fit_steps_run_the_kernel_the_rule_names(family: str, precision: str) -> None:
    """One epoch of ``fit``: one training batch (forward and backward) and one validation
    batch (forward only). In fp32 both run the flash kernel in every attention layer. Under
    bf16 autocast the training batch materialises its attention (the CPU flash kernel's
    bf16 backward is the slow part) and the validation batch runs the flash kernel."""
    model, batch = family_of(family)
    data = _Items(batch)
    n = len(data)
    tc = TrainConfig(epochs=1, batch_size=n, precision=precision, progress="off", seed=0)

    def run() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error", KernelWarning)
            fit(model, data, data, tc)

    if precision == "fp32":
        assert_flash_training(run, forwards=2 * LAYERS, backwards=LAYERS)
    else:
        assert_materialised_training(run, LAYERS, flash_forwards=LAYERS)


@pytest.mark.parametrize("family", ["encoder", "forecaster", "vit"])
def test_the_bf16_proof_fails_when_training_runs_the_flash_kernel(monkeypatch, family: str) -> None:
    model, batch = family_of(family)
    step = training_step(model, batch)

    def bf16_step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            step()

    assert_materialised_training(bf16_step, LAYERS)  # unpatched: the proof holds
    attention_module = importlib.import_module("mfgtx.nn.attention")  # not the function
    monkeypatch.setattr(attention_module, "_materialise", lambda *a: False)
    with pytest.raises(AssertionError, match="expected .softmax"):
        assert_materialised_training(bf16_step, LAYERS)


# --- the proof fails when SDPA is bypassed ------------------------------------------------------


def _math_kernel(monkeypatch) -> None:
    real = F.scaled_dot_product_attention

    def on_math(*args, **kw):
        with sdpa_kernel(SDPBackend.MATH):
            return real(*args, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", on_math)


def _hand_softmax(monkeypatch) -> None:
    def softmax_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        scores = q @ k.transpose(-2, -1) * (scale or 1.0 / math.sqrt(q.shape[-1]))
        if is_causal:
            scores = scores.masked_fill(~torch.ones_like(scores, dtype=torch.bool).tril(), -1e9)
        if attn_mask is not None:
            scores = (
                scores.masked_fill(~attn_mask, -1e9)
                if attn_mask.dtype == torch.bool
                else scores + attn_mask
            )
        return torch.softmax(scores, -1) @ v

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", softmax_attention)


def _explicit_path(monkeypatch) -> None:
    def with_weights(*args, **kw):
        return attention(*args, **(kw | {"need_weights": True}))

    monkeypatch.setattr(mfgtx.nn.mha, "attention", with_weights)


def _no_attention(monkeypatch) -> None:
    def values_only(self, query, key=None, value=None, **kw):
        src = query if key is None else (key if value is None else value)
        return AttentionOutput(self.out_proj(self.v_proj(src).mean(1, keepdim=True)), None)

    monkeypatch.setattr(MultiHeadAttention, "forward", values_only)


BYPASSES = {
    "math kernel": _math_kernel,
    "hand-written softmax": _hand_softmax,
    "explicit path": _explicit_path,
    "no attention": _no_attention,
}


@pytest.mark.parametrize("family", ["encoder", "forecaster", "vit"])
@pytest.mark.parametrize("bypass", list(BYPASSES))
def test_the_proof_fails_when_sdpa_is_bypassed(monkeypatch, family: str, bypass: str) -> None:
    if family == "encoder":
        model = encoder_of({"patch_len": 4})
        batch = encoder_batch(model.config, gaps=True)
    elif family == "forecaster":
        model, batch = forecaster_of({"head": "autoregressive"})
    else:
        model, batch = vit_of({"stem": "linear"})
    step = training_step(model, batch)
    assert_flash_training(step, LAYERS)  # unpatched: the proof holds
    BYPASSES[bypass](monkeypatch)

    def bypassed_step() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KernelWarning)  # the explicit path warns: not the point
            loss = model.loss(batch)
            loss.backward()

    with pytest.raises(AssertionError, match="expected 2 flash forward"):
        assert_flash_training(bypassed_step, LAYERS)
