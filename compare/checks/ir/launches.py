"""The Triton kernels an op launches: `LaunchRecorder` wraps `JITFunction.run` (and the interpreter's) in a
`with` block and records each launch's kernel, specialization and options (on compiled Triton the kernel
launched), the grid it ran on, and, entered through `during(PASS)`, which pass launched it. A kernel launched
again with another specialization is recorded again as `name#2`, `name#3`, in launch order."""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from compare.checks.ir.compile import specialization


@dataclasses.dataclass(frozen=True)
class Launch:
    name: str              # the kernel's Python name, '#N' added for its N-th specialization
    function: Any          # the JITFunction (or InterpretedFunction) that was launched
    specialization: dict   # compare.checks.ir.compile.specialization of the launch's arguments (launch options included)
    kernel: Any = None     # compiled Triton: the CompiledKernel the JIT launched
    problem: str = ""      # why the specialization could not be read from the arguments ('' if it was)


def python_function(function):
    """The plain Python function behind a JITFunction or InterpretedFunction."""
    return getattr(function, "fn", function)


def _grid(function, args: tuple, kwargs: dict, grid) -> tuple:
    """The grid a launch ran on, as three ints; () where it cannot be worked out (a grid function that needs
    more than the kernel's arguments). Same code on another grid is another launch: not the same timed work."""
    try:
        if callable(grid):
            signature = inspect.signature(python_function(function))
            bound = signature.bind(*args, **{k: v for k, v in kwargs.items() if k in signature.parameters})
            bound.apply_defaults()
            grid = grid(dict(bound.arguments))
        grid = tuple(int(g) for g in grid)
    except Exception:  # noqa: BLE001 - the launch itself went through; only its grid is not known
        return ()
    return grid + (1,) * (3 - len(grid))


def _launched_kernel(result):
    """The CompiledKernel a JITFunction.run returned (None under the interpreter)."""
    if result is not None and hasattr(result, "result") and not hasattr(result, "asm"):
        result = result.result()   # an asynchronous compile's future
    return result if hasattr(result, "asm") else None


class LaunchRecorder:
    """Records every Triton kernel launch while active (see the module's docstring); `launches` in order."""

    def __init__(self):
        self.launches: list[Launch] = []
        self.passes: dict[str, list[str]] = {}   # pass -> the names of the kernels it launched, in launch order
        self.grids: dict[str, list[tuple]] = {}   # kernel name -> the grids it was launched on (() not known)
        self._pass = ""
        self._seen: dict[tuple, str] = {}
        self._patched: list[tuple[type, Any]] = []

    def during(self, pass_name: str) -> "LaunchRecorder":
        """This recorder, its launches from now on noted as `pass_name`'s too (`with recorder.during(...)`)."""
        self._pass = pass_name
        return self

    def _classes(self) -> list[type]:
        from triton.runtime.jit import JITFunction
        classes: list[type] = [JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except ImportError:  # pragma: no cover - a Triton without the interpreter
            pass
        return classes

    def __enter__(self) -> "LaunchRecorder":
        for cls in self._classes():
            original = cls.run
            self._patched.append((cls, original))
            cls.run = self._wrap(original)
        return self

    def __exit__(self, *exc) -> None:
        for cls, original in reversed(self._patched):
            cls.run = original
        self._patched.clear()

    def _wrap(self, original):
        recorder = self

        def run(function, *args, grid, warmup, **kwargs):
            result = original(function, *args, grid=grid, warmup=warmup, **kwargs)
            if not warmup:
                recorder.record(function, args, kwargs, result, grid)
            return result
        return run

    def record(self, function, args: tuple, kwargs: dict, result=None, grid=None) -> None:
        try:
            spec, problem = specialization(function, args, kwargs), ""
        except (TypeError, ValueError) as exc:   # never break the op's launch; say why instead
            spec, problem = {}, f"its arguments could not be read: {exc}"
        base = python_function(function).__name__
        key = (id(python_function(function)), repr(spec))
        if key not in self._seen:
            same_name = sum(1 for launch in self.launches if launch.name.split("#")[0] == base)
            self._seen[key] = base if not same_name else f"{base}#{same_name + 1}"
            self.launches.append(Launch(self._seen[key], function, spec, _launched_kernel(result), problem))
        if self._pass and self._seen[key] not in self.passes.setdefault(self._pass, []):
            self.passes[self._pass].append(self._seen[key])
        launched_on = _grid(function, args, kwargs, grid)
        if launched_on not in self.grids.setdefault(self._seen[key], []):
            self.grids[self._seen[key]].append(launched_on)
