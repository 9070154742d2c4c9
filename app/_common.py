"""Shared helpers of the dashboard: configuration, bundles, data, uploads, error guard.

The app is thin: these helpers find inputs and call the public library (``mfgtx.load`` and the
predictor it returns, ``mfgtx.images``, ``mfgtx.jobs``), whose results the pages draw; no
data rule lives here.
Configuration, first match wins: environment variables ``MFGTX_MODELS_DIR`` and
``MFGTX_DATA_DIR``, then ``app/mfgtx-app.toml`` (or the file ``MFGTX_APP_CONFIG`` names) with
keys ``models_dir`` and ``data_dir``, then the defaults ``models/`` and ``sample_data/`` of the
repository (see :func:`app_config`).
"""

from __future__ import annotations

import logging
import os
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import mfgtx
from mfgtx.artifacts import BundleError, verify_bundle
from mfgtx.data import ColumnMap, DataError
from mfgtx.images import DEFAULT_MAX_PIXELS, ImageError, read_image
from mfgtx.jobs import (
    LINE,
    ConfigError,
    SourceSection,
    csv_delimiter,
    read_csv_bytes,
    recorded_job,
    without_position,
)

log = logging.getLogger("mfgtx.app")

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "mfgtx-app.toml"
MAX_CSV_MB = 50
#: What a compressed CSV upload (gzip, bz2, xz, zip) may inflate to: as much as a plain one.
MAX_CSV_INFLATED_MB = MAX_CSV_MB
MAX_IMAGE_MB = 10
#: The same pixel limit as ``mfgtx score``'s image reader: one rule for what is readable.
MAX_IMAGE_PIXELS = DEFAULT_MAX_PIXELS
UNITS = {
    "temperature_c": "°C",
    "pressure_bar": "bar",
    "vibration_mm_s": "mm/s",
    "motor_current_a": "A",
    "load_pct": "%",
    "ambient_temp_c": "°C",
    "bearing_temp_c": "°C",
    "quality_value": "µm",
    "rul_cycles": "cycles",
}


# ----------------------------------------------------------------- configuration


@dataclass(frozen=True)
class AppConfig:
    models_dir: Path
    data_dir: Path
    source: str  # where the settings came from, shown on the Overview page


def app_config() -> AppConfig:
    """Models and data directories from env vars, the config file, or the defaults.

    The config file is ``MFGTX_APP_CONFIG`` or ``app/mfgtx-app.toml`` beside the dashboard,
    never one found in the working directory; relative paths in it are relative to the file,
    and the defaults (``models/``, ``sample_data/``) to the repository, so the dashboard reads
    the same folders whatever directory a service starts it in.
    """
    file_values: dict[str, Any] = {}
    path = Path(os.environ.get("MFGTX_APP_CONFIG") or Path(__file__).resolve().parent / CONFIG)
    base, source = ROOT, "defaults"
    if path.is_file():
        with path.open("rb") as f:
            file_values = tomllib.load(f)
        base, source = path.resolve().parent, str(path)

    def folder(env: str, key: str, default: str) -> Path:
        if os.environ.get(env):
            return Path(os.environ[env])
        if key in file_values:
            return base / str(file_values[key])
        return ROOT / default

    models = folder("MFGTX_MODELS_DIR", "models_dir", "models")
    data = folder("MFGTX_DATA_DIR", "data_dir", "sample_data")
    if "MFGTX_MODELS_DIR" in os.environ or "MFGTX_DATA_DIR" in os.environ:
        source = "environment" if source == "defaults" else f"environment and {source}"
    return AppConfig(models, data, source)


def guarded(body: Callable[[], None]) -> Callable[[], None]:
    """Run a page body; any exception is logged here and shown as a one-line message."""

    def page() -> None:
        try:
            body()
        except (DataError, BundleError) as e:  # worded for the user: file, column, lot
            log.warning("page %s: %s", body.__name__, e)
            st.error(str(e))
        except Exception:  # the browser never sees a traceback
            log.exception("page %s failed", body.__name__)
            st.error(
                "This page hit an internal error and stopped; the details are in the server "
                "log. Other pages keep working."
            )

    page.__name__ = body.__name__
    return page


# ----------------------------------------------------------------- bundles


