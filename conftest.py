"""Root conftest: names available to every doctest in the package."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    doctest_namespace["torch"] = torch
