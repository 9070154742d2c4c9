"""End to end in a real headless Chromium: ``streamlit run app/main.py``, every page, an upload.

Needs the system chromium (``apt-get install chromium``) and the ``e2e`` extra (playwright);
skips with the reason when either is missing. Screenshots and the server log go to
``test-output/e2e/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import ROOT, SAMPLE

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = [  # (url path, heading)
    ("", "Overview"),
    ("quality", "Quality & RUL"),
    ("forecast", "Forecast"),
    ("defects", "Defect inspection"),
    ("evaluation", "Evaluation"),
]
TIMEOUT_MS = 120_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"no healthy streamlit after {limit:.0f} s:\n{log.read_text()[-3000:]}")


def _wait_ready(page, heading: str) -> None:
    app = "[data-testid='stApp']"
    page.wait_for_selector(f"{app}[data-test-connection-state='CONNECTED']", timeout=TIMEOUT_MS)
    page.get_by_role("heading", name=heading).first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_selector(f"{app}[data-test-script-state='notRunning']", timeout=TIMEOUT_MS)
    page.wait_for_function(
        "!document.querySelector(\"[data-testid='stSkeleton']\")", timeout=TIMEOUT_MS
    )


def _png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (48, 32), (90, 120, 150)).save(buf, "PNG")
    return buf.getvalue()


def _save_defect_bundle(path: Path) -> None:
    """A tiny (untrained) DefectViT bundle with a calibration, for the inspection page."""
    import torch

    from mfgtx.artifacts import save_bundle
    from mfgtx.calibration import Calibration, TemperatureScaler, ThresholdChoice
    from mfgtx.models import DefectViT, ViTConfig

    torch.manual_seed(0)
    config = ViTConfig(image_size=32, patch_size=8, num_classes=3, d_model=16, n_heads=2,
                       n_layers=1, d_ff=32)  # fmt: skip
    job = {"kind": "vit", "class_names": ["crack", "none", "pit"], "mean": 0.5, "std": 0.5}
    choice = ThresholdChoice(0.5, cost_missed_defect=5.0, cost_false_alarm=1.0, tp=1, fp=1,
                             tn=1, fn=1)  # fmt: skip
    cal = Calibration(TemperatureScaler(1.0), choice, good_class=1)
    save_bundle(path, DefectViT(config), calibration=cal, extra={"job": job})


@pytest.fixture
def server(request):
    if CHROMIUM is None:
        pytest.skip("no system chromium on PATH (apt-get install chromium)")
    pytest.importorskip("playwright", reason="playwright missing (pip install -e '.[e2e]')")
    trained = request.getfixturevalue("models_dir")  # trained only when the test can run
    models_dir = request.getfixturevalue("tmp_path") / "models"
    shutil.copytree(trained, models_dir)
    _save_defect_bundle(models_dir / "defects")
    out = ROOT / "test-output" / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log = out / "streamlit.log"
    env = {
        **os.environ,
        "MFGTX_MODELS_DIR": str(models_dir),
        "MFGTX_DATA_DIR": str(SAMPLE),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--server.headless", "true"]  # fmt: skip
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url, out, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_every_page_in_a_real_browser(server):
    from playwright.sync_api import sync_playwright

    url, out, log = server
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            for path, heading in PAGES:
                page.goto(f"{url}/{path}")
                _wait_ready(page, heading)
                text = page.inner_text("body")
                assert "Traceback" not in text and "internal error" not in text, text[-2000:]
                if path == "defects":
                    page.locator("input[type='file']").first.set_input_files(
                        [
                            {"name": "part.png", "mimeType": "image/png", "buffer": _png()},
                            {"name": "broken.png", "mimeType": "image/png", "buffer": b"nope"},
                        ]
                    )
                    page.get_by_text("part.png: 48x32 px").wait_for(timeout=TIMEOUT_MS)
                    page.get_by_text("broken.png: not an image").wait_for(timeout=TIMEOUT_MS)
                    _wait_ready(page, heading)
                    text = page.inner_text("body")
                    # the DefectViT bundle's prediction, with the map's notice beside it
                    page.get_by_text("probability").first.wait_for(timeout=TIMEOUT_MS)
                    text = page.inner_text("body")
                    assert "at the bundle's threshold" in text
                    assert "non-causal diagnostic" in text
                page.screenshot(path=str(out / f"{path or 'overview'}.png"), full_page=True)
        finally:
            browser.close()
    assert "Traceback" not in log.read_text(), "a page failed; see the server log"
