"""WindowDataset: a DataLoader batch read in one pass holds exactly the per-window items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.data import DataLoader

from mfgtx.data import ColumnMap, SensorScaler, WindowDataset, make_windows, read_table


def windows():
    rng = np.random.default_rng(0)
    n = 40
    df = pd.DataFrame(
        {
            "lot": ["A"] * 20 + ["B"] * 20,
            "t": list(range(20)) * 2,
            "s1": rng.normal(size=n),
            "s2": rng.normal(size=n),
            "grade": rng.integers(0, 3, size=n).astype(float),
        }
    )
    df.loc[[3, 25], "s1"] = np.nan  # missing readings travel as observed=False
    return make_windows(read_table(df, ColumnMap("lot", "t", targets="grade")), 5)


@pytest.mark.parametrize("target", ["float", "class", "none"])
def test_loader_batches_hold_each_windows_own_item(target: str) -> None:
    w = windows()
    chosen = np.arange(0, len(w), 2)
    scaler = SensorScaler.fit(w, chosen)
    data = WindowDataset(w, chosen, scaler, target=target)
    torch.manual_seed(0)
    batches = list(DataLoader(data, batch_size=4, shuffle=True))
    seen = torch.cat([b["index"] for b in batches])
    assert sorted(seen.tolist()) == chosen.tolist()  # each chosen window once, in any order
    for b in batches:
        for k, j in enumerate(b["index"].tolist()):
            x, observed = w.features([j], scaler)  # one window, read on its own
            torch.testing.assert_close(b["x"][k], torch.from_numpy(x[0]))
            assert torch.equal(b["observed"][k], torch.from_numpy(observed[0]))
            if target == "float":
                torch.testing.assert_close(b["y"][k], torch.tensor(w.y[j], dtype=torch.float32))
            elif target == "class":
                assert b["y"].dtype == torch.int64 and int(b["y"][k]) == int(w.y[j][0])
            else:
                assert "y" not in b
    # the two missing readings reach some chosen windows, masked and zeroed
    observed = torch.cat([b["observed"] for b in batches])
    assert not bool(observed.all())
    assert bool((torch.cat([b["x"] for b in batches])[~observed] == 0).all())


def test_single_item_matches_the_batched_read() -> None:
    w = windows()
    data = WindowDataset(w, [4, 1, 7])
    batch = data.__getitems__([2, 0])
    for got, i in zip(batch, [2, 0], strict=True):
        one = data[i]
        assert got.keys() == one.keys()
        for key in one:
            assert torch.equal(got[key], one[key])
    assert int(data[1]["index"]) == 1 and data[0]["x"].shape == (5, 2)
