"""The torch and inductor variants every family has: its op in eager torch and through torch.compile.

A family gives a `native` torch function that also returns the saved statistics, how to call it
(`args(inputs, shape)`) and how to store its results (`store(result, outputs, shape)`); the backward
of both variants runs autograd through the family's `torch_op` (plain or compiled).
"""
from __future__ import annotations

import time
from typing import Callable

import torch

from variants.variant import Variant


def allow_recompiles(limit: int = 256) -> None:
    """One compiled function serves every shape of a preset (dynamic=False: one graph per shape). Past
    dynamo's recompile limit (8 by default) it would silently run eager torch under the inductor name."""
    import torch._dynamo
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name) and getattr(torch._dynamo.config, name) < limit:
            setattr(torch._dynamo.config, name, limit)


class TorchForward:
    """The forward through torch: `native(*args(inputs, shape))`, stored into the outputs by `store`."""

    def __init__(self, native: Callable, args: Callable, store: Callable):
        self.native, self.args, self.store = native, args, store

    def __call__(self, inputs, outputs, shape) -> None:
        self.store(self.native(*self.args(inputs, shape)), outputs, shape)


class InductorForward(TorchForward):
    """The torch forward through torch.compile; compiles on first call and records how long it took."""

    def __init__(self, native: Callable, args: Callable, store: Callable):
        super().__init__(native, args, store)
        self._compiled = None
        self.compile_seconds: float | None = None

    def __call__(self, inputs, outputs, shape) -> None:
        first = self._compiled is None
        if first:
            allow_recompiles()
            self._compiled = torch.compile(self.native, dynamic=False)
            start = time.perf_counter()
        result = self._compiled(*self.args(inputs, shape))
        if first:
            torch.cuda.synchronize()
            self.compile_seconds = time.perf_counter() - start
        self.store(result, outputs, shape)


class CompiledOp:
    """An op through torch.compile, compiled on first call (for autograd's backward through inductor)."""

    def __init__(self, op: Callable):
        self.op = op
        self._compiled = None

    def __call__(self, *args):
        if self._compiled is None:
            allow_recompiles()
            self._compiled = torch.compile(self.op, dynamic=False)
        return self._compiled(*args)


def torch_variants(family: str, op: Callable, native: Callable, args: Callable, store: Callable,
                   what: str) -> list[Variant]:
    """The `torch` (eager, in the input's dtype) and `inductor` (GPU only) variants; `what` names the torch function."""
    return [
        Variant("torch", family, f"{what}, eager, in the input's dtype", "torch", TorchForward(native, args, store),
                origin="torch", op=op),
        Variant("inductor", family, "the torch baseline through torch.compile (GPU only)", "inductor",
                InductorForward(native, args, store), needs_gpu=True, origin="torch.compile", op=CompiledOp(op)),
    ]
