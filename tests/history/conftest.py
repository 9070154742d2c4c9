"""Fixtures of the history tests: an empty history file, the small plant's quality bundle."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mfgtx.history import open_history
from mfgtx.jobs._sql import write_engine
from tests.hardening.conftest import plant, quality_bundle

__all__ = ["plant", "quality_bundle"]


@pytest.fixture
def store(tmp_path: Path):
    engine = write_engine(f"sqlite:///{tmp_path / 'history.db'}")  # as mfgtx score opens it
    yield open_history(engine, "history.db")
    engine.dispose()


def window_rows(lots: list[str], p_bad: float) -> pd.DataFrame:
    """Output rows of a quality classifier: two windows per lot."""
    rows = [
        {"lot": lot, "window_end": f"2026-03-0{i + 1}T00:00:00", "window_start": "x",
         "bundle_id": "b", "line": "L3", "p_bad": p_bad, "decision": "bad" if p_bad > 0.5 else "good"}
        for lot in lots
        for i in range(2)
    ]  # fmt: skip
    return pd.DataFrame(rows)
