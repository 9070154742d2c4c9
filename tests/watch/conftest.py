"""Fixtures of the watch tests: the small plant and its tiny quality bundle (trained once)."""

from __future__ import annotations

from tests.hardening.conftest import plant, quality_bundle

__all__ = ["plant", "quality_bundle"]
