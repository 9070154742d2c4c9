"""A tiny bundleable model with a tied weight, a tuple config field and a non-contiguous
buffer; a saved bundle of it; and ``reseal`` to edit a bundle and recompute its checksums."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from mfgtx.artifacts import save_bundle
from mfgtx.nn import Encoder, TransformerConfig


@dataclass(frozen=True)
class TinyConfig:
    d_in: int = 4
    d_model: int = 8
    n_heads: int = 2
    n_layers: int = 1
    n_codes: int = 5
    quantiles: tuple[float, ...] = (0.1, 0.5, 0.9)


class _Mix(nn.Module):
    """Mixes the sensors through a fixed matrix kept as a non-contiguous buffer."""

    def __init__(self, d_in: int) -> None:
        super().__init__()
        self.register_buffer("matrix", torch.randn(d_in, d_in).t())

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.matrix


class TinyModel(nn.Module):
    """Sensors ``x (B, T, d_in)`` and state codes ``(B, T)`` -> quantiles and code logits."""

    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        c = self.config = config
        self.inp = nn.Linear(c.d_in, c.d_model)
        self.mix = _Mix(c.d_in)
        self.embed = nn.Embedding(c.n_codes, c.d_model)
        self.encoder = Encoder(
            TransformerConfig(
                d_model=c.d_model, n_heads=c.n_heads, n_layers=c.n_layers, d_ff=16, dropout=0.0
            )
        )
        self.head = nn.Linear(c.d_model, len(c.quantiles))
        self.code_head = nn.Linear(c.d_model, c.n_codes, bias=False)
        self.code_head.weight = self.embed.weight  # tied

    def forward(self, x: Tensor, codes: Tensor) -> Tensor:
        h = self.encoder(self.inp(self.mix(x)) + self.embed(codes)).output  # (B, T, D)
        return torch.cat([self.head(h), self.code_head(h)], dim=-1)  # (B, T, Q + n_codes)


@pytest.fixture
def tiny_model() -> TinyModel:
    return TinyModel(TinyConfig()).eval()


@pytest.fixture
def inputs() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(2, 6, 4, generator=g), torch.randint(0, 5, (2, 6), generator=g)


@pytest.fixture
def bundle_path(tmp_path: Path, tiny_model: TinyModel) -> Path:
    return save_bundle(tmp_path / "bundle", tiny_model, metrics={"mae": 0.25})


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _reseal(path: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Apply ``edit`` to the manifest, then recompute every checksum as the format says."""
    manifest = json.loads((path / "manifest.json").read_text())
    if edit is not None:
        edit(manifest)
    for name in manifest.get("files", {}):
        data = (path / name).read_bytes()
        manifest["files"][name] = {"sha256": _sha256(data), "size": len(data)}
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    (path / "manifest.json").write_text(text)
    digests = {"manifest.json": _sha256(text.encode())}
    digests |= {name: _sha256((path / name).read_bytes()) for name in manifest.get("files", {})}
    (path / "checksum.sha256").write_text(
        "".join(f"{d}  {n}\n" for n, d in sorted(digests.items()))
    )


@pytest.fixture
def reseal() -> Callable[..., None]:
    return _reseal
