"""Progress for a person (a tqdm bar) or for a log (plain lines)."""

from __future__ import annotations

import logging
import os
import sys
import time

from tqdm.auto import tqdm

__all__ = ["Progress"]

log = logging.getLogger("mfgtx.train")


def _watched() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


class Progress:
    """Shows loss, throughput (samples/s) and ETA; a bar when watched, log lines otherwise."""

    def __init__(self, mode: str, *, epochs: int, steps_per_epoch: int, log_every: int) -> None:
        if mode == "auto":
            mode = "bar" if _watched() else "log"
        self.mode, self.epochs, self.steps = mode, epochs, steps_per_epoch
        self.log_every = log_every
        self._bar: tqdm | None = None
        self._t0 = time.perf_counter()
        self._samples = 0

    def start_epoch(self, epoch: int) -> None:
        self._t0, self._samples = time.perf_counter(), 0
        if self.mode == "bar":
            self._bar = tqdm(
                total=self.steps,
                desc=f"epoch {epoch + 1}/{self.epochs}",
                unit="step",
                leave=True,
                dynamic_ncols=True,
            )

    def step(self, step_in_epoch: int, loss: float, batch: int, lr: float) -> None:
        self._samples += batch
        rate = self._samples / max(time.perf_counter() - self._t0, 1e-9)
        if self._bar is not None:
            self._bar.set_postfix(loss=f"{loss:.4g}", samples_s=f"{rate:.0f}", lr=f"{lr:.2e}")
            self._bar.update(1)
        elif self.mode == "log" and (step_in_epoch + 1) % self.log_every == 0:
            eta = (
                (self.steps - step_in_epoch - 1)
                * (time.perf_counter() - self._t0)
                / (step_in_epoch + 1)
            )
            log.info(
                "step %d/%d loss %.4g %.0f samples/s lr %.2e epoch ETA %.0fs",
                step_in_epoch + 1,
                self.steps,
                loss,
                rate,
                lr,
                eta,
            )

    def end_epoch(self, summary: str) -> None:
        if self._bar is not None:  # the finished bar stays on screen with the epoch summary
            self._bar.set_postfix_str(summary)
            self._bar.close()
            self._bar = None
        if self.mode in ("bar", "log"):
            log.info("%s", summary)

    def samples_per_s(self) -> float:
        return self._samples / max(time.perf_counter() - self._t0, 1e-9)
