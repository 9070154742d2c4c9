"""Fixtures of the hardening tests: the small sample plant, a tiny trained quality bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import plant, quality_job, summary, write_job

__all__ = ["plant", "quality_job", "summary", "write_job"]


@pytest.fixture(scope="session")
def quality_bundle(plant: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(job file, bundle)`` of a tiny quality classifier trained on the small plant."""
    from mfgtx.jobs import load_config, train

    out = tmp_path_factory.mktemp("hardening")
    job = write_job(out / "job.yaml", quality_job(plant, out))
    outcome = train("sensor", load_config(job))
    return job, Path(str(outcome.bundle))
