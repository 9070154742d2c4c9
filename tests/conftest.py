"""Shared fixtures: deterministic seeds, fp32 default."""

from __future__ import annotations

import signal
import warnings

import pytest
import torch

_STOP = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _signal_dispositions(request: pytest.FixtureRequest):
    """Each test leaves the stop signals as it found them. A test (or a library it drives)
    that left SIGINT ignored made every later child process ignore Ctrl-C too (an ignored
    disposition survives exec, and mfgtx keeps a starter's SIG_IGN, as nohup asks): the
    SIGINT test of tests/cli/test_signals.py then hung in CI's random order. The leak is
    undone and named, so it shows instead of breaking a test far away."""
    before = {s: signal.getsignal(s) for s in _STOP}
    yield
    changed = [s for s in _STOP if signal.getsignal(s) != before[s]]
    for s in changed:
        signal.signal(s, before[s])
    if changed:
        names = ", ".join(signal.Signals(s).name for s in changed)
        warnings.warn(f"{request.node.nodeid} left {names} changed; restored", stacklevel=1)


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


@pytest.fixture
def pg_schema():
    """An engine on the test PostgreSQL (``MFGTX_TEST_PG_URL``) whose tables live in a schema
    of their own, dropped afterwards: other tests share the database. Skips without it."""
    import os
    import uuid

    import sqlalchemy as sa

    url = os.environ.get("MFGTX_TEST_PG_URL")
    if not url:
        pytest.skip("MFGTX_TEST_PG_URL is not set")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    engine = sa.create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