@dataclass(frozen=True)
class BundleInfo:
    path: Path
    bundle_id: str
    kind: str | None  # sensor, forecast, vit (None: not a model of mfgtx's kinds)
    model_class: str
    task: str | None
    manifest: dict[str, Any]
    signature: str = "unsigned"  # "verified", "unsigned" or "not verified" (no key here)


_KIND_OF_CLASS = {
    "mfgtx.SensorEncoder": "sensor",
    "mfgtx.CausalForecaster": "forecast",
    "mfgtx.DefectViT": "vit",
}


def find_bundles(models_dir: Path) -> tuple[list[BundleInfo], list[str]]:
    """Verified bundles under ``models_dir`` (one level deep), and a message per refused one."""
    found: list[BundleInfo] = []
    problems: list[str] = []
    if not models_dir.is_dir():
        return found, [f"models directory {models_dir} does not exist"]
    for sub in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        if not (sub / "manifest.json").is_file():
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                verified = verify_bundle(sub)
        except (BundleError, OSError, ValueError) as e:
            problems.append(f"{sub.name}: {e}")
            continue
        manifest = verified["manifest"]
        model = manifest.get("model", {})
        name = str(model.get("class"))
        spec = manifest.get("input_spec") or {}
        found.append(
            BundleInfo(
                path=sub,
                bundle_id=verified["bundle_id"],
                kind=manifest.get("kind") or _KIND_OF_CLASS.get(name),
                model_class=name,
                task=spec.get("task")
                or model.get("config", {}).get("task")
                or (manifest.get("metrics") or {}).get("task")
                or ("forecast" if manifest.get("kind") == "forecast" else None),
                manifest=manifest,
                signature=verified.get("signature", "unsigned"),
            )
        )
    return found, problems


def bundles_of(kind: str) -> tuple[AppConfig, list[BundleInfo]]:
    """The settings and the verified bundles of one model kind."""
    cfg = app_config()
    found, _ = find_bundles(cfg.models_dir)
    return cfg, [b for b in found if b.kind == kind]


@st.cache_resource(max_entries=8, show_spinner="loading model bundle")
def _load(bundle_id: str, path: str) -> Any:
    return mfgtx.load(path)


def load(info: BundleInfo) -> Any:
    """The bundle's predictor (:func:`mfgtx.load`), loaded once per bundle checksum."""
    return _load(info.bundle_id, str(info.path))


def pick_bundle(infos: list[BundleInfo], key: str) -> BundleInfo:
    """The bundle chosen in the page's selector. A link may name it (``?bundle=NAME``), and
    the page's address names the bundle shown, so a link to it opens the same bundle."""
    names = [b.path.name for b in infos]
    asked = st.query_params.get("bundle")
    if key not in st.session_state and asked in names:
        st.session_state[key] = asked
    name = st.selectbox("Model bundle", names, key=key)
    if st.query_params.get("bundle") != name:
        st.query_params["bundle"] = name
    return infos[names.index(name)]


def no_bundle_message(kind: str, models_dir: Path, command: str) -> None:
    st.info(f"No {kind} model bundle in {models_dir}; train one with `{command}`.")


# ----------------------------------------------------------------- data


#: The CSV formats an upload may be read in: a job file's ``source.delimiter``,
#: ``source.decimal`` and ``source.encoding``, worded for the page.
DELIMITERS = {"auto": "found in the header line", ",": "comma ,", ";": "semicolon ;",
              "tab": "tab", "|": "bar |"}  # fmt: skip
DECIMALS = {".": "point (1.25)", ",": "comma (1,25)"}
ENCODINGS = ("utf-8", "cp1252", "latin-1")
PLAIN_CSV = {"delimiter": "auto", "decimal": ".", "encoding": "utf-8"}


def recorded_format(manifest: dict | None) -> dict[str, str]:
    """The CSV format the bundle's recorded job read its training data in (``delimiter``,
    ``decimal``, ``encoding``), or the plain one: a plant's next export is written alike."""
    try:
        job = recorded_job(manifest or {})
    except ConfigError:
        return dict(PLAIN_CSV)
    source = job.data.source if job is not None and job.data is not None else None
    if source is None or source.url is not None or source.format in ("parquet", "cmapss"):
        return dict(PLAIN_CSV)
    return {"delimiter": source.delimiter, "decimal": source.decimal, "encoding": source.encoding}


