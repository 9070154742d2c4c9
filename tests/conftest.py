"""Shared fixtures: deterministic seeds, fp32 default."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def datasets_dir():
    """The shared public datasets (``$MFGTX_DATASETS`` or ``../shared/datasets``); skip if absent."""
    import os
    from pathlib import Path

    root = Path(
        os.environ.get(
            "MFGTX_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"
        )
    )
    if not root.is_dir():
        pytest.skip(f"shared datasets not found at {root}")
    return root
