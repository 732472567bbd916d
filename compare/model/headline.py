"""The reviewer's answer first: what each variant changed against the baseline, apart from what they share.

Per pair, at most three lines (numerics, timing, compiled code), the problems introduced and fixed, and the
gate lines compare/model/gates.py reads; once, the baseline's problems the variants keep. Derived from a Report's
sections alone, so a saved report.json re-renders the same. The reference point judges, never is judged.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.kept import kept
from compare.model.loopclaims import loop_claims
from compare.model.fouls import fouled, said
from compare.model.problems import (Lists, Problem, SaidOnce, bits, brief, by_problem, describe, input_kinds,
                                    judged, lists, ran, variant_of)
from compare.model.results import IRSection, IRVariant, NumericsCase, NumericsSection, PassStatus, Report
from compare.model.results_ir import NOT_RUN, failed_at, op_kernel
from compare.model.same_code import SameCode, same_code, timing_groups
from compare.model.skips import Skip, why_not_run
from compare.model.states import Accuracy, Bits, Failure, IRStatus, Level, Status, TimingVerdict
from compare.model.vocabulary import STAGE_TITLES as _STAGE



@dataclasses.dataclass(frozen=True)
class Line:
    topic: str           # "numerics", "timing" or "compiled code"
    level: Level
    text: str


@dataclasses.dataclass(frozen=True)
class PairHeadline:
    baseline: str
    variant: str
    lines: tuple[Line, ...]
    introduced: tuple[str, ...] = ()   # numerics the variant made worse: what --fail-on-numerics acts on
    problems_introduced: tuple[str, ...] = ()   # problems it has and the baseline has not, a line per input kind
    problems_fixed: tuple[str, ...] = ()        # problems the baseline has and it has not, a line per input kind


@dataclasses.dataclass(frozen=True)
class Headline:
    pairs: tuple[PairHeadline, ...]
    shared_title: str
    shared: tuple[str, ...]            # the baseline's problems every other variant keeps
    kept_title: str = ""
    kept: tuple[str, ...] = ()         # the baseline's problems only some keep, each naming who
    shared_named: tuple[str, ...] = ()   # `shared` a line per problem, naming every input kind it holds on


# ---------------------------------------------------------------- numerics line
def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _case_key(c: NumericsCase) -> str:
    return f"{c.direction} {c.dtype} {c.input_kind}"


def _grouped(items: list[tuple[NumericsCase, str]], limit: int = 3) -> str:
    groups: dict[str, list[str]] = {}
    for c, detail in items:
        groups.setdefault(_case_key(c), []).append(detail)
    parts = [f"{k} ({d[0]}{'' if len(d) == 1 else f'; {len(d)} shapes'})" for k, d in groups.items()]
    return "; ".join(parts[:limit]) + (f"; and {len(parts) - limit} more" if len(parts) > limit else "")


def _bitwise_part(direction: str, cases: list[NumericsCase], a: str, b: str) -> tuple[str, list[NumericsCase]]:
    """The direction's bits in one phrase, and the cases whose bits differ beyond A's run-to-run spread."""
    state = [bits(c, a, b) for c in cases]
    differ = [c for c, s in zip(cases, state) if s in (Bits.DIFFER, "")]
    spread = [c for c, s in zip(cases, state) if s == Bits.WITHIN_SPREAD]
    n, n_same = len(cases), state.count(Bits.IDENTICAL)
    if n_same == n:
        return f"{direction}: identical bits in {'all ' if n > 1 else ''}{_n(n, 'case')}", []
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
    return f"{direction}: " + ", ".join(parts), differ


def _once(case: NumericsCase, name: str, once: dict[str, tuple[SaidOnce, ...]]) -> bool:
    return any(s.direction in ("", case.direction) for s in once.get(name, ()))


def _failed(case: NumericsCase, side: str, other: str, is_b: bool, once: dict) -> bool:
    """`side` failed in `case` where `other` gave numbers, and no line said once covers it; B's own crash
    there is not counted here: it is a new problem."""
    v = variant_of(case, side)
    return (v is not None and v.status == Status.ERROR and not _once(case, side, once) and _produced(case, other)
            and (not is_b or not ran(v)))


def _produced(case: NumericsCase, name: str) -> bool:
    v = variant_of(case, name)
    return v is not None and v.produced


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
               and not _once(c, b, once) and getattr(variant_of(c, b), "status", "") != Status.ERROR]
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


def _numerics_line(section: NumericsSection, a: str, b: str, introduced: frozenset[Problem],
                   fixed: frozenset[Problem], once: dict[str, tuple[SaidOnce, ...]]) -> tuple[Line, list[str]]:
    """The pair's numerics line and its gate lines (less accurate verdicts, introduced problems, crashes)."""
    both = [c for c in section.cases if _produced(c, a) and _produced(c, b)]
    parts, level, gate = [], Level.OK, []
    unexplained: list[NumericsCase] = []
    for direction in dict.fromkeys(c.direction for c in both):
        text, differ = _bitwise_part(direction, [c for c in both if c.direction == direction], a, b)
        parts.append(text)
        unexplained += differ
    verdicts = [(c, v) for c in unexplained for v in c.verdicts if (v.a, v.b) == (a, b)]
    less = [(c, _where(c, v, v.lost)) for c, v in verdicts if v.accuracy == Accuracy.LESS and _where(c, v, v.lost)]
    gains = [(c, v) for c, v in verdicts if v.accuracy == Accuracy.MORE and _where(c, v, v.gained)]
    # a gain on an output where B fixed a problem of A is said by "fixes"
    fixed_at = {(p.direction, p.dtype, p.input_kind, p.shape, p.output) for p in fixed}
    rest = [(c, v, tuple(o for o in v.gained if (c.direction, c.dtype, c.input_kind, c.shape, o) not in fixed_at))
            for c, v in gains]
    more = [(c, _where(c, v, outs)) for c, v, outs in rest if outs and _where(c, v, outs)]
    same = len(verdicts) - len(less) - len(gains)
    front = []
    if less:
        front.append(f"LESS ACCURATE than {a} in {_grouped(less)}")
        gate += [f"numerics: {b} less accurate than {a} on {c.shape} {_case_key(c)} ({d})" for c, d in less]
        level = Level.FAIL
    if introduced:
        front.append(f"new problems (not in {a}): {brief(introduced, input_kinds(section))}")
        gate += [f"numerics: {b} has a problem {a} has not: {line}" for line in describe(introduced)]
        level = Level.FAIL
    if fixed:
        front.append(f"fixes: {brief(fixed, input_kinds(section))}")
    if more:
        front.append(f"more accurate than {a} in {_grouped(more)}")
    parts = front + parts
    if same:
        parts.append(f"as accurate as {a} in the other {_n(same, 'case')}" if less or gains
                     else f"as accurate as {a} where bits differ")
    unjudged = [c for c in unexplained if not any((v.a, v.b) == (a, b) for v in c.verdicts)]
    if unjudged:
        outs = sorted({p.output for c in unjudged for p in c.pairs if {p.a, p.b} == {a, b} and p.verdict == Bits.DIFFER})
        parts.append(f"bits differ in {', '.join(outs)} ({_n(len(unjudged), 'case')}; no accuracy verdict recorded)")
        level = Level.WARN if level == Level.OK else level
    unrun = _not_run(section, a, b, once)
    if unrun:
        parts += unrun
        level = Level.WARN if level == Level.OK else level
    if not parts:
        return Line("numerics", Level.SKIP, "numerics: no case where both ran"), gate
    text = "numerics: " + "; ".join(parts)
    if any(c.reference == b for c in both):   # the reference point: its distance from A is told, never judged
        return Line("numerics", Level.INFO, text.replace("LESS ACCURATE", "less accurate")
                    + f" ({b} is the reference point: it judges, and is not judged)"), []
    return Line("numerics", level, text), gate