def csv_format(manifest: dict | None, key: str) -> dict[str, str]:
    """The upload's CSV format, chosen under "CSV format"; it starts as the bundle's
    recorded job read its training data (:func:`recorded_format`)."""
    start = recorded_format(manifest)
    encodings = list(dict.fromkeys([*ENCODINGS, start["encoding"]]))
    delimiters = list(dict.fromkeys([*DELIMITERS, start["delimiter"]]))
    with st.expander("CSV format", expanded=start != PLAIN_CSV):
        st.caption("As the bundle's job file read its training data; change it for a file "
                   "written otherwise.")  # fmt: skip
        c1, c2, c3 = st.columns(3)
        delimiter = c1.selectbox(
            "Between values",
            delimiters,
            delimiters.index(start["delimiter"]),
            format_func=lambda d: DELIMITERS.get(d, repr(d)),
            key=f"{key}_delimiter",
        )
        decimals = list(DECIMALS)
        decimal = c2.selectbox(
            "Decimal mark",
            decimals,
            decimals.index(start["decimal"]),
            format_func=DECIMALS.get,
            key=f"{key}_decimal",
        )
        encoding = c3.selectbox(
            "Encoding", encodings, encodings.index(start["encoding"]), key=f"{key}_encoding"
        )
    return {"delimiter": delimiter, "decimal": decimal, "encoding": encoding}


def read_csv(data: bytes, name: str, fmt: dict[str, str], text: tuple[str, ...]) -> pd.DataFrame:
    """A CSV file read as ``mfgtx score`` reads a job's source in format ``fmt``
    (:func:`mfgtx.jobs.sources.read_csv_bytes`: the file's lines in ``_line``), with every
    column but the ``text`` ones (:func:`text_columns`) as numbers where all its values are
    numbers.

    Raises:
        DataError: the file cannot be read in ``fmt``; the reason names the control to change.
    """
    try:
        frame = read_csv_bytes(data, name, max_inflated_mb=MAX_CSV_INFLATED_MB, **fmt)
    except ValueError as e:  # DataError too: worded for the page, not for a job file
        raise DataError(page_words(str(e))) from None
    for c in frame.columns.difference([*text, LINE, "_file"]):
        values = pd.to_numeric(frame[c], errors="coerce")
        if values.notna().sum() == frame[c].notna().sum():
            frame[c] = values
    return frame


def text_columns(columns: ColumnMap) -> tuple[str, ...]:
    """The columns an upload keeps as text: ids (``001`` stays ``001``). A time column of
    numbers (a cycle counter) becomes numbers, as every reading does."""
    return (columns.lot, *columns.keys)


def page_words(reason: str) -> str:
    """A reader's reason with the job file's setting named as this page's control."""
    for setting, control in (
        ("source.decimal: ','", "Decimal mark: comma under CSV format"),
        ("source.decimal", "Decimal mark under CSV format"),
        ("source.delimiter", "Between values under CSV format"),
        ("source.encoding", "Encoding under CSV format"),
    ):
        reason = reason.replace(setting, control)
    return reason


@st.cache_data(show_spinner=False, max_entries=8, ttl=60)  # new rows show within a minute
def _csv(
    path: str, delimiter: str, decimal: str, encoding: str, text: tuple[str, ...]
) -> pd.DataFrame:
    """The file as :func:`read_csv` gives it, keyed by its format and text columns."""
    fmt = {"delimiter": delimiter, "decimal": decimal, "encoding": encoding}
    return without_position(read_csv(Path(path).read_bytes(), Path(path).name, fmt, text))


def frame_for(cmap: ColumnMap, data_dir: Path, manifest: dict | None = None) -> pd.DataFrame:
    """The CSV file of the data folder that holds the bundle's columns: the file its
    recorded job trained on when that lies in the data folder, else the first file that
    has the columns, in the folder first, then one folder down (``sensors.csv`` for the
    quality and forecast models of the sample plant, ``degradation.csv`` for RUL,
    ``regimes/train.csv`` for the regimes fleet). Each is read in the recorded job's CSV
    format (:func:`recorded_format`)."""
    need = {cmap.lot, cmap.time, *cmap.keys, *(cmap.sensors or ())}
    if not data_dir.is_dir():
        raise DataError(f"the data folder {data_dir} does not exist")
    trained_on = _trained_on(manifest)
    here = [p for p in [trained_on] if p is not None and p.is_relative_to(data_dir.resolve())]
    found = sorted(data_dir.glob("*.csv")) + sorted(data_dir.glob("*/*.csv"))
    fmt = recorded_format(manifest)
    for path in here + found:
        if need <= _header(path, fmt):  # the header first: cheap
            return _csv(str(path), **fmt, text=text_columns(cmap))
    raise DataError(f"no CSV file in {data_dir} has the bundle's columns {sorted(need)}")


