"""What kind of failure a variant's exception is (compare.model.results.Failure), from its type, its chain
(`__cause__`/`__context__`) and its traceback's frames, never its message: Triton's interpreter wrapping
it, the op not callable as the family calls it, or an error raised inside the variant's own code."""
from __future__ import annotations

import dataclasses
import os
import traceback
from typing import Iterator, Optional

from compare.model.results import Failure
from variants.ops import MappedOp
from variants.variant import NoGradient, OpCallError


def _interpreter_error() -> Optional[type]:
    """The class Triton's interpreter wraps every error of a kernel it runs in (triton/runtime/interpreter.py);
    imported only when asked: importing triton early would fix its mode before the backend is chosen."""
    try:
        from triton.runtime.errors import InterpreterError
    except ImportError:   # no triton: nothing ran on its interpreter
        return None
    return InterpreterError


@dataclasses.dataclass(frozen=True)
class Classified:
    kind: Failure
    at: str = ""        # LIBRARY: file:line of the innermost frame in the library's tree


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what caused it or was being handled when it was raised, each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__]


def _root_of(filename: str, roots: tuple[str, ...]) -> Optional[str]:
    """The outermost of `roots` holding `filename`, or None."""
    path = os.path.realpath(filename)
    holding = [r for r in roots if path.startswith(os.path.realpath(r) + os.sep)]
    return min(holding, key=len) if holding else None


def library_frame(exc: BaseException, roots: tuple[str, ...]) -> str:
    """'path:line' (relative to the library's tree) of the innermost frame of `exc` in `roots`; "" if none."""
    inside = [(f, r) for f in traceback.extract_tb(exc.__traceback__) if (r := _root_of(f.filename, roots))]
    if not inside:
        return ""
    frame, root = inside[-1]
    return f"{os.path.relpath(os.path.realpath(frame.filename), os.path.realpath(root))}:{frame.lineno}"


_CALL_SITE = MappedOp.__call__.__code__


def _binding_failed(exc: BaseException, roots: tuple[str, ...]) -> bool:
    """A TypeError of the op's call itself: raised in the frame calling the op (Python's argument binding),
    or raised before any frame of the library's own code ran (e.g. by autograd's Function.apply)."""
    if not isinstance(exc, TypeError):
        return False
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    if not any(f.f_code is _CALL_SITE for f in frames):
        return False
    if frames[-1].f_code is _CALL_SITE:
        return True
    return bool(roots) and not library_frame(exc, roots)


def classify(exc: BaseException, roots: tuple[str, ...], interpreted: bool) -> Classified:
    """The failure kind of `exc`, raised by a variant whose code lies under `roots` (its import roots),
    run on Triton's interpreter when `interpreted`."""
    wrapper = _interpreter_error() if interpreted else None
    if wrapper is not None and any(isinstance(e, wrapper) for e in chain(exc)):
        return Classified(Failure.INTERPRETER)
    if isinstance(exc, (NoGradient, OpCallError)) or _binding_failed(exc, roots):
        return Classified(Failure.CALL)
    at = library_frame(exc, roots)
    return Classified(Failure.LIBRARY, at) if at else Classified(Failure.CRASH)
