"""Whether two variants run the same compiled code: every kernel of every pass they run identical at every
stage down to SASS, decided from a report's compiled-code sections alone (so a saved report.json decides
the same). Where they do, a timing difference between them is noise by construction: the headline says
so instead of a timing verdict."""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.results import IRSection, PassStatus, Report

MACHINE_STAGE = "sass"   # identical here too: the same machine code, not only the same intermediate code


@dataclasses.dataclass(frozen=True)
class SameCode:
    """Two variants' kernels, identical at every stage compiled."""

    mode: str                     # "offline" (compiled for `target` without a GPU) or "launched" (as run here)
    target: str                   # "sm_90", or "the GPU's" when launched
    stages: tuple[str, ...]
    kernels: tuple[str, ...]      # what was compared: "forward kernel", or an op's launched kernels by name
    shared: tuple[str, ...] = ()  # passes not compiled: every variant runs the same kernel for them

    @property
    def where(self) -> str:
        """'sm_90, compiled offline' or 'as launched on this GPU'."""
        return f"{self.target}, compiled offline" if self.mode == "offline" else "as launched on this GPU"


def _unknown(section: IRSection, a: str, b: str) -> bool:
    """A pass of a or b (or of every variant) that no section compares for a reason other than sharing."""
    return any(n.status != PassStatus.SHARED and n.variant in ("", a, b) for n in section.passes)


def _identical(section: IRSection, a: str, b: str) -> Optional[tuple[str, ...]]:
    """What of a and b this section compared, when all of it is identical; None otherwise."""
    matches = [m for m in section.kernels if (m.a, m.b) == (a, b)]
    if matches:   # op-level variants: every kernel either launched, paired by name
        return tuple(m.kernel for m in matches) if all(m.identical for m in matches) else None
    pair = next((p for p in section.pairs if (p.a, p.b) == (a, b)), None)
    if pair is None or not pair.stages or not all(d.identical for d in pair.stages):
        return None
    return (f"{section.kernel} kernel",)


def same_code(report: Report, a: str, b: str) -> Optional[SameCode]:
    """SameCode when a and b ran the same compiled code in every pass (see the module), else None: also
    when any pass or stage down to SASS was not compared."""
    sections = report.ir_sections
    if not sections or any(MACHINE_STAGE not in s.stages or _unknown(s, a, b) for s in sections):
        return None
    kernels: list[str] = []
    for section in sections:
        found = _identical(section, a, b)
        if found is None:
            return None
        kernels += found
    shared = tuple(n.kernel for s in sections for n in s.passes if n.status == PassStatus.SHARED)
    first = sections[0]
    return SameCode(first.mode, first.target, first.stages, tuple(kernels), shared)