def _header(path: Path, fmt: dict[str, str]) -> set[str]:
    """The column names of a CSV file in format ``fmt`` (none when it cannot be read so)."""
    try:
        sep, _ = csv_delimiter(path, SourceSection(path=str(path), **fmt))  # type: ignore[arg-type]
        return set(pd.read_csv(path, nrows=0, sep=sep, encoding=fmt["encoding"]).columns)
    except (OSError, ValueError, UnicodeDecodeError):
        return set()


def _trained_on(manifest: dict | None) -> Path | None:
    """The CSV file the bundle's recorded job read, when it exists here."""
    try:
        job = recorded_job(manifest or {})
    except ConfigError:  # recorded by another mfgtx: look for the data by name instead
        return None
    data = job.data if job is not None else None
    source = data.source.path if data is not None else None
    if not source or not str(source).endswith(".csv"):
        return None
    path = Path(source) if Path(source).is_absolute() else ROOT / source
    return path.resolve() if path.is_file() else None


def read_upload_csv(
    upload: Any, predictor: Any, fmt: dict[str, str]
) -> tuple[pd.DataFrame | None, str | None]:
    """An uploaded CSV in format ``fmt`` (:func:`csv_format`) checked as the bundle reads
    its input: ``(frame, None)`` or ``(None, why)``; ``why`` names the file's line, as a
    spreadsheet numbers it."""
    if upload.size > MAX_CSV_MB * 2**20:
        size = upload.size / 2**20
        return None, f"{upload.name}: {size:.1f} MB is over the {MAX_CSV_MB} MB limit"
    try:
        frame = read_csv(upload.getvalue(), upload.name, fmt, text_columns(predictor.columns))
    except DataError as e:
        return None, str(e)
    df = without_position(frame).reset_index(drop=True)
    try:
        predictor.table(frame.reset_index(drop=True))  # its _file and _line name the lines
    except DataError as e:
        return None, _upload_reason(upload.name, e)
    return df, None


def _upload_reason(name: str, e: DataError) -> str:
    """``e`` in the page's words, naming the upload (its lines are named already)."""
    text = page_words(str(e))
    return text if text.startswith(name) else f"{name}: {text}"


def lot_windows(predictor: Any, rows: pd.DataFrame, *, stride: int | None = None) -> Any:
    """The windows of one lot's ``rows`` as ``mfgtx score`` cuts them (the bundle's window,
    ``min_rows`` and stride, or ``stride``; the last window ends at the latest row)."""
    return predictor.windows(rows, stride=stride)


# ----------------------------------------------------------------- images


@dataclass(frozen=True)
class CheckedImage:
    name: str
    image: np.ndarray | None  # (H, W) grey in 0..1, or None
    message: str | None  # why the file was refused


def check_image(name: str, data: bytes) -> CheckedImage:
    """An uploaded image read by :func:`mfgtx.images.read_image`, the reader ``mfgtx score``
    uses, so the page calls readable exactly what batch scoring reads: ``image`` is grey in
    0..1, or ``message`` says why the file is refused."""
    if len(data) > MAX_IMAGE_MB * 2**20:
        return CheckedImage(name, None, f"{len(data) / 2**20:.1f} MB is over {MAX_IMAGE_MB} MB")
    try:
        arr = read_image((name, data), mode="L", max_pixels=MAX_IMAGE_PIXELS)
    except ImageError as e:  # the reader's words, without the name of its library
        return CheckedImage(name, None, e.reason)
    return CheckedImage(name, arr.astype(np.float64) / 255.0, None)


# ----------------------------------------------------------------- charts


