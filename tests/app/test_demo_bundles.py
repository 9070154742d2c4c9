"""One inference path: ``mfgtx.load(b).predict(x)`` gives the rows ``mfgtx score`` wrote, the
dashboard shows the same values, and every page works with every bundle the demo writes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import mfgtx
from mfgtx.jobfile.sources import read_frame, without_position

from .conftest import MAIN
from .test_dashboard import INTERNAL, _specs, _texts

# slow: the quick demo's bundles (the demo fixture trains four)
pytestmark = pytest.mark.slow

PAGES = ["views/overview.py", "views/quality.py", "views/forecast.py", "views/defects.py",
         "views/evaluation.py", "views/score.py"]  # fmt: skip
#: words of library internals that a page must never show
LIBRARY_WORDS = ("Traceback", "DataFrame", "ColumnMap", "KeyError", "NoneType", "class 1",
                 "on_short", "Pillow", "window + horizon", "q0.1", ".000000000", "task None",
                 "0 days 00:", "audit(..", "'label_time' column", "SplitSets")  # fmt: skip


def _sorted(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    frame = frame.copy()
    for k in keys:
        frame[k] = frame[k].astype(str)
    return frame.sort_values(list(keys)).reset_index(drop=True)


@pytest.mark.parametrize("name", ["sample_quality", "sample_rul", "sample_regimes",
                                  "sample_forecast", "sample_defects", "sample_inspection",
                                  "sample_chatter"])  # fmt: skip
def test_load_predict_equals_the_rows_score_wrote(demo, name) -> None:
    kind, job = demo["jobs"][name]
    predictor = mfgtx.load(job.bundle)
    assert predictor.kind.name == kind
    written = pd.read_parquet(job.score.output.path)
    if kind == "vit":
        rows = predictor.predict(job.score.images)
    else:
        frame = without_position(read_frame(job.score.source or job.data.source))
        rows = predictor.predict(
            frame, stride=job.score.stride, last_per_lot=job.score.last_per_lot
        )
    keys = predictor.keys
    assert list(rows.columns) == list(written.columns)
    pd.testing.assert_frame_equal(_sorted(rows, keys), _sorted(written, keys), check_dtype=False)


def _app(models: Path, page: str, bundle_key: str | None, bundle: str | None) -> AppTest:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page(page).run()
    if bundle_key is not None and bundle is not None:
        at.selectbox(key=bundle_key).set_value(bundle).run()
    return at


BUNDLE_KEYS = {
    "views/quality.py": "quality_bundle",
    "views/evaluation.py": "evaluation_bundle",
    "views/forecast.py": "forecast_bundle",
    "views/defects.py": "defect_bundle",
    "views/score.py": "score_bundle",
}
KIND_OF_PAGE = {
    "views/quality.py": "sensor",
    "views/evaluation.py": "sensor",
    "views/forecast.py": "forecast",
    "views/defects.py": "vit",
    "views/score.py": "any",
}


@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_with_every_demo_bundle(demo_env, page) -> None:
    names = [n for n, (k, _) in demo_env["jobs"].items() if KIND_OF_PAGE.get(page) in (k, "any")]
    for bundle in names or [None]:
        at = _app(demo_env["out"], page, BUNDLE_KEYS.get(page), bundle)
        assert not at.exception, (page, bundle, at.exception)
        # every demo bundle finds its data: no red box but the verdict's own ("do not rely")
        verdict = ("**How far to trust", "**Verdict.**")
        problems = [t for t in _texts(at.error) if not t.startswith(verdict)]
        assert not problems, (page, bundle, problems)
        shown = " ".join(
            _texts(at.error) + _texts(at.warning) + _texts(at.markdown) + _texts(at.caption)
            + _texts(at.success) + _texts(at.info) + [m.label + m.value for m in at.metric]
        )  # fmt: skip
        shown += " ".join(df.value.to_csv() for df in at.dataframe)  # tables too: task words, gaps
        assert INTERNAL not in shown, (page, bundle, shown)
        for word in LIBRARY_WORDS:
            assert word not in shown, (page, bundle, word, shown)
        assert at.title, (page, bundle)


def test_quality_page_shows_the_scored_probability(demo_env) -> None:
    job = demo_env["jobs"]["sample_quality"][1]
    written = pd.read_parquet(job.score.output.path)
    at = _app(demo_env["out"], "views/quality.py", "quality_bundle", "sample_quality")
    lot = at.selectbox(key="quality_lot").value
    last = written[written["lot"] == lot].sort_values("window_end").iloc[-1]
    shown = at.metric[0].value
    assert shown == f"{last['p_bad']:.1%}", (shown, last["p_bad"])


def test_forecast_page_draws_the_scored_forecast(demo_env) -> None:
    job = demo_env["jobs"]["sample_forecast"][1]
    written = pd.read_parquet(job.score.output.path)  # last_per_lot: the latest origin
    at = _app(demo_env["out"], "views/forecast.py", "forecast_bundle", "sample_forecast")
    lot = at.selectbox(key="forecast_lot").value
    sensor = at.multiselect(key="forecast_sensors").value[0]
    import base64

    y = _specs(at)[0]["data"][-1]["y"]  # the forecast line, as plotly encodes arrays
    drawn = (
        np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"])
        if isinstance(y, dict)
        else np.asarray(y, dtype=float)
    )
    rows = written[(written["lot"] == lot) & (written["sensor"] == sensor)].sort_values("step")
    n = len(drawn)
    assert n > 0 and np.allclose(drawn, rows["q50"].to_numpy()[:n])


def test_defect_page_shows_the_scored_probability(demo_env) -> None:
    job = demo_env["jobs"]["sample_defects"][1]
    written = pd.read_parquet(job.score.output.path).set_index("image")
    image = sorted(written.index)[0]
    data = (Path(job.score.images) / image).read_bytes()
    at = _app(demo_env["out"], "views/defects.py", "defect_bundle", "sample_defects")
    at.file_uploader(key="defect_uploads").set_value([(image, data, "image/png")]).run()
    assert not at.exception
    row = written.loc[image]
    p = f"p_{row['predicted_class']}"  # named after the class
    text = " ".join(m.value for m in at.markdown)
    assert f"class **{row['predicted_class']}** ({row[p]:.1%})" in text
    assert f"P(defect) **{row['p_defect']:.1%}**" in text
    assert not math.isnan(row[p])
