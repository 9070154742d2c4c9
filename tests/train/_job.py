"""A training job run as a subprocess by the tests (kill-and-resume, torchrun).

usage: python _job.py OUT_DIR [--kill-at STEP] [--resume] [--epochs N] [--train-size N]
    [--val-size N] [--lr LR]
Writes OUT_DIR/final_rank{r}.safetensors (final weights) and OUT_DIR/rank{r}.json.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).parent))
from tiny import TinyRegressor, WindowData

from mfgtx.artifacts import save_bundle
from mfgtx.train import TrainConfig, fit


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--kill-at", type=int, default=None)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--train-size", type=int, default=96)
    p.add_argument("--val-size", type=int, default=32)
    args = p.parse_args()
    out = Path(args.out)
    rank = int(os.environ.get("RANK", "0"))
    # registered before fit joins the process group, so it runs after fit's own exit handler
    atexit.register(_record_group_state_at_exit, out / f"exit_rank{rank}.json")
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    model = TinyRegressor()
    train, val = WindowData(args.train_size, seed=1), WindowData(args.val_size, seed=2)
    config = TrainConfig(
        epochs=args.epochs,
        batch_size=8,
        lr=args.lr,
        patience=None,
        seed=7,
        precision="fp32",
        checkpoint_dir=str(out / "ckpt"),
        resume=args.resume,
        progress="off",
    )

    def on_step(step: int, loss: float) -> None:
        if args.kill_at is not None and step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    result = fit(model, train, val, config, on_step=on_step)
    save_bundle(
        out / "bundle",
        model,
        model_name="tests.TinyRegressor",
        train_config=config,
        precision=result.precision,
    )
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()},
        out / f"final_rank{rank}.safetensors",
    )
    (out / f"rank{rank}.json").write_text(
        json.dumps(
            {
                "history": list(result.history),
                "seen": train.seen,
                "world_size": result.world_size,
                "resumed_from_epoch": result.resumed_from_epoch,
            }
        )
    )


def _record_group_state_at_exit(path: Path) -> None:
    initialized = torch.distributed.is_available() and torch.distributed.is_initialized()
    path.write_text(json.dumps({"group_initialized": initialized}))


if __name__ == "__main__":
    main()
