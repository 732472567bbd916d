"""Whether a family fits an op it was matched to by parameter names alone: BASE's forward must agree with
the family's reference on a normal input before the family judges the change. An op that takes a
layer norm's arguments need not be a layer norm (a poly norm takes (X, W, B, eps) too)."""
from __future__ import annotations

import dataclasses

from compare.model.states import Failure, Status

NORMAL = "normal"
# failures that say the family's call or numbers are not the op's: the family does not fit it
_MISFIT = frozenset({Failure.CALL, Failure.LIBRARY})


@dataclasses.dataclass(frozen=True)
class FamilyFit:
    fits: bool
    why: str = ""        # how far off BASE is, where it does not fit


def family_fit(report, base: str) -> FamilyFit:
    """From `report`'s forward numerics (or a run's findings so far): variant `base` passed on some normal-input case (fits), or on none
    of them it ran, each failing the tolerance or raising in the op's own code or call (does not fit).
    Without such cases (numerics not run, the variant never loaded) the family is left to judge."""
    numerics = getattr(report, "numerics", None)
    runs = [(case, v) for case in (numerics.cases if numerics else ()) if case.direction == "forward"
            and case.input_kind == NORMAL for v in case.variants if v.variant == base]
    if not runs or any(v.status == Status.PASS for _, v in runs):
        return FamilyFit(True)
    judged = [(c, v) for c, v in runs if v.status == Status.FAIL or (v.status == Status.ERROR and v.failure in _MISFIT)]
    if len(judged) < len(runs):
        return FamilyFit(True)
    case, v = judged[0]
    if v.status == Status.ERROR:
        return FamilyFit(False, f"BASE's forward raises on its {NORMAL} input ({case.shape}, {case.dtype}): "
                                f"{v.reasons[0] if v.reasons else v.failure}")
    off = [f"{e.beyond_tol} of {e.numel} elements of {e.output}" for e in v.outputs if e.beyond_tol]
    return FamilyFit(False, f"BASE's forward is beyond its reference's tolerance on its {NORMAL} input "
                            f"({case.shape}, {case.dtype}) in {', '.join(off) or 'its outputs'}")
