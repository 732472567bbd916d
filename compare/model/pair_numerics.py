"""One variant against the baseline in numerics, decided once: the headline's numerics line and gate lines,
and the cases behind each verdict (where both gave numbers, where bits differ, less or more accurate, not
judged), which the glance counts; and the lines of failures said once (problems.said_once)."""
from __future__ import annotations

import dataclasses

from compare.model.line import Line, plural as _n
from compare.model.problems import (Lists, Problem, SaidOnce, bits, brief, covered, describe, input_kinds,
                                    produced, ran, variant_of)
from compare.model.results import NumericsCase, NumericsSection, PairVerdict
from compare.model.states import Accuracy, Bits, Failure, Level, Status


@dataclasses.dataclass(frozen=True)
class JudgedCase:
    """An accuracy verdict of B against A in a case, and its first detail on an output whose bits differ."""

    case: NumericsCase
    verdict: PairVerdict
    detail: str


@dataclasses.dataclass(frozen=True)
class PairNumerics:
    """B against A over some numerics cases (a section, or one pass of it): the line the headline says, what
    --fail-on-numerics fails on, and the cases behind each verdict."""

    line: Line
    gate: tuple[str, ...]
    both: tuple[NumericsCase, ...]       # where both gave numbers
    differ: tuple[NumericsCase, ...]     # of `both`, bits differ beyond A's run-to-run spread (or not recorded)
    spread: tuple[NumericsCase, ...]     # of `both`, bits differ only within A's run-to-run spread
    judged: int                          # the accuracy verdicts on `differ`
    less: tuple[JudgedCase, ...]         # less accurate on an output whose bits differ
    more: tuple[JudgedCase, ...]         # more accurate on one
    unjudged: tuple[NumericsCase, ...]   # of `differ`, with no accuracy verdict recorded
    introduced: frozenset[Problem]       # B's problems A has not
    fixed: frozenset[Problem]            # A's problems B has not


def _case_key(c: NumericsCase) -> str:
    return f"{c.direction} {c.dtype} {c.input_kind}"


def grouped(items, limit: int = 3) -> str:
    """'key (first detail; n shapes), ...' for (case, detail) items, grouped by direction/dtype/kind."""
    groups: dict[str, list[str]] = {}
    for c, detail in items:
        groups.setdefault(_case_key(c), []).append(detail)
    parts = [f"{k} ({d[0]}{'' if len(d) == 1 else f'; {len(d)} shapes'})" for k, d in groups.items()]
    return "; ".join(parts[:limit]) + (f"; and {len(parts) - limit} more" if len(parts) > limit else "")


def _bitwise_part(direction: str, cases: list[NumericsCase], a: str, b: str) -> tuple[str, list, list]:
    """The direction's bits in one phrase, the cases whose bits differ beyond A's run-to-run spread, and those
    that differ only within it."""
    state = [bits(c, a, b) for c in cases]
    differ = [c for c, s in zip(cases, state) if s in (Bits.DIFFER, "")]
    spread = [c for c, s in zip(cases, state) if s == Bits.WITHIN_SPREAD]
    n, n_same = len(cases), state.count(Bits.IDENTICAL)
    if n_same == n:
        return f"{direction}: identical bits in {'all ' if n > 1 else ''}{_n(n, 'case')}", [], []
    parts = []
    if spread:
        outs = list(dict.fromkeys(p.output for c in spread for p in c.pairs if {p.a, p.b} == {a, b}))
        noisy = [o for o in outs if any(bits(c, a, b, o) == Bits.WITHIN_SPREAD for c in spread)]
        same = [o for o in outs if o not in noisy]
        where = f"in all {_n(n, 'case')}" if len(spread) == n else f"in {_n(len(spread), 'case')}"
        parts.append(f"{', '.join(same) + ' identical bits, ' if same else ''}{', '.join(noisy)} differ only within "
                     f"{a}'s run-to-run spread (run twice on the same inputs) {where}")
    if n_same and n_same < n:
        parts.insert(0, f"identical bits in {_n(n_same, 'case')}")
    if differ:
        parts.append(f"bits differ in {_n(len(differ), 'case')}")
    return f"{direction}: " + ", ".join(parts), differ, spread