_SAY_ONCE = {
    Failure.INTERPRETER: "not runnable on Triton's CPU interpreter ({error}); its numerics need a GPU",
    Failure.LIBRARY: "the library's own code failed: {error}{at}",
    Failure.CALL: "could not be called as the family calls it: {error}",
}


def _once_lines(found: Lists, a: str, b: str) -> tuple[list[Line], list[str]]:
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


# ---------------------------------------------------------------- timing line
def _timing_line(report: Report, a: str, b: str) -> Line:
    """The pair's timing verdicts; none where the two run the same compiled code, in every pass or in one
    (compare/model/same_code.py): there a timing difference is noise by construction."""
    from compare.model.ratios import ratio_span   # '+3.0%', or '33.6× faster' beyond 2x
    if report.timing is None:
        why = why_not_run(report.skipped, "timing")
        return Line("timing", Level.SKIP, f"timing: not measured: {why}")   # the whole reason: said here only
    same = same_code(report, a, b)
    if same is not None:
        return Line("timing", Level.INFO, f"timing: no verdict: {_same_code_text(same)}, so a timing difference "
                                      "between them is noise")
    groups = timing_groups(report, a, b)
    if not groups:
        return Line("timing", Level.SKIP, f"timing: {b} not compared with {a}")
    parts, level = [], Level.INFO
    for group in groups:
        comps = group.comparisons
        judged = [c for c in comps if c.verdict != TimingVerdict.NA]
        if group.same is not None:
            parts.append(f"{group.key}: no verdict ({', '.join(group.same.kernels)} identical at every stage: "
                         "the same compiled code)")
            continue
        if not judged:
            parts.append(f"{group.key} not compared ({comps[0].reason or 'a variant failed'})")
            level = Level.WARN
            continue
        counts: dict[str, int] = {}
        for c in judged:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        verdicts = ", ".join(f"{v} in {n}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        span = ratio_span(min(c.ratio for c in judged), max(c.ratio for c in judged))
        parts.append(f"{group.key}: {verdicts} of {_n(len(comps), 'shape')} ({span})")
        if TimingVerdict.SLOWER in counts:
            level = Level.WARN
    return Line("timing", level, "timing: " + "; ".join(parts))


# ---------------------------------------------------------------- compiled-code line
def _ir_line(section: Optional[IRSection], a: str, b: str, skipped: tuple[Skip, ...]) -> Line:
    if section is None:
        why = why_not_run(skipped, "ir")
        return Line("compiled code", Level.SKIP, f"compiled code: not compared ({why})")
    va = next((v for v in section.variants if v.variant == a), None)
    vb = next((v for v in section.variants if v.variant == b), None)
    matches = [m for m in section.kernels if (m.a, m.b) == (a, b)]
    if matches:   # op-level variants: the kernels each launched, paired by name
        return _op_line(section, a, b, matches)
    gone = [v for v in (vb, va) if v is not None and v.status == NOT_RUN]
    if gone:   # an op that failed when run: its kernels are unknown, not broken
        first = gone[0].error.splitlines()[0] if gone[0].error else "?"
        return Line("compiled code", Level.FAIL if gone[0] is vb else Level.SKIP,
                    f"compiled code: the kernels of {gone[0].variant} not found: {first}")
    if vb is None or va is None:
        return Line("compiled code", Level.SKIP, f"compiled code: {b} not compared with {a}")
    if vb.status != IRStatus.OK:
        return Line("compiled code", Level.FAIL, f"compiled code: {b} did not compile: {vb.error.splitlines()[0] if vb.error else '?'}")
    if va.status != IRStatus.OK:
        return Line("compiled code", Level.SKIP, f"compiled code: the baseline {a} did not compile")
    parts = loop_claims(section, va, vb) + _resources(va, vb)
    pair = next((p for p in section.pairs if (p.a, p.b) == (a, b)), None)
    if pair is not None:
        changed = [d for d in pair.stages if not d.identical]
        if not changed:
            parts.append("identical at every stage")
        else:
            parts.append("changed lines: " + ", ".join(f"{_STAGE[d.stage]} {d.changed_lines}" for d in changed))
    return Line("compiled code", Level.INFO, "compiled code: " + "; ".join(parts or ["no structural change found"]))


def _resources(va: IRVariant, vb: IRVariant) -> list[str]:
    return [f"{what} {x} -> {y}" for what, x, y in (("registers", va.registers, vb.registers),
                                                    ("spill bytes", va.spill_bytes, vb.spill_bytes))
            if x != y and x >= 0 and y >= 0]


def _op_line(section: IRSection, a: str, b: str, matches: list) -> Line:
    """The launched kernels of two ops, paired by name: each one's status, a changed one's loops (carried
    pointers at both sides, see loop_claims) and resources, then the passes whose kernels were not found."""
    rows = {v.variant: v for v in section.variants if v.status == IRStatus.OK}
    said, broken = [], set()
    for m in matches:
        failed = failed_at(section.variants, m.kernel, (a, b)) if m.failed else ()
        broken.update(failed)
        text = f"{m.kernel} {m.status}" + (f" ({', '.join(_STAGE.get(x, x) for x in m.changed_stages)})"
                                           if m.changed_stages else "") + \
            (f" (did not compile in {' and '.join(failed)})" if failed else "")
        va, vb = rows.get(op_kernel(a, m.kernel)), rows.get(op_kernel(b, m.kernel))
        claims = loop_claims(section, va, vb, names=(a, b)) + _resources(va, vb) \
            if m.changed and va is not None and vb is not None else []
        text += f" [{'; '.join(claims)}]" if claims else ""
        said.append(text)
    said += not_found(section, (a, b))
    # the variant's kernel that does not compile fails it; the baseline's alone is what the change fixed or kept
    level = Level.INFO if not any(m.failed for m in matches) else Level.WARN if broken == {a} else Level.FAIL
    return Line("compiled code", level, "compiled code: launched kernels, paired by name: " + "; ".join(said))


def not_found(section: IRSection, ops: tuple[str, ...]) -> list[str]:
    """'backward kernels of A, B not found (its backward failed: ...)': the passes of `ops` that failed
    when run to find their kernels, one phrase per pass and reason."""
    by: dict[tuple[str, str], list[str]] = {}
    for n in section.passes:
        if n.status == PassStatus.NOT_FOUND and n.variant in ops:
            by.setdefault((n.kernel, n.why), []).append(n.variant)
    return [f"{kernel} kernels of {', '.join(who)} not found (the {kernel} failed: {why})"
            for (kernel, why), who in by.items()]


def _same_code_text(same: SameCode) -> str:
    """'both sides run the same compiled code (sm_90, compiled offline: ... identical at ...)'."""
    shared = f"; {' and '.join(same.shared)} kernel shared, not compiled" if same.shared else ""
    return (f"both sides run the same compiled code ({same.where}: {', '.join(same.kernels)} identical at "
            f"{', '.join(_STAGE.get(s, s) for s in same.stages)}{shared})")


def _ir_lines(report: Report, a: str, b: str) -> Line:
    """The compiled-code line over every compiled-code section (the forward kernels, and the kernels of
    other passes when variants bring their own), each named by its kernel when there are several; one
    phrase when the two run the same compiled code (compare/model/same_code.py)."""
    same = same_code(report, a, b)
    if same is not None:
        return Line("compiled code", Level.OK, f"compiled code: {_same_code_text(same)}")
    sections = report.ir_sections
    if len(sections) <= 1:
        return _ir_line(sections[0] if sections else None, a, b, report.skipped)
    lines = [(s.kernel, _ir_line(s, a, b, report.skipped)) for s in sections]
    level = min((line.level for _, line in lines), key=Level.rank)
    return Line("compiled code", level, "compiled code: " + "; ".join(
        f"{kernel} kernel: {line.text.removeprefix('compiled code: ')}" for kernel, line in lines))


# ---------------------------------------------------------------- the headline
def headline(report: Report) -> Headline:
    """The report's headline, decided once per report (compare/model/kept.py)."""
    return kept(report, Headline, lambda: _headline(report))


def _headline(report: Report) -> Headline:
    section, base = report.numerics, report.baseline
    found = lists(report)   # compare/model/problems.py decides what is shared, introduced or fixed
    kinds = input_kinds(section) if section else ()
    pairs = []
    fouls = fouled(report)   # a fouled side earns the pair no accuracy and no timing verdict
    for b in [n for n in judged(report) if n != base]:
        lines, gate = [], []
        introduced, fixed = found.introduced.get(b, frozenset()), found.fixed.get(b, frozenset())
        who = b if b in fouls else base if base in fouls else ""
        if who:
            lines = [Line("foul", Level.FAIL, f"foul: {who}: {said(fouls[who])}; no accuracy and no timing verdict"),
                     _ir_lines(report, base, b)]
            pairs.append(PairHeadline(base, b, tuple(lines), (), tuple(describe(introduced, kinds))))
            continue
        if section is not None:
            line, gate = _numerics_line(section, base, b, introduced, fixed, found.once)
            once, once_gate = _once_lines(found, base, b)
            lines += ([] if once and line.level == Level.SKIP else [line]) + once
            gate += once_gate
        lines.append(_timing_line(report, base, b))
        lines.append(_ir_lines(report, base, b))
        pairs.append(PairHeadline(base, b, tuple(lines), tuple(gate), tuple(describe(introduced, kinds)),
                                  tuple(describe(fixed, kinds))))
    shared_title = ("shared by every variant (not introduced by this change)" if found.others
                    else f"problems of {base} (the only variant judged)")
    kept = tuple(f"{line} (kept by {', '.join(keepers)}; fixed by {', '.join(found.fixers(ps))})"
                 for keepers, ps in found.kept.items() for line in describe(ps, kinds))
    kept += tuple(f"{line} (no other variant gave numbers there to compare)" for line in describe(found.alone, kinds))
    kept_title = f"problems of {base} only some variants keep" + (
        ", or where no other gave numbers" if found.alone else "")
    return Headline(tuple(pairs), shared_title, tuple(describe(found.shared, kinds)), kept_title, kept,
                    tuple(by_problem(found.shared, kinds)))
