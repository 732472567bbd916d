"""The accuracy verdict of a pair (PairVerdict): is B more, as or less accurate than A, from their errors
against the float64 reference (compare/checks/numerics.py measures them)."""
from __future__ import annotations

import itertools

import torch

from compare.model.results import PairBitwise, PairVerdict, VariantNumerics
from compare.model.states import Accuracy

# B is "at least as accurate as A" if its errors are within this factor of A's (PairVerdict)
VERDICT_FACTOR = 2.0


def _verdicts(results: list[VariantNumerics], pairs: list[PairBitwise], reference: str,
              dtype: torch.dtype) -> tuple[PairVerdict, ...]:
    """A verdict for every pair (A, B) with A before B in the variant order, and (reference, B) for
    every other B, among variants that produced numbers."""
    ran = [r for r in results if r.status in ("pass", "fail")]
    by_name = {r.variant: r for r in ran}
    ordered = [(a, b) for a, b in itertools.combinations([r.variant for r in ran], 2) if b != reference]
    if reference in by_name:
        ordered += [(reference, r.variant) for r in ran if r.variant != reference and (reference, r.variant) not in ordered]
    out = []
    for a, b in ordered:
        equal = [p.equal for p in pairs if {p.a, p.b} == {a, b}]
        out.append(verdict(by_name[a], by_name[b], bool(equal) and all(equal), dtype))
    return tuple(out)


def _losses(a: VariantNumerics, b: VariantNumerics, u: float, factor: float) -> list[tuple[str, str, float, float]]:
    """(output, measure, B's figure, A's figure) for every output and measure on which B is worse than
    A by the PairVerdict rule."""
    a_out = {e.output: e for e in a.outputs}
    worse = []
    for eb in b.outputs:
        ea = a_out.get(eb.output)
        if ea is None:
            continue
        bad_a, bad_b = ea.nonfinite_mismatch + ea.unwritten, eb.nonfinite_mismatch + eb.unwritten
        if bad_a != bad_b:   # the errors below are measured over different elements: the count decides
            if bad_b > bad_a:
                worse.append((eb.output, "bad", bad_b, bad_a))
            continue
        if eb.rel_l2 > factor * ea.rel_l2 + u:
            worse.append((eb.output, "rel L2", eb.rel_l2, ea.rel_l2))
        floor = u / 2 * max(ea.ref_max, eb.ref_max)    # half an ULP of the largest |reference|
        if eb.max_abs > factor * ea.max_abs + floor and eb.max_ulp > 1.0:   # within 1 ULP everywhere: no loss
            worse.append((eb.output, "max abs", eb.max_abs, ea.max_abs))
    return worse


def _say(output: str, measure: str, b_fig: float, a_fig: float) -> str:
    if measure == "bad":
        return f"{output}: {b_fig:.0f} non-finite-mismatched or unwritten elements against {a_fig:.0f}"
    return f"{output}: {measure} {b_fig:.2e} against {a_fig:.2e}"


def verdict(a: VariantNumerics, b: VariantNumerics, bitwise_equal: bool, dtype: torch.dtype,
            factor: float = VERDICT_FACTOR) -> PairVerdict:
    """Is B more, as or less accurate than A (see PairVerdict)? `dtype` is the case's dtype;
    differences below its machine epsilon u (rel L2) or u/2 x max|ref| (max abs: the rounding of the
    output alone) do not count, nor does a max abs error within 1 ULP at every element."""
    if bitwise_equal:
        return PairVerdict(a.variant, b.variant, Accuracy.AS, "bitwise equal")
    u = float(torch.finfo(dtype).eps)
    lost = _losses(a, b, u, factor)
    gained = [(o, m, fig_b, fig_a) for o, m, fig_a, fig_b in _losses(b, a, u, factor)]
    detail = tuple(_say(*x) for x in lost + gained)
    outs = (tuple(dict.fromkeys(x[0] for x in lost)), tuple(dict.fromkeys(x[0] for x in gained)))
    if lost:
        return PairVerdict(a.variant, b.variant, Accuracy.LESS, "mixed" if gained else "B worse", detail, *outs)
    if gained:
        return PairVerdict(a.variant, b.variant, Accuracy.MORE, "B better", detail, *outs)
    return PairVerdict(a.variant, b.variant, Accuracy.AS, "error within factor")
