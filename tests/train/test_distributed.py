"""end_distributed (setup_distributed's exit handler is checked by the torchrun test)."""

from __future__ import annotations

from pathlib import Path

import torch.distributed as dist

from mfgtx.train import end_distributed


def test_end_distributed_destroys_the_group_and_is_a_no_op_without_one(tmp_path: Path) -> None:
    end_distributed()  # nothing up: nothing happens
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    assert dist.is_initialized()
    end_distributed()
    assert not dist.is_initialized()
    end_distributed()