def sensor_figure(df: pd.DataFrame, time: str, sensors: list[str], title: str) -> Any:
    """One panel per sensor on a shared UTC time axis, units on each y axis."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=len(sensors), cols=1, shared_xaxes=True, vertical_spacing=0.03)
    dated = not pd.api.types.is_numeric_dtype(df[time])
    t = pd.to_datetime(df[time], utc=True) if dated else df[time]
    x_hover = "%{x|%Y-%m-%d %H:%M} UTC" if dated else f"{time} %{{x}}"
    for i, s in enumerate(sensors, start=1):
        unit = UNITS.get(s, "")
        fig.add_scatter(
            x=t,
            y=df[s],
            mode="lines",
            name=s,
            row=i,
            col=1,
            hovertemplate=f"{x_hover}<br>{s}: %{{y:.3f}} {unit}<extra></extra>",
        )
        fig.update_yaxes(title_text=f"{s} ({unit})" if unit else s, row=i, col=1)
    fig.update_xaxes(
        title_text="time (UTC)" if dated else time,
        type="date" if dated else "linear",
        row=len(sensors),
        col=1,
    )
    fig.update_layout(title=title, height=180 * len(sensors) + 80, showlegend=False)
    return fig


# ----------------------------------------------------------------- labels and times


@st.cache_resource(show_spinner="reading the bundle's labelled data", max_entries=4, ttl=300)
def labelled_windows(bundle_id: str, path: str) -> tuple[Any, str]:
    """The bundle's labelled windows, read by its recorded job exactly as training read
    them (labels joined, ``defect`` and label times derived as the job file says), and the
    name of their source.

    Raises:
        DataError: the bundle records no job (saved from Python), or its data is gone.
    """
    from mfgtx.jobs import read_windows, recorded_job

    predictor = _load(bundle_id, path)
    job = recorded_job(predictor.bundle.manifest)
    if job is None:
        raise DataError(
            f"{Path(path).name} records no training job (it was saved from Python): the labels "
            "of its data are unknown here; judge it with `mfgtx evaluate JOB.yaml`"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        windows, _ = read_windows(job, predictor.kind)
    source = job.data.source.path or job.data.source.table or "query"
    return windows, str(source)


def known_label(info: BundleInfo, lot: str, end: Any = None) -> str:
    """The lot's known label (inspection result, or RUL as of ``end``) in words, from the
    bundle's labelled data; says so when it is not known."""
    predictor = load(info)
    try:
        windows, _ = labelled_windows(info.bundle_id, str(info.path))
    except DataError as e:
        return f"Known result: not available here ({e})."
    mine = np.flatnonzero(windows.lot.astype(str) == str(lot))
    if not len(mine) or windows.y is None:
        return f"Known result: lot {lot} has no label in the bundle's data."
    target = predictor.input_spec.targets[0]
    if predictor.task == "classification":
        y = windows.y[mine[-1], 0]
        if np.isnan(y):
            return f"Known result: lot {lot} is not inspected yet."
        word = "bad (a defect was found)" if y >= 0.5 else "good (passed inspection)"
        return f"Known result: lot {lot} was inspected {word}."
    at = mine[-1]
    if end is not None:  # the labelled window ending at or just before ``end``
        ends = windows.end[mine]
        before = mine[ends <= np.asarray(end, dtype=ends.dtype)]
        at = before[-1] if len(before) else mine[0]
    y = float(windows.y[at, 0])
    unit = UNITS.get(target, "")
    exact = end is None or windows.end[at] == np.asarray(end, dtype=windows.end.dtype)
    note = "" if exact else " (the nearest labelled reading before it)"
    return f"Known {target} at {when(windows.end[at])}{note}: {y:.1f} {unit}".rstrip() + "."


def when(value: Any, time_name: str = "cycle") -> str:
    """A time for people: ``2026-03-02 10:38 UTC`` for timestamps, ``cycle 45`` for numbers."""
    if isinstance(value, str):
        try:
            value = pd.Timestamp(value)
        except ValueError:
            return value
    if isinstance(value, (np.datetime64, pd.Timestamp)) or hasattr(value, "tzinfo"):
        t = pd.Timestamp(value)
        t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
        return t.strftime("%Y-%m-%d %H:%M UTC")
    v = float(value)
    return f"{time_name} {v:g}"


def data_key(df: pd.DataFrame) -> str:
    """A short fingerprint of a frame, to key cached results of the data it holds."""
    import hashlib

    digest = hashlib.sha256(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return digest.hexdigest()[:16]


def csv_download(frame: pd.DataFrame, label: str, file_name: str, key: str) -> None:
    """A download button for ``frame`` as CSV (UTF-8, no index)."""
    st.download_button(
        label,
        frame.to_csv(index=False).encode("utf-8"),
        file_name=file_name,
        mime="text/csv",
        key=key,
        on_click="ignore",
    )
