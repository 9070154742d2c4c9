"""CausalForecaster after its split into modules (heads, linear skip, generation) gives the
outputs the one-class forecaster gave, with the same state-dict keys and the same seeded
initial weights.

The reference outputs were computed before the split, by
``tests/fixtures/forecaster_parity/forecaster_parity.py`` (its docstring says how); the same
function recomputes them here with the current code.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "forecaster_parity"


def _module():
    spec = importlib.util.spec_from_file_location(
        "forecaster_parity", FIXTURE / "forecaster_parity.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PARITY = _module()


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One thread, as the reference was computed: the same reductions, the same rounding."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def reference() -> dict[str, torch.Tensor]:
    return load_file(str(FIXTURE / "outputs.safetensors"))


def _part(reference: dict[str, torch.Tensor], part: str, name: str) -> dict[str, torch.Tensor]:
    prefix = f"{part}.{name}."
    return {k[len(prefix) :]: v for k, v in reference.items() if k.startswith(prefix)}


@pytest.mark.parametrize("name", list(PARITY.CASES))
def test_forecaster_outputs_equal_those_before_the_split(name, reference) -> None:
    init, state, out = PARITY.compute(name)
    old_init, old_state, old_out = (_part(reference, p, name) for p in ("init", "state", "out"))
    assert sorted(init) == sorted(old_init)  # the same state-dict keys
    for key, value in old_init.items():  # the same seeded initialisation
        assert torch.equal(init[key], value), key
    for key, value in old_state.items():
        assert torch.equal(state[key], value), key
    assert sorted(out) == sorted(old_out)
    for key, value in old_out.items():
        # float32 rounding of another CPU's kernels (AVX-512 against the AVX2 machine that wrote
        # the reference: up to 4.8e-6 on outputs of scale 10.7) is a few ulps of the output's
        # scale; any change in what is computed is orders of magnitude larger.
        atol = 1e-6 * max(1.0, value.abs().max().item())
        torch.testing.assert_close(out[key], value, rtol=1e-6, atol=atol, msg=f"{name}: {key}")
