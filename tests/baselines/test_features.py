"""summary_features: values on a hand-built window with gaps; nothing outside the window read."""

from __future__ import annotations

import numpy as np
import pytest

from mfgtx.baselines import SUMMARY_STATS, summary_feature_names, summary_features
from mfgtx.data import SensorScaler

NAN = np.nan


def _by_name(w, features: np.ndarray) -> dict[str, float]:
    return dict(zip(summary_feature_names(w.sensors), features.tolist(), strict=True))


def test_hand_built_window_with_gaps(make_hand_windows) -> None:
    values = np.array(
        [  # s0: observed at steps 0, 2, 4; s1: never; s2: once (step 3); s3: complete
            [1.0, NAN, NAN, 2.0],
            [NAN, NAN, NAN, 4.0],
            [3.0, NAN, NAN, 6.0],
            [NAN, NAN, 5.0, 8.0],
            [7.0, NAN, NAN, 10.0],
            [1e6, 1e6, 1e6, 1e6],  # the next row, outside the window
        ]
    )
    w = make_hand_windows(values, [0], 5, None)
    f = _by_name(w, summary_features(w, [0], fill=[0.0, -3.5, 0.0, 0.0])[0])
    obs = np.array([1.0, 3.0, 7.0])
    assert f["s0__last"] == 7.0
    assert f["s0__mean"] == pytest.approx(obs.mean())
    assert f["s0__std"] == pytest.approx(obs.std())
    assert (f["s0__min"], f["s0__max"]) == (1.0, 7.0)
    assert f["s0__slope"] == pytest.approx(np.polyfit([0, 2, 4], obs, 1)[0])
    assert f["s0__missing"] == pytest.approx(0.4)
    # never observed: the fill (training mean) for the level statistics, 0 spread, missing 1
    assert [f[f"s1__{s}"] for s in SUMMARY_STATS] == [-3.5, -3.5, 0.0, -3.5, -3.5, 0.0, 1.0]
    # observed once: that value, no spread, no slope
    assert [f[f"s2__{s}"] for s in SUMMARY_STATS] == [5.0, 5.0, 0.0, 5.0, 5.0, 0.0, 0.8]
    assert f["s3__slope"] == pytest.approx(2.0) and f["s3__last"] == 10.0
    assert np.isfinite(list(f.values())).all()


def test_no_fill_and_no_scaler_leaves_nan_for_a_sensor_never_observed(make_hand_windows) -> None:
    w = make_hand_windows(np.array([[1.0, NAN], [2.0, NAN]]), [0], 2, None)
    f = _by_name(w, summary_features(w, [0])[0])
    assert np.isnan(f["s1__mean"]) and f["s1__std"] == 0.0 and f["s1__missing"] == 1.0
    with pytest.raises(
        ValueError, match=r"fill must hold one value per sensor \(2: \['s0', 's1'\]\)"
    ):
        summary_features(w, [0], fill=[0.0])


def test_rows_outside_the_window_never_matter(make_hand_windows) -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(40, 3))
    values[rng.random(values.shape) < 0.2] = NAN
    starts = [0, 6, 13, 25]  # windows of 5 rows with gaps between them
    w = make_hand_windows(values, starts, 5, None)
    before = summary_features(w, np.arange(4), fill=[0.0, 0.0, 0.0])
    inside = np.zeros(40, dtype=bool)
    for s in starts:
        inside[s : s + 5] = True
    for extreme in (1e9, -1e9, NAN):
        changed = values.copy()
        changed[~inside] = extreme  # e.g. the rows right after each window
        w2 = make_hand_windows(changed, starts, 5, None)
        np.testing.assert_array_equal(summary_features(w2, np.arange(4), fill=[0.0] * 3), before)
    # and a change inside a window does show (the test can fail)
    changed = values.copy()
    changed[4] = 1e9
    w3 = make_hand_windows(changed, starts, 5, None)
    assert not np.array_equal(summary_features(w3, [0], fill=[0.0] * 3), before[:1])


