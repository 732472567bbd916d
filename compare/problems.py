"""What is wrong with one variant in one numerics case, as comparable records, and how to say a set of
them in a line per input kind and dtype. The headline (compare/headline.py) decides, from these, what a
variant introduced and what every variant shares.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.results import NumericsCase, NumericsSection, VariantNumerics

# problem kinds, most severe first; an output shows only its most severe one
KINDS = ("crashed", "never written", "non-finite where the reference is finite (or the reverse)",
         "beyond tolerance", "less accurate than the reference point", "writes into its input")

@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem of one variant in one numerics case."""

    direction: str
    dtype: str
    input_kind: str
    shape: str
    output: str          # "-" for a crash
    kind: str            # one of KINDS
    detail: str = ""     # how to say it, if more precisely than `kind` (not part of its identity)
    order: int = 0       # the output's place among the case's outputs, for listing

    @property
    def key(self) -> tuple:
        return (self.direction, self.dtype, self.input_kind, self.shape, self.output, self.kind)


def variant_of(case: NumericsCase, name: str) -> Optional[VariantNumerics]:
    return next((v for v in case.variants if v.variant == name), None)


def ran(v: Optional[VariantNumerics]) -> bool:
    return v is not None and v.status in ("pass", "fail", "error")


def problems(case: NumericsCase, name: str) -> set[Problem]:
    """What is wrong with variant `name` in `case` (empty for the reference point: it is the yardstick)."""
    v = variant_of(case, name)
    if not ran(v) or name == case.reference:
        return set()
    where = (case.direction, case.dtype, case.input_kind, case.shape)
    # an input it writes into: its output field names the input (x, dy), listed after the outputs
    found = {Problem(*where, w.input, KINDS[5], "", len(v.outputs) + i) for i, w in enumerate(v.writes)}
    if v.status == "error":
        return found | {Problem(*where, "-", KINDS[0], f"crashed ({v.reasons[0]})" if v.reasons else "")}
    order = {e.output: i for i, e in enumerate(v.outputs)}
    for e in v.outputs:
        nonfinite = "NaN" if e.nan and not e.inf else "Inf" if e.inf and not e.nan else "NaN/Inf"
        for kind, count, say in ((KINDS[1], e.unwritten, ""),
                                 (KINDS[2], e.nonfinite_mismatch, f"{nonfinite} where the reference is finite"),
                                 (KINDS[3], e.beyond_tol, "")):
            if count:
                found.add(Problem(*where, e.output, kind, say, order[e.output]))
    for verdict in case.verdicts:
        if (verdict.a, verdict.b) == (case.reference, name) and verdict.accuracy == "less accurate":
            found |= {Problem(*where, o, KINDS[4], f"less accurate than {case.reference}", order.get(o, 0))
                      for o in verdict.lost}
    return found


def _worst_per_output(items: set[Problem]) -> list[Problem]:
    worst: dict[tuple, Problem] = {}
    # sorted, so that among equally bad problems (say NaN on one shape, NaN/Inf on another) the one
    # shown does not depend on set order: a report must render the same in every process
    for p in sorted(items, key=lambda p: (KINDS.index(p.kind), p.shape, p.detail, p.dtype, p.input_kind)):
        k = (p.direction, p.output)
        if k not in worst or KINDS.index(p.kind) < KINDS.index(worst[k].kind):
            worst[k] = p
    return sorted(worst.values(), key=lambda p: (p.direction != "forward", p.direction, p.order))


def describe(items: set[Problem], kinds_order: tuple[str, ...] = ()) -> list[str]:
    """Problems as lines, one per (input kind, dtype): '<kind> inputs, <dtype>: <what> in <direction> <outputs>; ...',
    input kinds in `kinds_order` (then the rest)."""
    groups: dict[tuple[str, str], set[Problem]] = {}
    for p in items:
        groups.setdefault((p.input_kind, p.dtype), set()).add(p)
    rank = {k: i for i, k in enumerate(kinds_order)}
    lines = []
    for (kind, dtype), ps in sorted(groups.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), kv[0])):
        by_what: dict[str, list[str]] = {}
        for p in _worst_per_output(ps):
            by_what.setdefault(p.detail or p.kind, []).append(p.direction if p.output == "-"
                                                               else f"{p.direction} {p.output}")
        shapes = len({p.shape for p in ps})
        on = f", {shapes} shapes" if shapes > 1 else ""
        lines.append(f"{kind} inputs, {dtype}{on}: " + "; ".join(f"{what} in {_join_outputs(outs)}"
                                                                 for what, outs in by_what.items()))
    return lines


def _join_outputs(outs: list[str]) -> str:
    """'forward y', 'forward rstd', 'backward dx' as 'forward y, rstd and backward dx'."""
    by_dir: dict[str, list[str]] = {}
    for o in outs:
        d, _, name = o.partition(" ")
        by_dir.setdefault(d, []).append(name)
    return " and ".join(f"{d} {', '.join(n for n in names if n)}".strip() for d, names in by_dir.items())


def input_kinds(section: NumericsSection) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.input_kind for c in section.cases))


