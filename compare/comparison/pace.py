"""How long a numerics case will take on the CPU (Triton's interpreter), said before it starts when that is more
than a minute. A case's work is the elements its interpreted variants move: the inputs and outputs (and
gradients, backward) of one call, times the trials, times the Triton variants and ops run. Its time is that work
at the pace of the cases done so far in this run, or, before any, at ELEMENTS_PER_S."""
from __future__ import annotations

import contextlib
import sys
import time
from typing import NamedTuple

from compare.comparison.memory import meta_sizes

# element-runs a second through the interpreter, measured on a 2-core machine with the default pair
# (`python3 main.py compare --shape 16,128,8,32x32 --trials 1 --check numerics --inputs normal`: 6.3M elements
# moved by each of 2 variants in 6.4 s); the first case's estimate, before the run has a pace of its own
ELEMENTS_PER_S = 2.0e6
WARN_AFTER_S = 60.0


class CaseWork(NamedTuple):
    """A numerics case's interpreted work: the elements one call moves, and the calls it makes."""

    elements: int
    calls: int


def case_work(family, variants, shape, dtype, seeds, direction: str, backend) -> CaseWork:
    """The case's interpreted work, measured on meta tensors: nothing allocated."""
    from compare.checks.numerics import interpreter_untrusted
    if interpreter_untrusted(backend, dtype):   # its Triton variants are not run
        return CaseWork(0, 0)
    run = [v for v in variants if v.kind in ("triton", "op") and not v.needs_gpu]
    (inputs, _), (outputs, _) = meta_sizes(family, shape, dtype, direction == "backward")
    return CaseWork(inputs + outputs, len(run) * len(tuple(seeds)))


class Pace:
    """The run's pace through the interpreter: element-runs done and the seconds they took."""

    def __init__(self):
        self.work, self.seconds = 0, 0.0

    def estimate_s(self, work: int) -> float:
        rate = self.work / self.seconds if self.work and self.seconds > 0 else ELEMENTS_PER_S
        return work / rate

    def record(self, work: int, seconds: float) -> None:
        self.work, self.seconds = self.work + work, self.seconds + seconds

    @contextlib.contextmanager
    def case(self, label: str, case: CaseWork):
        """Warn on stderr before a case estimated at more than WARN_AFTER_S; count its time when it ends."""
        elements, calls = case.elements, case.calls
        work = elements * calls
        estimate = self.estimate_s(work)
        if estimate > WARN_AFTER_S:
            source = "at this run's pace so far" if self.work else "at the interpreter's usual pace"
            print(f"kernel-ab: warning: the case {label} may take about {estimate:.0f} s on the CPU interpreter "
                  f"({source}: {elements / 1e6:.1f}M elements, {calls} interpreted calls); a smaller --shape or "
                  f"--preset, or fewer --trials, makes it shorter", file=sys.stderr, flush=True)
        start = time.monotonic()
        yield
        self.record(work, time.monotonic() - start)
