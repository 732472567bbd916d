"""Checks on a loaded kernel: is it a Triton kernel, which of the family's launchers it fits (forward or
backward, by its parameters), and does it compile (on a GPU, through the family's launcher, not launched)."""
from __future__ import annotations

import inspect

from typing import TYPE_CHECKING

from variants.spec import BadSpec

if TYPE_CHECKING:   # annotations only
    from variants.family import Family


def _is_triton_kernel(obj) -> bool:
    from triton.runtime.jit import JITFunction
    kinds: tuple[type, ...] = (JITFunction,)
    try:
        from triton.runtime.interpreter import InterpretedFunction
        kinds += (InterpretedFunction,)
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        pass
    return isinstance(obj, kinds)


def _mismatch(params: list, expected: tuple[str, ...]) -> list[str]:
    """What keeps a kernel with `params` from taking `expected` ([] if nothing: extra parameters after
    those are allowed when they have defaults)."""
    got = [p.name for p in params]
    head = got[:len(expected)]
    extra_required = [p.name for p in params[len(expected):] if p.default is inspect.Parameter.empty]
    if head == list(expected) and not extra_required:
        return []
    missing = [n for n in expected if n not in got]
    unexpected = [n for n in got if n not in expected and n in extra_required + head]
    parts = []
    if missing:
        parts.append(f"missing {', '.join(missing)}")
    if unexpected:
        parts.append(f"unexpected {', '.join(unexpected)}")
    if not parts:
        first = next(i for i, (a, b) in enumerate(zip(head, expected)) if a != b)
        parts.append(f"parameter {first + 1} is {head[first]}, the launcher passes {expected[first]} there")
    return parts


def kernel_role(kernel, family: Family, where: str) -> str:
    """"forward" or "backward": which of the family's launchers `kernel` takes the parameters of;
    BadSpec naming the differences from the closer one if neither."""
    roles = [(r, p) for r, p in (("forward", family.forward_params), ("backward", family.backward_params)) if p]
    if not roles:
        raise BadSpec(f"{where}: family {family.name} does not say what parameters its launchers pass; "
                      "it cannot take loaded kernels")
    params = list(inspect.signature(kernel.fn).parameters.values())
    found = [(r, _mismatch(params, p), p) for r, p in roles]
    for role, parts, _ in found:
        if not parts:
            return role
    names = {p.name for p in params}
    role, parts, _ = max(found, key=lambda f: sum(n in names for n in f[2]) / len(f[2]))   # the closer launcher
    other = f" (nor the {'backward' if role == 'forward' else 'forward'} one)" if len(found) > 1 else ""
    raise BadSpec(f"{where}: parameters do not match {family.name}'s {role} launcher{other}: {'; '.join(parts)}")


def _compile_error_lines(exc: BaseException) -> str:
    """The first lines of a Triton compilation error: what went wrong, and the kernel line it is at."""
    message = getattr(exc, "error_message", None) or (repr(exc.__cause__) if exc.__cause__ else "")
    if not message:
        message = next((ln for ln in reversed(str(exc).splitlines()) if ln.strip()), "")
    lines = [f"{type(exc).__name__}: {message}"[:300]]
    node, src = getattr(exc, "node", None), getattr(exc, "src", None)
    lineno = getattr(node, "lineno", None)
    if isinstance(src, str) and isinstance(lineno, int) and 0 < lineno <= len(src.splitlines()):
        lines.append(f"at line {lineno} of the kernel: {src.splitlines()[lineno - 1].strip()}"[:300])
    return "\n".join(lines)


class _CompileOnly:
    """Stands in for a kernel in the family's launcher: `kernel[grid](...)` compiles (Triton's
    `warmup`) and launches nothing."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.kernel.warmup(*args, grid=grid, **kwargs)


def compile_failures(family: Family, variants, shape, dtype, device: str, step=None) -> dict[str, str]:
    """{variant name: first lines of the error} for Triton variants whose own kernels (forward,
    backward) do not compile for `shape`: each is compiled through the family's launcher with the real
    arguments, not launched. For compiled Triton (the interpreter compiles nothing). Other errors are
    left to the numerics. The inputs are drawn once for all of them (on an image shape a draw takes
    seconds); `step(text)`, if given, hears of each kernel before it compiles."""
    try:
        from triton.compiler.errors import CompilationError
    except ImportError:  # pragma: no cover - a Triton without it
        return {}
    failures = {}
    drawn = None
    for v in variants:
        own = [(r, k) for r, k in (("forward", v.kernel), ("backward", v.backward_kernel))
               if v.kind == "triton" and hasattr(k, "warmup")]
        for role, kernel in own:
            if step is not None:
                step(f"checking that {v.name}'s {role} kernel compiles for {shape.label}")
            if drawn is None:
                drawn = family.make_inputs(shape, dtype, device, 0)
            inputs = drawn
            outputs = family.alloc_outputs(shape, dtype, device)
            try:
                if role == "forward":
                    family.forward_launch_of(v)(_CompileOnly(kernel), inputs, outputs, shape)
                else:
                    grads = family.alloc_grads(shape, dtype, device)
                    family.backward_launch_of(v)(_CompileOnly(kernel), inputs, outputs, grads, shape)()
            except CompilationError as exc:
                failures[v.name] = f"{'' if role == 'forward' else 'backward kernel '}does not compile: " \
                                   f"{_compile_error_lines(exc)}"
                break
            except Exception:  # noqa: BLE001 - anything else is the numerics' to report
                pass
    return failures
