"""keep_freed_memory: a step's large tensors reuse the pages of the step before (glibc)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap

import pytest
import torch

import mfgtx.train.loop
from mfgtx.train import TrainConfig, fit
from mfgtx.train.heap import _glibc, keep_freed_memory

glibc_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or _glibc() is None, reason="needs Linux and glibc"
)


_FAULTS = """
import resource, torch
from mfgtx.train.heap import keep_freed_memory
MB64 = 16 * 1024 * 1024  # floats
pages = MB64 * 4 // 4096

def faults_of_a_fresh_tensor():
    # minor page faults while a 64 MB tensor is allocated and written, after another one of
    # the same size was allocated, written and freed
    torch.empty(MB64).fill_(1.0)  # allocated, touched, freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = torch.empty(MB64).fill_(2.0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del t
    return faults
"""


def _in_a_fresh_process(body: str) -> None:
    """Run ``body`` after :data:`_FAULTS` in a new interpreter: glibc's heap is per process,
    and what earlier tests left in it (free chunks, thresholds) must not decide the result."""
    done = subprocess.run(
        [sys.executable, "-c", _FAULTS + textwrap.dedent(body)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


@glibc_only
def test_freed_memory_is_reused_inside_and_handed_back_after() -> None:
    _in_a_fresh_process(
        """
        assert faults_of_a_fresh_tensor() > pages // 2  # glibc's default: a fresh mmap each time
        with keep_freed_memory() as kept:
            assert kept is True
            for _ in range(4):  # the heap grows to the pattern's steady state (fragments too)
                faults_of_a_fresh_tensor()
            assert sum(faults_of_a_fresh_tensor() for _ in range(3)) < pages // 10
        assert faults_of_a_fresh_tensor() > pages // 2  # defaults again once the context ends
        """
    )


@glibc_only
def test_nested_uses_restore_only_when_the_last_one_ends() -> None:
    _in_a_fresh_process(
        """
        with keep_freed_memory():
            with keep_freed_memory():
                for _ in range(4):
                    faults_of_a_fresh_tensor()
            assert sum(faults_of_a_fresh_tensor() for _ in range(3)) < pages // 10  # outer holds
        assert faults_of_a_fresh_tensor() > pages // 2
        """
    )


def test_disabled_does_nothing() -> None:
    with keep_freed_memory(enabled=False) as kept:
        assert kept is False


class _Data(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": torch.full((2,), float(i)), "y": torch.tensor([float(i)])}


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def loss(self, batch):
        return torch.nn.functional.mse_loss(self.lin(batch["x"]), batch["y"])

    def predict(self, batch):
        return self.lin(batch["x"])


def test_fit_trains_inside_the_context_on_the_cpu(monkeypatch) -> None:
    entered: list[bool] = []

    @contextlib.contextmanager
    def spy(enabled: bool = True):
        entered.append(enabled)
        yield enabled

    monkeypatch.setattr(mfgtx.train.loop, "keep_freed_memory", spy)
    fit(_Linear(), _Data(), _Data(), TrainConfig(epochs=1, batch_size=4, progress="off"))
    assert entered == [True]
