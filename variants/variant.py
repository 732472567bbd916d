"""One kernel variant: a frozen, self-validating record of what to run and where it came from; and what an
op variant's call must return (a plain tensor, with a gradient for its backward), or the error saying why not."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

MODES = ("forward", "backward", "full")   # the passes a family times: forward, backward, both
KINDS = ("triton", "torch", "inductor", "op")   # op: a Python op or autograd Function (variants/ops.py)
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class NotPlainTensor(TypeError):
    """An op returned a torch.Tensor subclass: its values could be computed when read rather than by the
    call (a foul; the result is never read). The message is the subclass's name."""


class OpCallError(TypeError):
    """The op cannot be called, or its result read, the way its mapping says (a mapping's fault, not the op's)."""


class NoGradient(RuntimeError):
    """The op's result carries no gradient (a forward-only function, or a result made outside autograd):
    its backward cannot run through autograd, however the kernels compute."""


def differentiable_result(returned, name: str):
    """The op's result (`result_of`) when autograd can run back through it; NoGradient saying why not."""
    result = result_of(returned)
    many = f"a tuple of {len(returned)}, whose first is " if isinstance(returned, (tuple, list)) else ""
    if not hasattr(result, "requires_grad"):
        raise NoGradient(f"{name} returned {many}{type(result).__name__}, not a tensor: autograd cannot run back through it")
    if not result.requires_grad:
        raise NoGradient(f"{name} returned {many}a tensor without a gradient (made outside autograd: the "
                         "function is forward-only), so its backward cannot run through autograd")
    return result


def result_of(returned):
    """The op's result as timed passes see it (a MappedOp has already picked its output); NotPlainTensor for
    a torch.Tensor subclass, whose work could run when it is read (it is never read)."""
    import torch   # imported when called: the protocol's records load without it
    result = returned[0] if isinstance(returned, (tuple, list)) else returned
    if isinstance(result, torch.Tensor) and type(result) is not torch.Tensor:
        raise NotPlainTensor(type(result).__name__)
    return result


@dataclasses.dataclass(frozen=True)
class Variant:
    """One variant of a family: `run(inputs, outputs, shape)` computes the forward into preallocated `outputs`.

A Triton variant brings its forward kernel, its backward kernel, or both; the pass it does not bring runs the
family's shared kernel. `op`, when set, is the operation as its users call it (arguments in `op_order`,
default the family's `op_params`); its backward runs through autograd. `origin`: where the code came from."""

    name: str
    family: str
    why: str
    kind: str
    run: Callable[..., None]
    needs_gpu: bool = False
    kernel: Any = None                   # the variant's own forward kernel (@triton.jit), if it brings one
    origin: str = ""
    import_roots: tuple[str, ...] = ()   # folders to put on sys.path to import the kernel's module again
    backward_kernel: Any = None          # the variant's own backward kernel, if it brings one
    op: Callable[..., Any] | None = None   # the op, called with canonical arguments (autograd runs back through it)
    op_order: tuple[str, ...] = ()       # the canonical argument names in the order `op` takes them (() : op_params)
    # a launcher of its own for its backward kernel, with Family.backward_call's signature, when that kernel
    # launches differently from the family's (e.g. one program per row instead of persistent programs)
    backward_launcher: Callable[..., Callable[[], None]] | None = None
    # a launcher of its own for its forward kernel, with Family.launch_forward's signature, when that kernel
    # takes other parameters (e.g. a flat 1-D grid over every element); a family method, so the IR replays it
    forward_launcher: Callable[..., None] | None = None

    def __post_init__(self):
        if not NAME.match(self.name):
            raise ValueError(f"variant name {self.name!r} must be an identifier (letters, digits, _ . -)")
        if self.kind not in KINDS:
            raise ValueError(f"variant {self.name}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.why.strip() or "\n" in self.why:
            raise ValueError(f"variant {self.name}: `why` must be one non-empty line")
        if self.kind == "triton" and self.kernel is None and self.backward_kernel is None:
            raise ValueError(f"variant {self.name}: a Triton variant needs its forward or backward @triton.jit kernel")
        if not callable(self.run):
            raise ValueError(f"variant {self.name}: `run` must be callable")

    @property
    def own_kernels(self) -> tuple[str, ...]:
        """The passes whose kernel this variant brings ("forward", "backward"); the others are the family's."""
        return tuple(p for p, k in (("forward", self.kernel), ("backward", self.backward_kernel)) if k is not None)
