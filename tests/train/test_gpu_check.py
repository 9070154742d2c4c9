"""benchmarks/gpu_check.py: says "no GPU" without CUDA; its kernel proof works (on CPU here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(SCRIPT.parent))  # as run: benchmarks/ on the path (_harness)
        spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        mp.setitem(sys.modules, "gpu_check", module)  # its dataclasses look their module up
        spec.loader.exec_module(module)
        yield module


@pytest.fixture
def cpu_check(tmp_path: Path) -> list[str]:
    """The flags of a kernel proof on the CPU, its result file under ``tmp_path``."""
    return ["--device", "cpu", "--skip-timing", "--out", str(tmp_path)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_without_cuda_it_says_no_gpu_and_exits_0(gpu_check, capsys) -> None:
    assert gpu_check.main([]) == 0
    assert capsys.readouterr().out.startswith("no GPU")


def test_the_kernel_proof_passes_on_the_cpu_kernels(gpu_check, cpu_check, tmp_path, capsys):
    assert gpu_check.main(cpu_check) == 0
    (result,) = tmp_path.glob("gpu_check-*.json")  # the harness's record of the run
    assert "kernel proof: PASS" in result.read_text()
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "verdict" not in line]
    assert len(rows) == len(gpu_check.CASES) and all(r.endswith("| PASS |") for r in rows)
    assert "kernel proof: PASS" in out


@pytest.mark.slow
def test_the_kernel_proof_fails_when_sdpa_runs_the_math_kernel(
    gpu_check, cpu_check, monkeypatch, capsys
):
    real = torch.nn.functional.scaled_dot_product_attention

    def on_math(*args, **kw):
        with sdpa_kernel(SDPBackend.MATH):
            return real(*args, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", on_math)
    assert gpu_check.main(cpu_check) == 1
    out = capsys.readouterr().out
    assert "kernel proof: FAIL" in out and out.count("| FAIL |") == len(gpu_check.CASES) - 1


@pytest.mark.slow
def test_the_kernel_proof_fails_on_a_nan_loss(gpu_check, cpu_check, monkeypatch, capsys) -> None:
    """A kernel that returns NaN for fully masked rows must not pass for serving the call."""
    from mfgtx.models import SensorEncoder

    real = SensorEncoder.loss
    monkeypatch.setattr(SensorEncoder, "loss", lambda self, b: real(self, b) * float("nan"))
    assert gpu_check.main(cpu_check) == 1
    rows = [r for r in capsys.readouterr().out.splitlines() if r.endswith("| FAIL |")]
    assert len(rows) == 3 and all(r.startswith("| SensorEncoder") for r in rows), rows
