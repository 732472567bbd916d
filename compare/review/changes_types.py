"""The records of what changed, as compare/review/kernels.py gives them to mapping.py (interim home).

`ChangedOp` is one public op whose behaviour a change touched; `What` says what changed in it. Until
kernels.py produces `Changes.ops` itself, `ops_from_kernels` derives them from its changed kernels' ops
(the lead moves these records into kernels.py and drops the bridge).
"""
from __future__ import annotations

import dataclasses
import enum


class Change(str, enum.Enum):
    KERNEL = "kernel"
    JIT_HELPER = "jit helper"
    KERNEL_ADDED = "kernel added"
    KERNEL_REMOVED = "kernel removed"
    LAUNCH = "launch"
    HELPER = "helper"
    CONSTANT = "constant"
    OWN_CODE = "own code"


_KERNEL_CODE = (Change.KERNEL, Change.JIT_HELPER, Change.KERNEL_ADDED, Change.KERNEL_REMOVED)


@dataclasses.dataclass(frozen=True)
class What:
    kind: Change
    name: str
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Op:
    """A callable users call: a function, or an autograd Function's `apply` (ctx left out)."""

    name: str
    params: tuple[str, ...]
    required: int                    # how many parameters have no default (the first ones)
    returns_tuple: bool = False
    defaults: tuple[str, ...] = ()   # the source text of the defaults of params[required:]


@dataclasses.dataclass(frozen=True)
class ChangedOp:
    path: str
    module: str
    op: Op                           # at HEAD
    base_op: Op | None               # at BASE (None: the op is new)
    kernels: tuple[str, ...]         # the changed kernels it launches (module:name)
    what: tuple[What, ...]
    folded: tuple[str, ...] = ()     # inner ops whose changes this entry stands for

    @property
    def launcher_only(self) -> bool:
        """No kernel's code changed: only the Python around the launches."""
        return not any(w.kind in _KERNEL_CODE for w in self.what)


def ops_from_kernels(changed) -> list[ChangedOp]:
    """ChangedOps from (BASE, HEAD) kernel pairs whose `ops` list what launches them (an op at both
    revisions only), one per op, with every changed kernel it launches."""
    found: dict[tuple[str, str], ChangedOp] = {}
    for base, kernel in changed:
        at_base = {o.name: o for o in base.ops}
        for o in kernel.ops:
            key = (kernel.path, o.name)
            what = What(Change.KERNEL, kernel.name)
            if key in found:
                kept = found[key]
                found[key] = dataclasses.replace(kept, kernels=kept.kernels + (kernel.key,), what=kept.what + (what,))
            elif o.name in at_base:
                b = at_base[o.name]
                found[key] = ChangedOp(kernel.path, kernel.module, Op(o.name, o.params, o.required),
                                       Op(b.name, b.params, b.required), (kernel.key,), (what,))
    return list(found.values())
