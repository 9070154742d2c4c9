"""The shipped job files in pipelines/configs/ are valid and agree with the demo."""

from __future__ import annotations

from pathlib import Path

import pytest

from mfgtx.cli import main
from mfgtx.jobs import load_config
from mfgtx.jobs.demo import demo_configs
from tests.cli.conftest import summary

CONFIGS = Path(__file__).resolve().parents[2] / "pipelines" / "configs"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_are_valid(path: Path) -> None:
    config = load_config(path)
    assert (config.data is not None or config.images is not None) and config.bundle


@pytest.mark.parametrize(
    "name",
    [
        "sample_quality",
        "sample_rul",
        "sample_regimes",
        "sample_forecast",
        "sample_defects",
        "sample_inspection",
    ],
)
def test_sample_configs_match_the_demo(name: str) -> None:
    shipped = load_config(CONFIGS / f"{name}.yaml")
    demo = demo_configs("sample_data", "runs/sample")[name]
    assert shipped == demo


def test_cmapss_split_audits_clean(datasets_dir: Path, capsys) -> None:
    path = datasets_dir / "cmapss_fd001" / "train_FD001.txt.gz"
    argv = ["audit", str(CONFIGS / "cmapss_fd001.yaml"), "--set", f"data.source.path={path}"]
    assert main(argv) == 0, capsys.readouterr().err
    result = summary(capsys.readouterr().out)
    # the split training makes: 5 test engines, the other 95 cross-fitted in 10 blocks
    assert result["passed"] and result["lots"]["test"] == 5 and result["lots"]["train"] == 95
    assert (
        sorted(v for k, v in result["lots"].items() if k.startswith("member_"))
        == [9] * 5 + [10] * 5
    )


@pytest.mark.parametrize(
    ("job", "file", "lots"),
    [
        ("etth1", "ETTh1.csv.gz", {"train": 17, "val": 11, "test": 7}),  # 20-day segments
        ("ettm1", "ETTm1.csv.gz", {"train": 57, "val": 26, "test": 21}),  # 7-day segments
    ],
)
def test_the_ett_jobs_segment_the_series_and_audit_clean(
    datasets_dir: Path, capsys, job: str, file: str, lots: dict[str, int]
) -> None:
    path = datasets_dir / "ett_small" / file
    argv = ["audit", str(CONFIGS / f"{job}.yaml"), "--set", f"data.source.path={path}"]
    assert main(argv) == 0, capsys.readouterr().err
    result = summary(capsys.readouterr().out)
    assert result["passed"] and result["lots"] == lots
    assert result["lots"]["val"] >= 10  # enough lots to calibrate the band on


def test_the_quick_demo_shrinks_the_models_and_the_tiles_but_keeps_the_tile_size() -> None:
    full = demo_configs("sample_data", "runs/sample")["sample_inspection"].images.tiles
    quick = demo_configs("sample_data", "runs/sample", quick=True)["sample_inspection"]
    tiles = quick.images.tiles
    assert full.train_stride is not None and full.stride < full.size  # the job file overlaps
    assert tiles.size == full.size and tiles.stride == tiles.size and tiles.train_stride is None
    assert quick.train.epochs == 2
