"""Compiling the training step with ``torch.compile`` where it pays, decided while training.

An eager training step runs every norm, activation, residual add and dtype cast as its own
kernel, each a pass over memory. ``torch.compile`` (TorchInductor) fuses them into a few
generated loops and leaves the matrix products to the same libraries. Whether that wins
depends on the model and the machine. On a 2-core AMD EPYC with AVX512-BF16 (eager and
compiled steps interleaved in one run of ``benchmarks/floor.py --compile``) it did not for
mfgtx's models: the ViT-Tiny configuration's bf16 step took 0.639 s compiled against 0.622 s
eager, the PatchTST-sized forecaster's fp32 step 0.795 against 0.738 s; timm's ViT-Tiny
gained (1.062 to 0.952 s). Compiling costs 15 to 60 s per graph there and needs a C++
compiler on a CPU. So :class:`~mfgtx.train.TrainConfig` leaves it ``"off"`` by default.

``compile="auto"`` decides from the run's own first steps (:class:`CompileSwitch`), with no
extra passes and nothing read twice: it times :data:`TIMED_STEPS` eager steps after a
warm-up step; if the rest of the run would take less than :data:`COMPILE_MIN_SECONDS`
eagerly, it stays eager without compiling. Otherwise the next full batch compiles the step,
the following :data:`TIMED_STEPS` run compiled and are timed, and the run keeps the compiled
step only where it is more than :data:`MARGIN` faster and what it saves over the remaining
steps exceeds twice the compile time (:func:`decide`). Only full batches run compiled (one
graph; the last, smaller batch of an epoch runs eagerly). A compile that fails (no C++
compiler, an operation Inductor cannot take) leaves the run eager: logged, or a warning
where ``compile="on"`` asked for it.
"""

from __future__ import annotations

import logging
import statistics
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["COMPILE_MIN_SECONDS", "MARGIN", "TIMED_STEPS", "CompileSwitch", "decide"]

log = logging.getLogger("mfgtx.train")

#: ``compile="auto"`` does not compile a run whose remaining steps would take less than
#: this many seconds eagerly: a graph at 15-60 s would eat the gain.
COMPILE_MIN_SECONDS = 300.0
#: The compiled step must beat the eager one by this share of its time.
MARGIN = 0.1
#: Steps timed in each mode before deciding (after one untimed warm-up step).
TIMED_STEPS = 3


def decide(eager: float, compiled: float, compile_cost: float, steps: int) -> tuple[bool, str]:
    """Whether ``steps`` more steps should run compiled, given the median seconds per step
    of each mode and the seconds the compile cost.

    >>> decide(1.0, 0.6, 30.0, 1000)
    (True, 'compiled steps take 0.600 s against 1.000 s eager: about 400 s saved')
    >>> decide(1.0, 0.95, 30.0, 1000)[0]  # within the margin
    False
    >>> decide(1.0, 0.6, 300.0, 1000)[0]  # saves 400 s, not twice the 300 s it cost
    False
    """
    saved = (eager - compiled) * steps
    timing = f"compiled steps take {compiled:.3f} s against {eager:.3f} s eager"
    if compiled >= eager * (1.0 - MARGIN):
        return False, f"{timing}: not {MARGIN:.0%} faster"
    if saved <= 2.0 * compile_cost:
        return False, f"{timing}: {saved:.0f} s saved, not twice the {compile_cost:.0f} s cost"
    return True, f"{timing}: about {saved:.0f} s saved"


