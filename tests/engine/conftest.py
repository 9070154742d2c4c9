"""One local Ray for the whole pytest session (``ray_local``): a Ray start costs seconds,
so every Ray test shares it; no test calls ``ray.init`` itself. Skips, with the reason, where
Ray is not installed (the ``mfgtx[ray]`` extra), except in CI (``$CI`` set), which installs it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ray_installed() -> object:
    """The ``ray`` module; skips where Ray is not installed, fails in CI (``$CI`` set: .ci/run
    installs the extra, and a skip there would hide a break)."""
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("Ray is not installed: pip install 'mfgtx[ray]'")
    return ray


@pytest.fixture(scope="session")
def ray_local(ray_installed) -> Iterator[object]:
    """The ``ray`` module, initialised once with 2 CPUs on this machine and shut down at the
    end of the session. Engines opened while it runs join it and leave it running."""
    ray = ray_installed
    if ray.is_initialized():  # pragma: no cover - a test broke the rule above
        raise RuntimeError("Ray was already running before the ray_local fixture started it")
    # The workers import mfgtx from this checkout, and the test modules' functions the way
    # pytest imports them (from tests/, its rootdir-relative package root).
    parts = (str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", ""))
    path = os.pathsep.join(p for p in parts if p)
    ray.init(
        address="local",  # a Ray of its own, never one another user started on this machine
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()


from tests.cli.conftest import plant  # noqa: E402,F401  # the small sample plant, per session