def _failed(case: NumericsCase, side: str, other: str, is_b: bool, once: dict) -> bool:
    """`side` failed in `case` where `other` gave numbers, and no line said once covers it; B's own crash
    there is not counted here: it is a new problem."""
    v = variant_of(case, side)
    return (v is not None and v.status == Status.ERROR and not covered(once.get(side, ()), case)
            and produced(variant_of(case, other)) and (not is_b or not ran(v)))


def _where(case: NumericsCase, verdict, outputs: tuple[str, ...]) -> str:
    """The verdict's first detail on an output whose bits differ beyond A's run-to-run spread ("" if none:
    then the verdict only reflects how a non-deterministic output happened to land, and does not count)."""
    real = [o for o in outputs if bits(case, verdict.a, verdict.b, o) == Bits.DIFFER] if outputs else []
    if outputs and not real:
        return ""
    return next((d for d in verdict.detail if d.split(":", 1)[0] in real), verdict.detail[0] if verdict.detail
                else verdict.basis)


def _not_run(section: NumericsSection, a: str, b: str, once: dict[str, tuple[SaidOnce, ...]]) -> list[str]:
    """Where B did not run, and where a side failed (not run, as far as the comparison goes), unless said once."""
    parts = []
    missing = [c for c in section.cases if ran(variant_of(c, a)) and not ran(variant_of(c, b))
               and not covered(once.get(b, ()), c) and getattr(variant_of(c, b), "status", "") != Status.ERROR]
    if missing:
        why = variant_of(missing[0], b)
        parts.append(f"not run in {_n(len(missing), 'case')} ({why.reasons[0] if why and why.reasons else 'no result'})")
    for side, other in ((a, b), (b, a)):
        failed = [c for c in section.cases if _failed(c, side, other, side == b, once)]
        if failed:
            why = variant_of(failed[0], side)
            parts.append(f"{side} not run ({why.failure.value or 'crash'}) in {_n(len(failed), 'case')}"
                         f" ({why.reasons[0] if why.reasons else 'no result'})")
    return parts


def pair_numerics(section: NumericsSection, a: str, b: str, introduced: frozenset[Problem],
                  fixed: frozenset[Problem], once: dict[str, tuple[SaidOnce, ...]]) -> PairNumerics:
    """B against A over `section`'s cases (`introduced`, `fixed`: B's problems there; `once`: failures said once)."""
    both = tuple(c for c in section.cases if produced(variant_of(c, a)) and produced(variant_of(c, b)))
    bitwise, differ, spread = [], [], []
    for direction in dict.fromkeys(c.direction for c in both):
        text, beyond, within = _bitwise_part(direction, [c for c in both if c.direction == direction], a, b)
        bitwise.append(text)
        differ += beyond
        spread += within
    verdicts = [(c, v) for c in differ for v in c.verdicts if (v.a, v.b) == (a, b)]
    less = tuple(JudgedCase(c, v, _where(c, v, v.lost)) for c, v in verdicts if v.accuracy == Accuracy.LESS)
    more = tuple(JudgedCase(c, v, _where(c, v, v.gained)) for c, v in verdicts if v.accuracy == Accuracy.MORE)
    unjudged = tuple(c for c in differ if not any((v.a, v.b) == (a, b) for v in c.verdicts))
    found = PairNumerics(Line("numerics", Level.SKIP, ""), (), both, tuple(differ), tuple(spread), len(verdicts),
                         tuple(j for j in less if j.detail), tuple(j for j in more if j.detail), unjudged,
                         introduced, fixed)
    line, gate = _said(section, a, b, found, bitwise, once)
    return dataclasses.replace(found, line=line, gate=tuple(gate))


