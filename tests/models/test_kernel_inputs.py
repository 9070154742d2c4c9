"""What each model hands PyTorch's SDPA: the inputs that decide the kernel on CUDA.

On CUDA, FlashAttention takes no explicit mask: a model must pass no mask when every key is
observed and ``is_causal=True`` (not a mask) for causal attention; a padded batch goes to the
memory-efficient kernel. No GPU runs here, so these tests check the CPU-observable part: the
arguments of every ``scaled_dot_product_attention`` call, recorded by a spy around it.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

from mfgtx.models import (
    CausalForecaster,
    DefectViT,
    ForecasterConfig,
    SensorEncoder,
    SensorEncoderConfig,
    ViTConfig,
)


@pytest.fixture
def sdpa_calls(monkeypatch) -> list[dict[str, Any]]:
    """Every SDPA call of the test: whether a mask was passed, is_causal, query/key lengths."""
    calls: list[dict[str, Any]] = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
        calls.append(
            {"mask": attn_mask is not None, "causal": is_causal, "T": q.shape[-2], "S": k.shape[-2]}
        )
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    return calls


def encoder(**kw) -> SensorEncoder:
    base = dict(n_channels=3, max_len=16, d_model=16, n_heads=2, n_layers=2, d_ff=32)
    return SensorEncoder(SensorEncoderConfig(**(base | kw)))


ENCODERS = [
    {},
    {"patch_len": 4},
    {"tokens": "sensor"},
    {"pooling": "cls"},
    {"channel_independent": True, "patch_len": 4},
]


@pytest.mark.parametrize("kw", ENCODERS)
def test_sensor_encoder_passes_no_mask_when_every_token_is_observed(sdpa_calls, kw) -> None:
    model = encoder(**kw)
    x = torch.randn(4, 16, 3)
    model.loss({"x": x, "y": torch.randn(4, 1)}).backward()
    assert len(sdpa_calls) == 2 and not any(c["mask"] for c in sdpa_calls), sdpa_calls


@pytest.mark.parametrize("kw", ENCODERS)
def test_sensor_encoder_masks_a_token_with_no_observed_value(sdpa_calls, kw) -> None:
    model = encoder(**kw)
    x = torch.randn(4, 16, 3)
    x[1] = float("nan")  # a whole window missing: every one of its tokens is unobserved
    model.loss({"x": x, "y": torch.randn(4, 1)}).backward()
    assert len(sdpa_calls) == 2 and all(c["mask"] for c in sdpa_calls), sdpa_calls


def test_dropping_the_all_true_mask_changes_no_prediction() -> None:
    model = encoder(patch_len=4, pooling="cls").eval()
    x = torch.randn(4, 16, 3)
    t = model.tokens(x)
    with torch.no_grad():
        pooled, _ = model.encode(t.emb, t.key_mask)  # no mask reaches attention
        cls = model.cls.expand(4, -1, -1)
        emb = torch.cat([cls, t.emb], dim=1)
        forced = model.encoder(emb, key_mask=torch.ones(4, 5, dtype=torch.bool)).output[:, 0]
    torch.testing.assert_close(pooled, forced, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("head", ["direct", "autoregressive"])
@pytest.mark.parametrize("ci", [True, False])
def test_forecaster_training_is_causal_by_flag_never_by_mask(sdpa_calls, head, ci) -> None:
    c = ForecasterConfig(n_channels=2, context_length=16, horizon=8, patch_len=4, d_model=16,
                         n_heads=2, n_layers=2, d_ff=32, head=head, channel_independent=ci,
                         n_past_covariates=1, quantiles=(0.1, 0.9), dropout=0.2)  # fmt: skip
    model = CausalForecaster(c)
    batch = {"x": torch.randn(3, 16, 2), "y": torch.randn(3, 8, 2),
             "past_covariates": torch.randn(3, 16, 1)}  # fmt: skip
    model.loss(batch).backward()
    assert len(sdpa_calls) == 2
    assert all(c["causal"] and not c["mask"] and c["T"] == c["S"] for c in sdpa_calls)


def test_cached_generation_needs_no_mask_at_all(sdpa_calls) -> None:
    c = ForecasterConfig(n_channels=1, context_length=16, horizon=12, patch_len=4, d_model=16,
                         n_heads=2, n_layers=1, d_ff=32, head="autoregressive",
                         dropout=0.2, quantiles=())  # fmt: skip
    CausalForecaster(c).eval()(torch.randn(2, 16, 1))
    prefill, *steps = sdpa_calls
    assert prefill == {"mask": False, "causal": True, "T": 4, "S": 4}
    # one new position per step sees every cached key: no mask, not causal
    assert steps == [{"mask": False, "causal": False, "T": 1, "S": 5 + i} for i in range(2)]


@pytest.mark.parametrize("stem", ["linear", "conv"])
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_vit_attention_has_no_mask(sdpa_calls, stem, pooling) -> None:
    c = ViTConfig(image_size=16, patch_size=4, num_classes=3, d_model=16, n_heads=2,
                  n_layers=2, d_ff=32, stem=stem, pooling=pooling, drop_path=0.1,
                  dropout=0.0)  # fmt: skip
    model = DefectViT(c).train()
    model.loss({"images": torch.randn(4, 1, 16, 16), "y": torch.tensor([0, 1, 2, 0])}).backward()
    assert len(sdpa_calls) == 2 and not any(c["mask"] or c["causal"] for c in sdpa_calls)