class CompileSwitch:
    """Which function trains each batch, eager or compiled, decided from the first steps.

    Args:
        mode: ``"auto"``, ``"on"`` or ``"off"``.
        eager: the eager training forward (``batch -> loss``).
        compile_step: builds the compiled forward (called once, when first needed).
        total_steps: optimizer steps still to run.
        resumed: a checkpoint's choice, kept without timing (``compile="auto"``); ``None``
            for a fresh run.

    Per batch: ``fn = switch.step_fn(full)`` (``full``: the batch has the full batch size),
    train with it, then ``switch.done(seconds, full)`` with the step's seconds (forward,
    backward and optimizer); ``switch.failed(err)`` if the compiled function raised.
    ``compiled`` is what the run settled on (``None`` while it is still being timed).

    Example:
        >>> switch = CompileSwitch("auto", len, lambda: len, total_steps=10)
        >>> for _ in range(1 + TIMED_STEPS):  # a warm-up step, then the timed ones
        ...     switch.done(1.0, full=switch.step_fn(True) and True)
        >>> switch.compiled  # 6 steps of 1 s left: under COMPILE_MIN_SECONDS
        False
    """

    def __init__(
        self,
        mode: str,
        eager: Callable[[Any], Any],
        compile_step: Callable[[], Callable[[Any], Any]],
        *,
        total_steps: int,
        resumed: bool | None = None,
    ) -> None:
        self.mode, self.eager, self.compile_step = mode, eager, compile_step
        self.remaining = total_steps
        self.times: dict[str, list[float]] = {"eager": [], "compiled": []}
        self.compile_seconds = 0.0
        self.compiled: bool | None = None
        self._fn: Callable[[Any], Any] | None = None
        self._phase = "warm-up"  # auto: warm-up -> eager -> compile -> compiled -> decided
        if mode == "off":
            self.compiled = False
        elif mode == "on":
            self.compiled = True
        elif resumed is not None:
            self.compiled = resumed
            log.info("compile auto: %s, as the resumed checkpoint trained",
                     "compiled" if resumed else "eager")  # fmt: skip

    def step_fn(self, full: bool) -> Callable[[Any], Any]:
        """The function to train the next batch with."""
        wanted = self.compiled if self.compiled is not None else self._phase in (
            "compile", "compiled")  # fmt: skip
        if not (wanted and full):
            return self.eager
        if self._fn is None:
            self._fn = self.compile_step()
        return self._fn

    def failed(self, err: BaseException) -> None:
        """The compiled function raised: the rest of the run trains eagerly."""
        why = f"torch.compile failed ({type(err).__name__}: {str(err).splitlines()[0][:200]})"
        if self.mode == "on":
            warnings.warn(f"{why}; training eagerly", RuntimeWarning, stacklevel=3)
        log.info("compile %s: eager, %s", self.mode, why)
        self._fn, self.compiled = None, False

    def done(self, seconds: float, full: bool) -> None:
        """Report the seconds of the step just trained with :meth:`step_fn`'s function."""
        self.remaining -= 1
        if self.compiled is not None or not full:
            return
        if self._phase == "warm-up":  # first-call costs of the eager kernels
            self._phase = "eager"
        elif self._phase == "compile":  # the first compiled call compiled the step
            self.compile_seconds = max(0.0, seconds - statistics.median(self.times["eager"]))
            self._phase = "compiled"
        else:
            self.times[self._phase].append(seconds)
            if len(self.times[self._phase]) == TIMED_STEPS:
                self._decide()

    def _decide(self) -> None:
        eager = statistics.median(self.times["eager"])
        if self._phase == "eager":
            projected = eager * self.remaining
            if projected >= COMPILE_MIN_SECONDS:
                self._phase = "compile"
                return
            self.compiled = False
            log.info("compile auto: eager, the remaining %d steps would take %.0f s, under "
                     "%.0f s", self.remaining, projected, COMPILE_MIN_SECONDS)  # fmt: skip
            return
        compiled = statistics.median(self.times["compiled"])
        self.compiled, why = decide(eager, compiled, self.compile_seconds, self.remaining)
        if not self.compiled:
            self._fn = None
        log.info("compile auto: %s, %s (compiling took %.0f s)",
                 "compiled" if self.compiled else "eager", why, self.compile_seconds)  # fmt: skip