def _said(section: NumericsSection, a: str, b: str, found: PairNumerics, bitwise: list[str],
          once: dict[str, tuple[SaidOnce, ...]]) -> tuple[Line, list[str]]:
    """The numerics line of `found` (its bits by pass: `bitwise`) and its gate lines."""
    parts, level, gate = [], Level.OK, []
    less = [(j.case, j.detail) for j in found.less]
    # a gain on an output where B fixed a problem of A is said by "fixes"
    fixed_at = {(p.direction, p.dtype, p.input_kind, p.shape, p.output) for p in found.fixed}
    rest = [(c, v, tuple(o for o in v.gained if (c.direction, c.dtype, c.input_kind, c.shape, o) not in fixed_at))
            for c, v in ((j.case, j.verdict) for j in found.more)]
    more = [(c, _where(c, v, outs)) for c, v, outs in rest if outs and _where(c, v, outs)]
    same = found.judged - len(less) - len(found.more)
    front = []
    if less:
        front.append(f"LESS ACCURATE than {a} in {grouped(less)}")
        gate += [f"numerics: {b} less accurate than {a} on {c.shape} {_case_key(c)} ({d})" for c, d in less]
        level = Level.FAIL
    if found.introduced:
        front.append(f"new problems (not in {a}): {brief(found.introduced, input_kinds(section))}")
        gate += [f"numerics: {b} has a problem {a} has not: {line}" for line in describe(found.introduced)]
        level = Level.FAIL
    if found.fixed:
        front.append(f"fixes: {brief(found.fixed, input_kinds(section))}")
    if more:
        front.append(f"more accurate than {a} in {grouped(more)}")
    parts = front + bitwise
    if same:
        parts.append(f"as accurate as {a} in the other {_n(same, 'case')}" if less or found.more
                     else f"as accurate as {a} where bits differ")
    if found.unjudged:
        outs = sorted({p.output for c in found.unjudged for p in c.pairs
                       if {p.a, p.b} == {a, b} and p.verdict == Bits.DIFFER})
        parts.append(f"bits differ in {', '.join(outs)} ({_n(len(found.unjudged), 'case')}; no accuracy verdict recorded)")
        level = Level.WARN if level == Level.OK else level
    unrun = _not_run(section, a, b, once)
    if unrun:
        parts += unrun
        level = Level.WARN if level == Level.OK else level
    if not parts:
        return Line("numerics", Level.SKIP, "numerics: no case where both ran"), gate
    text = "numerics: " + "; ".join(parts)
    if any(c.reference == b for c in found.both):   # the reference point: its distance from A is told, never judged
        return Line("numerics", Level.INFO, text.replace("LESS ACCURATE", "less accurate")
                    + f" ({b} is the reference point: it judges, and is not judged)"), []
    return Line("numerics", level, text), gate


_SAY_ONCE = {
    Failure.INTERPRETER: "not runnable on Triton's CPU interpreter ({error}); its numerics need a GPU",
    Failure.LIBRARY: "the library's own code failed: {error}{at}",
    Failure.CALL: "could not be called as the family calls it: {error}",
}


def once_lines(found: Lists, a: str, b: str) -> tuple[list[Line], list[str]]:
    """A line for each failure said once (problems.said_once) of A or B, one for both where they agree; and
    the gate's line where B's own code fails in every case of a pass where A's code did not fail so."""
    said: dict[tuple, list[str]] = {}
    for name in (a, b):
        for s in found.once.get(name, ()):
            said.setdefault((s.direction, s.kind, s.error, s.at), []).append(name)
    lines, gate = [], []
    for (direction, kind, error, at), names in said.items():
        text = _SAY_ONCE[kind].format(error=error.splitlines()[0] if error else "?", at=f" (at {at})" if at else "")
        new = names == [b] and kind == Failure.LIBRARY and not any(
            s.kind == kind and direction in ("", s.direction) for s in found.once.get(a, ()))
        where = f"{direction}: " if direction else ""
        lines.append(Line("numerics", Level.FAIL if new else Level.WARN, f"numerics: {where}{' and '.join(names)}: {text}"))
        if new:
            gate.append(f"numerics: {b}: {where}{text} ({a} did not fail so)")
    return lines, gate