def test_scaled_features_are_the_scaled_statistics(make_hand_windows) -> None:
    rng = np.random.default_rng(1)
    values = 50 + 10 * rng.normal(size=(30, 2))
    values[3, 0] = NAN
    values[10:15, 1] = NAN  # window 2's s1 entirely missing
    w = make_hand_windows(values, [0, 5, 10, 15], 5, np.zeros((4, 1)))
    scaler = SensorScaler.fit(w, [0, 1])
    raw = summary_features(w, np.arange(4), fill=[99.0, 99.0]).reshape(4, 2, 7)
    scaled = summary_features(w, np.arange(4), scaler).reshape(4, 2, 7)  # (n, C, stats)
    center, scale = np.array(scaler.center), np.array(scaler.scale)
    level = [0, 1, 3, 4]  # last, mean, min, max
    ok = np.ones((4, 2), dtype=bool)
    ok[2, 1] = False
    np.testing.assert_allclose(
        scaled[:, :, level][ok],
        ((raw[:, :, level] - center[None, :, None]) / scale[None, :, None])[ok],
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        scaled[:, :, [2, 5]][ok], (raw[:, :, [2, 5]] / scale[None, :, None])[ok], rtol=1e-4
    )
    # entirely missing with a scaler: the scaler's centre (0 in scaled units), missing = 1
    assert scaled[2, 1].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert raw[2, 1].tolist() == [99.0, 99.0, 0.0, 99.0, 99.0, 0.0, 1.0]


def test_bad_indices_are_rejected(make_hand_windows) -> None:
    w = make_hand_windows(np.zeros((6, 1)), [0, 3], 3, None)
    with pytest.raises(ValueError, match=r"idx holds 2, outside the 2 windows \(0..1\)"):
        summary_features(w, [0, 2])
    with pytest.raises(ValueError, match="not a boolean mask"):
        summary_features(w, np.array([True, False]))


def test_features_taken_a_few_windows_at_a_time_equal_all_at_once(
    make_hand_windows, monkeypatch
) -> None:
    """Long history windows of a whole fleet are summarised in chunks (memory); every chunk
    size gives the same features, in the order asked, fill and scaler included."""
    import mfgtx.baselines.features as features

    rng = np.random.default_rng(3)
    values = rng.normal(size=(60, 3))
    values[rng.random(values.shape) < 0.3] = NAN
    values[10:40, 2] = NAN  # windows that never observe s2: the fill
    w = make_hand_windows(values, list(range(0, 52)), 8, None)
    idx = rng.permutation(len(w))[:37]
    scaler = SensorScaler.fit(w, np.arange(len(w)))
    whole = summary_features(w, idx, scaler, fill=[0.5, -1.0, 2.0])
    for windows_per_chunk in (1, 2, 5):
        monkeypatch.setattr(features, "_CHUNK_VALUES", windows_per_chunk * 8 * 3)
        part = summary_features(w, idx, scaler, fill=[0.5, -1.0, 2.0])
        np.testing.assert_array_equal(part, whole)


def test_the_cache_summarises_each_window_once_and_changes_no_bit(
    make_hand_windows, monkeypatch
) -> None:
    """Inside ``summary_cache`` every window is summarised once per (windows, scaler), however
    many baselines ask, with whatever training fill; the features are those computed without
    it, bit for bit, in the order asked."""
    import mfgtx.baselines.features as features
    from mfgtx.baselines import summary_cache

    rng = np.random.default_rng(4)
    values = rng.normal(size=(80, 3))
    values[rng.random(values.shape) < 0.3] = NAN
    values[10:40, 2] = NAN  # windows that never observe s2: the fill
    w = make_hand_windows(values, list(range(0, 72)), 8, None)
    scaler = SensorScaler.fit(w, np.arange(len(w)))
    asks = [  # (indices, fill, scaler): overlapping sets, as the baselines of a judge ask
        (rng.permutation(len(w))[:40], [0.5, -1.0, 2.0], scaler),
        (rng.permutation(len(w))[:50], [0.1, 0.2, -7.0], scaler),
        (np.arange(len(w)), None, scaler),
        (np.arange(20, 30), None, None),
        (np.arange(25, 35), [1.0, 1.0, 1.0], None),
    ]
    plain = [summary_features(w, idx, sc, fill=fill) for idx, fill, sc in asks]
    summarised: list[int] = []
    inner = features._summary

    def counting(windows, index, scaler):
        summarised.extend(index.tolist())
        return inner(windows, index, scaler)

    monkeypatch.setattr(features, "_summary", counting)
    with summary_cache():
        cached = [summary_features(w, idx, sc, fill=fill) for idx, fill, sc in asks]
    for a, b in zip(plain, cached, strict=True):
        np.testing.assert_array_equal(b, a)
    # each window once with the scaler, and windows 20-34 once more without it
    assert sorted(summarised) == sorted(list(range(len(w))) + list(range(20, 35)))
    summarised.clear()
    summary_features(w, np.arange(5), scaler)  # outside the block: computed again
    assert summarised == [0, 1, 2, 3, 4]
