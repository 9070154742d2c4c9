"""The "Score a file" page: one row per lot or image, the problems with their CSV lines, and
downloads of both."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from .conftest import MAIN, SAMPLE
from .test_dashboard import INTERNAL, _texts


def _page(bundle: str | None = None) -> AppTest:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page("views/score.py").run()
    if bundle is not None:
        at.selectbox(key="score_bundle").set_value(bundle).run()
    return at


def _clean(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not any(INTERNAL in t for t in _texts(at.error)), _texts(at.error)


def _downloads(at: AppTest) -> list[str]:
    return [e.proto.label for e in at.get("download_button")]


def test_a_csv_gives_one_row_per_lot_and_the_bad_lot_with_its_line(app_env) -> None:
    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    part = sensors[sensors["lot"].isin(["L1-0001", "L2-0003", "L3-0004"])].reset_index(drop=True)
    bad = int(part.index[part["lot"] == "L2-0003"][0])
    part["temperature_c"] = part["temperature_c"].astype(object)
    part.loc[bad, "temperature_c"] = "hot"
    at = _page()
    at.file_uploader(key="score_csv").set_value(
        ("lots.csv", part.to_csv(index=False).encode(), "text/csv")
    ).run()
    _clean(at)
    assert not at.dataframe, "nothing is scored before the button"
    at.button(key="score_go").click().run()
    _clean(at)
    rows, errors = (d.value for d in at.dataframe)
    assert rows["lot"].tolist() == ["L1-0001", "L3-0004"]
    assert set(rows["set in training"]) <= {"train", "val", "test", "purged", "unseen"}
    assert not rows["window_end"].str.contains(r"\dT\d").any()  # readable times
    assert errors["lot"].tolist() == ["L2-0003"]
    assert errors["reason"].iloc[0].startswith(f"lots.csv line {bad + 2} (lot L2-0003)")
    assert errors["line"].iloc[0] == bad + 2
    assert _downloads(at) == ["Download the scores (CSV)", "Download the problems (CSV)"]
    # the options sit in a form: changing one scores nothing until Score is pressed
    at.toggle(key="score_latest").set_value(False).run()
    _clean(at)
    assert at.dataframe[0].value["lot"].tolist() == ["L1-0001", "L3-0004"]  # as it was
    at.toggle(key="score_latest").set_value(False)  # the form sends it with the button
    at.button(key="score_go").click().run()
    _clean(at)
    every = at.dataframe[0].value
    assert len(every) > 2 and set(every["lot"]) == {"L1-0001", "L3-0004"}  # one row per window


@pytest.mark.slow
def test_images_give_one_row_per_image_and_a_row_per_refused_file(demo_env) -> None:
    buf = io.BytesIO()
    Image.open(SAMPLE / "defects" / "images" / "001.png").save(buf, "PNG")
    files = [
        ("001.png", buf.getvalue(), "image/png"),
        ("002.png", (SAMPLE / "defects" / "images" / "002.png").read_bytes(), "image/png"),
        ("broken.png", b"\x89PNG\r\n\x1a\nnot a png", "image/png"),
    ]
    at = _page("sample_defects")
    at.file_uploader(key="score_images").set_value(files).run()
    at.button(key="score_go").click().run()
    _clean(at)
    rows, errors = (d.value for d in at.dataframe)
    assert rows["image"].tolist() == ["001.png", "002.png"]
    assert {"p_defect", "decision", "predicted_class"} <= set(rows.columns)
    assert errors["file"].tolist() == ["broken.png"]
