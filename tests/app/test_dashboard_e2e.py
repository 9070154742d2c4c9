"""End to end in a real headless Chromium: ``streamlit run app/main.py``, every page, an upload.

Needs the system chromium (``apt-get install chromium``) and the ``e2e`` extra (playwright);
skips with the reason when either is missing. Screenshots and the server log go to
``test-output/e2e/`` (git-ignored).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .conftest import ROOT, SAMPLE

# slow: a real browser against a running dashboard
pytestmark = pytest.mark.slow

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
    ("", "Plant"),
    ("overview", "Overview"),
    ("quality", "Quality & RUL"),
    ("forecast", "Forecast"),
    ("defects", "Defect inspection"),
    ("evaluation", "Evaluation"),
    ("score", "Score a file"),
    ("compare", "Compare & promote"),
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


def _need_browser() -> None:
    """Skip without a browser, except under CI, where the browser tests must run."""
    missing = None
    if CHROMIUM is None:
        missing = "no system chromium on PATH (apt-get install chromium)"
    else:
        try:
            import playwright  # noqa: F401
        except ImportError:
            missing = "playwright missing (pip install -e '.[e2e]')"
    if missing and os.environ.get("CI"):
        pytest.fail(f"{missing}: .ci/run must install it")
    if missing:
        pytest.skip(missing)


@contextlib.contextmanager
def _streamlit(models_dir: Path, log: Path, *flags: str, env: dict[str, str] | None = None):
    """``streamlit run app/main.py`` on a free port with ``flags``; yields its URL."""
    port = _free_port()
    full_env = {
        **os.environ,
        "MFGTX_MODELS_DIR": str(models_dir),
        "MFGTX_DATA_DIR": str(SAMPLE),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        **(env or {}),
    }
    full_env.pop("MFGTX_APP_NO_AUTH", None)
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py",
           "--server.port", str(port), "--server.headless", "true", *flags]  # fmt: skip
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


OUT = ROOT / "test-output" / "e2e"


#: the demo bundles each page is shot with (page path -> model kind; "any": every bundle)
KIND_OF_PAGE = {"": None, "overview": None, "compare": None, "quality": "sensor",
                "forecast": "forecast", "defects": "vit",
                "evaluation": "sensor", "score": "any"}  # fmt: skip
#: an image of the data folder each defect bundle is shown with
DEFECT_IMAGE = {"sample_defects": "defects/images/000.png",
                "sample_inspection": "inspection/images/P01.png"}  # fmt: skip


@pytest.fixture(scope="module")
def server(request):
    """One dashboard on localhost over a copy of the demo's bundles, for this module's
    tests that need no sign-in (each opens its own browser)."""
    _need_browser()
    demo = request.getfixturevalue("demo")  # built only when the test can run
    models_dir = request.getfixturevalue("tmp_path_factory").mktemp("e2e") / "models"
    shutil.copytree(demo["out"] / "models", models_dir)
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "streamlit.log"
    with _streamlit(models_dir, log, "--server.address", "127.0.0.1") as url:
        yield url, OUT, log, demo["jobs"]


def _shots(jobs: dict) -> list[tuple[str, str, str | None]]:
    """``(url path, heading, bundle)``: every page with every demo bundle of its kind."""
    out = []
    for path, heading in PAGES:
        kind = KIND_OF_PAGE[path]
        names = [n for n, (k, _) in jobs.items() if kind in (k, "any")] if kind else []
        out += [(path, heading, n) for n in names or [None]]
    return out


def test_every_page_with_every_demo_bundle_in_a_real_browser(server):
    from playwright.sync_api import sync_playwright

    from .test_demo_bundles import LIBRARY_WORDS

    url, out, log, jobs = server
    shots = _shots(jobs)
    assert len(shots) >= 12, shots  # six pages, six demo bundles
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 3200})  # the whole page
            for path, heading, bundle in shots:  # bound to localhost: open without sign-in
                page.goto(f"{url}/{path}" + (f"?bundle={bundle}" if bundle else ""))
                _wait_ready(page, heading)
                if path == "defects" and bundle in DEFECT_IMAGE:
                    _pick_image(page, DEFECT_IMAGE[bundle], heading)
                text = page.inner_text("body")
                assert "Traceback" not in text and "internal error" not in text, text[-2000:]
                for word in LIBRARY_WORDS:
                    assert word not in text, (path, bundle, word)
                if bundle:  # the link opened the bundle it named
                    chosen = page.get_by_role("combobox", name="Model bundle").input_value()
                    assert chosen == bundle, (path, bundle, chosen)
                    assert f"bundle={bundle}" in page.url, page.url
                if path == "defects" and bundle == "sample_defects":
                    assert "P(defect)" in text and "decision:" in text, text[-2000:]
                    assert "Non-causal diagnostic" in text
                    _check_opacity_changes_pixels(page, heading, out)
                _wait_charts(page)
                name = f"{path or 'plant'}-{bundle}" if bundle else (path or "plant")
                page.screenshot(path=str(out / f"{name}.png"), full_page=True)
        finally:
            browser.close()
    assert "Traceback" not in log.read_text(), "a page failed; see the server log"


def test_a_refused_upload_is_named_and_a_good_one_drawn(server):
    from playwright.sync_api import sync_playwright

    url, out, log, _ = server
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.goto(f"{url}/defects?bundle=sample_defects")
            _wait_ready(page, "Defect inspection")
            page.locator("input[type='file']").first.set_input_files(
                [
                    {"name": "part.png", "mimeType": "image/png", "buffer": _png()},
                    {"name": "broken.png", "mimeType": "image/png", "buffer": b"nope"},
                ]
            )
            page.get_by_text("part.png: 48x32 px").wait_for(timeout=TIMEOUT_MS)
            page.get_by_text("broken.png: not an image").wait_for(timeout=TIMEOUT_MS)
            _wait_ready(page, "Defect inspection")
            page.screenshot(path=str(out / "defects-uploads.png"), full_page=True)
        finally:
            browser.close()
    assert "Traceback" not in log.read_text(), "a page failed; see the server log"


def _wait_charts(page) -> None:
    """Until plotly has drawn every chart of the page (it draws after the script run)."""
    page.wait_for_function(
        """() => [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
                   .every(e => e.querySelector('.main-svg'))""",
        timeout=TIMEOUT_MS,
    )
    page.wait_for_timeout(300)


def _pick_image(page, image: str, heading: str) -> None:
    """Choose ``image`` in the defect page's "pick images from the data folder" box."""
    box = page.locator("[data-testid='stMultiSelect']").first
    box.click()
    page.keyboard.type(image)
    page.get_by_role("option", name=image).first.click()
    page.keyboard.press("Escape")
    _wait_ready(page, heading)
    page.get_by_text("P(defect)").first.wait_for(timeout=TIMEOUT_MS)
    _wait_charts(page)


def _check_opacity_changes_pixels(page, heading: str, out: Path) -> None:
    """Moving the overlay opacity slider changes the drawn overlay's pixels."""
    import io

    import numpy as np
    from PIL import Image

    overlay = page.locator("[data-testid='stPlotlyChart']").nth(1)  # image, overlay, deletion
    overlay.scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # plotly draws after the script run ends
    before = np.asarray(Image.open(io.BytesIO(overlay.screenshot())).convert("RGB"), float)
    thumb = page.locator("[data-testid='stSlider'] input[type='range']").first
    thumb.focus()
    thumb.press("End")  # opacity 1.0
    _wait_ready(page, heading)
    page.wait_for_timeout(1000)
    overlay = page.locator("[data-testid='stPlotlyChart']").nth(1)
    after_png = overlay.screenshot(path=str(out / "defects-opacity-1.png"))
    after = np.asarray(Image.open(io.BytesIO(after_png)).convert("RGB"), float)
    assert thumb.get_attribute("value") == "1", thumb.get_attribute("value")
    assert before.shape == after.shape
    changed = np.abs(before - after).max(axis=2) > 8
    assert changed.mean() > 0.05, f"opacity 0.5 -> 1 changed {changed.mean():.1%} of the pixels"


def _assert_signed_out_everywhere(url: str, expect: str, shots: str) -> None:
    """Every page URL shows only the sign-in page (``expect`` in its text), no content."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            for path, _heading in PAGES:
                page.goto(f"{url}/{path}")
                _wait_ready(page, "mfgtx dashboard")
                page.get_by_text(expect).first.wait_for(timeout=TIMEOUT_MS)
                text = page.inner_text("body")
                for _, other in PAGES:  # no page's own heading, no chart, no table
                    assert not page.get_by_role("heading", name=other).count(), (path, text)
                assert not page.locator("[data-testid='stPlotlyChart']").count(), path
                assert not page.locator("[data-testid='stDataFrame']").count(), path
                assert "sample_quality" not in text and "L1-0001" not in text, path
                page.screenshot(path=str(OUT / f"{shots}-{path or 'plant'}.png"))
        finally:
            browser.close()


def test_every_page_refuses_without_sign_in_when_bound_beyond_localhost(request, tmp_path):
    _need_browser()
    models = request.getfixturevalue("models_dir")
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "streamlit-open.log"
    with _streamlit(models, log, "--server.address", "0.0.0.0") as url:
        _assert_signed_out_everywhere(url, "no sign-in is configured", "refused")
    assert "refused to serve" in log.read_text()


def test_every_page_asks_for_the_password_when_one_is_set(request, tmp_path):
    from playwright.sync_api import sync_playwright

    from mfgtx.passwords import hash_password

    _need_browser()
    models = request.getfixturevalue("models_dir")
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'app_password_hash = "{hash_password("line 3 nights", iterations=1000)}"\n')
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "streamlit-password.log"
    flags = ("--server.address", "0.0.0.0", "--secrets.files", str(secrets))
    with _streamlit(models, log, *flags) as url:
        _assert_signed_out_everywhere(url, "Password", "password")
        with sync_playwright() as pw:  # and the right password opens the page asked for
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1200})
                page.goto(f"{url}/")
                _wait_ready(page, "mfgtx dashboard")
                page.get_by_label("Password").first.fill("line 3 nights")
                page.get_by_role("button", name="Sign in").click()
                _wait_ready(page, "Plant")  # the first page; the session's sign-in holds
                page.get_by_role("link", name="Overview").first.click()  # a new URL would not
                _wait_ready(page, "Overview")
                assert "sample_quality" in page.inner_text("body")
            finally:
                browser.close()


def test_every_response_carries_the_security_headers(server) -> None:
    url = server[0]
    for path in ["", "quality", "_stcore/health", "favicon.png"]:
        try:
            with urllib.request.urlopen(f"{url}/{path}", timeout=10) as r:
                headers = {k.lower(): v for k, v in r.headers.items()}
        except urllib.error.HTTPError as e:  # a 404 must carry them too
            headers = {k.lower(): v for k, v in e.headers.items()}
        assert headers.get("x-frame-options") == "DENY", (path, headers)
        assert headers.get("x-content-type-options") == "nosniff", path
        assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), path
        assert headers.get("referrer-policy") == "no-referrer", path


@pytest.fixture
def plant_server(request, tmp_path):
    """A dashboard over the tiny trained bundle and a generated history of twelve hourly
    runs of lines L1..L3 by it and by a second bundle of the same job (the AppTest's)."""
    _need_browser()
    from mfgtx.artifacts import find_bundles

    from .test_plant_view import plant_history

    models = request.getfixturevalue("models_dir")
    bundle = next(b for b in find_bundles(models)[0] if b.path.name == "sample_quality")
    history = plant_history(tmp_path, bundle.bundle_id)
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "streamlit-plant.log"
    env = {"MFGTX_HISTORY": str(history)}
    with _streamlit(models, log, "--server.address", "127.0.0.1", env=env) as url:
        yield url, history, log


def test_plant_view_drill_down_and_promote_in_a_real_browser(plant_server):
    from playwright.sync_api import sync_playwright

    from .test_plant_view import OTHER

    url, _, log = plant_server
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(f"{url}/")  # the first page
            _wait_ready(page, "Plant")
            for line in ("L1", "L2", "L3"):  # a trend per line, its limit line drawn
                page.get_by_role("heading", name=f"Line {line}").first.wait_for()
            _wait_charts(page)
            assert page.locator("[data-testid='stPlotlyChart']").count() == 3
            assert page.locator("text=alarm above 0.8").count() == 3
            page.screenshot(path=str(OUT / "plant.png"), full_page=True)

            box = page.get_by_role("combobox", name="Open a lot").nth(1)  # line L2's
            box.click()
            page.get_by_role("option", name="L2-0007").click()
            _wait_ready(page, "Plant")
            page.get_by_role("button", name="Open lot page").nth(1).click()
            _wait_ready(page, "Quality & RUL")
            assert page.get_by_role("combobox", name="Lot").input_value() == "L2-0007"
            assert page.get_by_role("combobox", name="Line").input_value() == "L2"
            page.screenshot(path=str(OUT / "plant-drill-down.png"), full_page=True)

            page.goto(f"{url}/compare")
            _wait_ready(page, "Compare & promote")
            _wait_charts(page)
            assert "Where they disagree" in page.inner_text("body")
            page.get_by_role("button", name=f"Promote bundle {OTHER[:12]}").click()
            page.get_by_text("the plant view shows it from now on").wait_for(timeout=TIMEOUT_MS)
            page.goto(f"{url}/")
            _wait_ready(page, "Plant")
            assert f"promoted bundle bundle {OTHER[:12]}" in page.inner_text("body")
        finally:
            browser.close()
    assert "Traceback" not in log.read_text(), "a page failed; see the server log"


def shoot_plant_view(models_dir: Path, folder: Path, png: Path, *, days: float = 30) -> None:
    """A screenshot of the plant view over ``days`` of generated hourly scores ending this
    hour (the README's picture: ``docs/img/plant_view.png``)."""
    import sqlalchemy as sa
    from playwright.sync_api import sync_playwright

    from mfgtx.artifacts import find_bundles
    from mfgtx.history import example_history, example_job, open_history

    bundle = next(b for b in find_bundles(models_dir)[0] if b.path.name == "sample_quality")
    history = folder / "history.db"
    job = example_job(folder / "line_quality.yaml", name="line_quality", history=str(history))
    engine = sa.create_engine(f"sqlite:///{history}")
    example_history(open_history(engine, "history.db"), bundle_id=bundle.bundle_id,
                    job_file=str(job), days=days)  # fmt: skip
    engine.dispose()
    env = {"MFGTX_HISTORY": str(history)}
    with (
        _streamlit(
            models_dir, folder / "streamlit.log", "--server.address", "127.0.0.1", env=env
        ) as url,  # fmt: skip
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            page.goto(f"{url}/")
            _wait_ready(page, "Plant")
            _wait_charts(page)
            page.screenshot(path=str(png))
        finally:
            browser.close()


def test_plant_view_screenshot(request, tmp_path):
    """The README's screenshot, taken as the browser tests run the dashboard; copy
    ``test-output/e2e/plant_view.png`` to ``docs/img/`` to refresh it."""
    _need_browser()
    OUT.mkdir(parents=True, exist_ok=True)
    shoot_plant_view(request.getfixturevalue("models_dir"), tmp_path, OUT / "plant_view.png")
    assert (OUT / "plant_view.png").stat().st_size > 10_000
