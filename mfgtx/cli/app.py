"""``mfgtx app | hash-password``: the Streamlit dashboard, started with its plant-network
settings pinned, and the hash of its sign-in password."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from mfgtx.cli.output import emit, log

__all__ = ["app", "hash_password", "launch_app"]


def app(args: argparse.Namespace) -> int:
    return launch_app(Path(args.path), args.results, args.port, address=args.address)


def launch_app(
    path: Path,
    results: str | None,
    port: int | None,
    data: str | None = None,
    address: str | None = None,
) -> int:
    """Run the dashboard at ``path`` until it ends; its exit code, or 2 if it is not there."""
    cmd = _app_command(path, port, address)
    if cmd is None:
        log.error(
            "the dashboard is not in this version: %s not found (app/, issue 9); "
            "the results are ready for it%s",
            path,
            f" in {results}" if results else "",
        )
        return 2
    log.info("starting the dashboard: %s", " ".join(cmd))
    return subprocess.call(cmd, env=_app_env(results, data))


def _app_command(path: Path, port: int | None, address: str | None = None) -> list[str] | None:
    """``streamlit run`` of the dashboard with every setting of its ``.streamlit/config.toml``
    passed as flags too, so that no environment variable or other config file can weaken
    them (binding to other interfaces is ``--address``, and then the app asks for sign-in)."""
    import tomllib

    if not path.is_file():
        return None
    cmd = [sys.executable, "-m", "streamlit", "run", str(path)]
    config = path.resolve().parent / ".streamlit" / "config.toml"
    settings: dict[str, object] = {
        "browser.gatherUsageStats": False,
        "server.headless": True,
        "server.address": "127.0.0.1",
    }
    if config.is_file():
        with config.open("rb") as f:
            sections = tomllib.load(f)
        settings.update({f"{s}.{k}": v for s, opts in sections.items() for k, v in opts.items()})
    if address is not None:
        settings["server.address"] = address
    if port is not None:
        settings["server.port"] = port
    for key, value in settings.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        cmd += [f"--{key}", text]
    return cmd


def _app_env(results: str | None, data: str | None) -> dict[str, str]:
    """The dashboard reads its folders from MFGTX_MODELS_DIR / MFGTX_DATA_DIR."""
    env = dict(os.environ)
    if results is not None:
        env["MFGTX_RESULTS"] = results
        models = Path(results) / "models"  # the demo's layout: <out>/models/<bundle>
        env["MFGTX_MODELS_DIR"] = str(models if models.is_dir() else Path(results))
    if data is not None:
        env["MFGTX_DATA_DIR"] = str(data)
    return env


def hash_password(args: argparse.Namespace) -> int:
    """``hash-password``: the line for ``app_password_hash`` in the dashboard's secrets file,
    from a password typed twice or piped in (from a secret store)."""
    import getpass

    from mfgtx.passwords import hash_password as hashed

    if sys.stdin.isatty():
        first = getpass.getpass("dashboard password: ")
        if getpass.getpass("again: ") != first:
            sys.stderr.write("mfgtx hash-password: the two passwords differ\n")
            return 2
    else:  # a password piped in (from a secret store)
        first = sys.stdin.readline().rstrip("\n")
    try:
        stored = hashed(first)
    except ValueError as e:
        sys.stderr.write(f"mfgtx hash-password: {e}\n")
        return 2
    emit(f'app_password_hash = "{stored}"')
    return 0
