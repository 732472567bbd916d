"""The Triton kernels an op launches: recorded at launch, with the argument types they were launched with.

`LaunchRecorder` wraps `JITFunction.run` (and the interpreter's) inside a `with` block and records each
launch's kernel, specialization and options, and on compiled Triton the kernel launched. A kernel
launched again with another specialization is recorded again as `name#2`, `name#3`, in launch order."""
from __future__ import annotations

import dataclasses
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


def _launched_kernel(result):
    """The CompiledKernel a JITFunction.run returned (None under the interpreter)."""
    if result is not None and hasattr(result, "result") and not hasattr(result, "asm"):
        result = result.result()   # an asynchronous compile's future
    return result if hasattr(result, "asm") else None


class LaunchRecorder:
    """Records every Triton kernel launch while active (see the module's docstring); `launches` in order."""

    def __init__(self):
        self.launches: list[Launch] = []
        self._seen: dict[tuple, str] = {}
        self._patched: list[tuple[type, Any]] = []

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
                recorder.record(function, args, kwargs, result)
            return result
        return run

    def record(self, function, args: tuple, kwargs: dict, result=None) -> None:
        try:
            spec, problem = specialization(function, args, kwargs), ""
        except (TypeError, ValueError) as exc:   # never break the op's launch; say why instead
            spec, problem = {}, f"its arguments could not be read: {exc}"
        base = python_function(function).__name__
        key = (id(python_function(function)), repr(spec))
        if key in self._seen:
            return
        same_name = sum(1 for launch in self.launches if launch.name.split("#")[0] == base)
        name = base if not same_name else f"{base}#{same_name + 1}"
        self._seen[key] = name
        self.launches.append(Launch(name, function, spec, _launched_kernel(result), problem))
