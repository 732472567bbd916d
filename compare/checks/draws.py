"""The numerics run's inputs, drawn ahead of use in a few threads: a trial's draw on the CPU (so that CPU and GPU
runs check the same values) costs about 0.4 s at a realistic GPU shape, more than the kernels; draws are
independent (a generator each), so threads draw the coming trials, and a trial read again (the backward's
seed 0) is drawn once while memory allows. Same bits as `family.make_inputs` on the spot; each variant run
still reads a sealed copy (compare.runtime.sealing), so sharing a draw shares no writes."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from typing import Any

AHEAD = 4                 # trials drawn ahead of the one in use, at most
HELD_BYTES = 1 << 30      # drawn trials held (ahead, or for a later use) at most this much memory


def workers() -> int:
    """Threads drawing: one core is left to the run itself."""
    return max(1, min(AHEAD, (os.cpu_count() or 1) - 1))


@dataclasses.dataclass(frozen=True)
class Trials:
    """The trials of one numerics case, as drawn: a trial per seed of `kind` inputs of `shape` and `dtype`."""

    shape: Any            # the family's shape
    dtype: Any            # the torch dtype
    kind: str             # the input kind
    seeds: tuple[int, ...]


class Draws:
    """`get(shape, dtype, seed, kind)` gives `family.make_inputs(shape, dtype, device, seed, kind)`. The `Trials` of
    `cases` (the numerics cases in run order) are drawn ahead, in that order; any other is drawn when asked for.
    Use it as a with-block: what is left is dropped at its end."""

    def __init__(self, family, device, cases: list[Trials]):
        self.family, self.device = family, device
        self.shapes = {c.shape.label: c.shape for c in cases}
        self.uses = [(c.shape.label, c.dtype, seed, c.kind) for c in cases for seed in c.seeds]
        self.at = 0                                   # uses served so far
        self.held: dict[tuple, concurrent.futures.Future] = {}
        self.size: dict[tuple, int] = {}              # (shape label, dtype) -> bytes of one trial's inputs
        self.pool = concurrent.futures.ThreadPoolExecutor(workers(), thread_name_prefix="kernel-ab draw")

    def __enter__(self) -> "Draws":
        self._ahead()
        return self

    def __exit__(self, *exc) -> None:
        self.held.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def get(self, shape, dtype, seed: int, kind: str):
        key = (shape.label, dtype, seed, kind)
        future = self.held.pop(key, None)
        inputs = future.result() if future is not None else \
            self.family.make_inputs(shape, dtype, self.device, seed, kind)
        self.size[key[:2]] = sum(t.numel() * t.element_size() for t in inputs.named_tensors().values()) \
            if hasattr(inputs, "named_tensors") else 0
        if key in self.uses[self.at:]:
            self.at = self.uses.index(key, self.at) + 1
        if key in self.uses[self.at:] and self._fits(key):   # read again later (the backward's seed 0)
            self.held[key] = _done(inputs)
        self._ahead()
        return inputs

    def _ahead(self) -> None:
        for key in dict.fromkeys(self.uses[self.at:self.at + AHEAD]):
            if key in self.held:
                continue
            if not self._fits(key):
                return
            label, dtype, seed, kind = key
            self.held[key] = self.pool.submit(self.family.make_inputs, self.shapes[label], dtype, self.device,
                                              seed, kind)

    def _fits(self, key) -> bool:
        one = self.size.get(key[:2])
        if one is None:        # its size is known once one is drawn: until then, one at a time
            return not self.held
        return sum(self.size.get(k[:2], one) for k in self.held) + one <= HELD_BYTES


def _done(value) -> concurrent.futures.Future:
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_result(value)
    return future
