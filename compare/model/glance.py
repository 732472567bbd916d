"""The report at a glance: each variant against the baseline, a row per check (numerics of each pass, timing
of each mode, the compiled code of each kernel) saying the verdict in a word or two, how much and where.
The rows are read off the records the headline's lines are made from (headline.PairVerdicts), and each
row's level is the headline's own line's for that check, so the glance never judges anew; the headline's
lines say the rest."""
from __future__ import annotations

import dataclasses

from compare.model.check_sections import verdicts_of
from compare.model.headline import PairVerdicts, verdicts
from compare.model.kept import kept
from compare.model.line import Line, plural as _n
from compare.model.pair_code import changes, resources, sides
from compare.model.problems import judged, lists, problems, variant_of
from compare.model.states import Accuracy, IRStatus, Level, ProblemKind, TimingVerdict
from compare.model.ratios import ratio_span
from compare.model.results import IRSection, Report
from compare.model.results_ir import NOT_RUN, failed_at
from compare.model.skips import why_not_run
from compare.model.vocabulary import BACKWARD, NUMERICS, STAGE_TITLES

HEADERS = ("check", "verdict", "how much", "where")


@dataclasses.dataclass(frozen=True)
class Row:
    variant: str
    check: str      # "numerics" (forward), "backward", "timing full", "compiled code", ...
    verdict: str
    amount: str     # how much: cases, a ratio's span, counts before -> after
    where: str
    level: Level    # as the headline's line for the check
    against: str = ""   # the baseline; for a variant compared alone, the references it is judged against


def _first(reason: str) -> str:
    """A reason's first clause: the glance names it, the headline's line says it whole."""
    for stop in (" (", "; ", ": "):
        reason = reason.split(stop, 1)[0]
    return reason


def _places(cases, order=None) -> str:
    """'float32 large_mean, 2 more': where a verdict holds, by dtype and input kind (problems, a set, in the
    `order` of the section's cases)."""
    keys = list(dict.fromkeys(f"{c.dtype} {c.input_kind}" for c in cases))
    if order is not None:
        keys.sort(key=order.index)
    return keys[0] + (f", {len(keys) - 1} more" if len(keys) > 1 else "")


def _numerics(report: Report, pair: PairVerdicts, direction: str) -> Row:
    a, b, section = pair.baseline, pair.variant, report.numerics
    cases = [c for c in section.cases if c.direction == direction] if section is not None else []
    check = "numerics" if direction == "forward" else direction   # as --check names them
    if not cases:   # asked for, never started (a stop signal came first)
        return Row(b, check, "not run", "", _first(why_not_run(report.skipped, check)), Level.SKIP)
    verdict = pair.passes[direction]
    level, both, differ = verdict.line.level, verdict.both, verdict.differ
    if not both:
        why = next((v.reasons[0] for c in cases for v in [variant_of(c, b) or variant_of(c, a)] if v and v.reasons),
                   "no case where both ran")
        return Row(b, check, "not compared", f"0 of {_n(len(cases), 'case')}", _first(why), level)
    less, more = [j.case for j in verdict.less], [j.case for j in verdict.more]
    of = f"of {_n(len(both), 'case')}"
    order = list(dict.fromkeys(f"{c.dtype} {c.input_kind}" for c in cases))
    if less:
        return Row(b, check, "less accurate", f"{len(less)} {of}", _places(less), level)
    for found, said in ((verdict.introduced, "new problems"), (verdict.fixed, "fixes problems")):
        if found:
            kinds = {(p.dtype, p.input_kind) for p in found}
            return Row(b, check, said, f"{len(kinds)} {of}", _places(found, order), level)
    if more:
        return Row(b, check, "more accurate", f"{len(more)} {of}", _places(more), level)
    if differ and not verdict.unjudged:   # as the headline says it: "as accurate as A where bits differ"
        return Row(b, check, "as accurate", f"{len(differ)} {of}", _places(differ), level)
    if differ:
        return Row(b, check, "bits differ", f"{len(differ)} {of}", "no accuracy verdict", level)
    if verdict.spread:
        return Row(b, check, "within spread", f"{len(verdict.spread)} {of}", "run-to-run spread", level)
    return Row(b, check, "identical bits", f"{len(both)} {of}", "every case", level)


def _timing(pair: PairVerdicts) -> list[Row]:
    b, timing = pair.variant, pair.timing
    if timing.unmeasured is not None:
        return [Row(b, "timing", "not measured", "", _first(timing.unmeasured), Level.SKIP)]
    if timing.same is not None:
        return [Row(b, "timing", "no verdict", "", "same compiled code", timing.line.level)]
    if not timing.groups:   # timed, but not this variant against the baseline
        return [Row(b, "timing", "not compared", "", "", Level.SKIP)]
    rows = []
    for group in timing.groups:
        judged = group.judged
        if group.same is not None:
            rows.append(Row(b, f"timing {group.key}", "no verdict", "", "same compiled code", Level.INFO))
            continue
        if not judged:
            rows.append(Row(b, f"timing {group.key}", "not compared", "",
                            _first(group.comparisons[0].reason or "a variant failed"), Level.WARN))
            continue
        verdicts = [c.verdict for c in judged]
        verdict = TimingVerdict.SLOWER if TimingVerdict.SLOWER in verdicts else max(dict.fromkeys(verdicts), key=verdicts.count)   # ties: the first
        hits = [c for c in judged if c.verdict == verdict]
        span = ratio_span(min(c.ratio for c in hits), max(c.ratio for c in hits))
        rows.append(Row(b, f"timing {group.key}", verdict.removesuffix(" beyond noise"), span,
                        f"{len(hits)} of {_n(len(group.comparisons), 'shape')}",
                        Level.WARN if verdict == TimingVerdict.SLOWER else Level.INFO))
    return rows + [Row(b, f"timing {s.part}", "not measured", "", _first(s.short or s.why), Level.WARN)
                   for s in timing.untimed]


def _pointers(v) -> int:
    stage = next((s for s in v.stages if s.stage == "ttir"), v.stages[0] if v.stages else None)
    return sum(l.carried_pointers for l in stage.loops) if stage else 0


def _failed_where(section: IRSection, failed: list[str], ops: tuple[str, str]) -> str:
    """'OP.head: k1, k2': the kernels `failed` by the op (of `ops`) whose compile of them failed."""
    by_op = {op: [k for k in failed if op in failed_at(section.variants, k, ops)] for op in ops}
    said = [f"{op}: {', '.join(kernels)}" for op, kernels in by_op.items() if kernels]
    return "; ".join(said) or ", ".join(failed)


def _ir(section: IRSection, line: Line, a: str, b: str, check: str) -> Row:
    level = line.level
    va, vb, matches = sides(section, a, b)
    if matches:
        changed = [m.kernel for m in matches if m.changed]
        failed = [m.kernel for m in matches if m.failed]
        if failed:
            return Row(b, check, "did not compile", f"{len(failed)} of {_n(len(matches), 'kernel')}",
                       _failed_where(section, failed, (b, a)), level)
        verdict = "changed" if changed else "identical"
        return Row(b, check, verdict, f"{len(changed)} of {_n(len(matches), 'kernel')}",
                   ", ".join(changed) or "every launched kernel", level)
    # the side whose row says it failed (did not compile, or its op failed when run) before a side with no row
    broken = next((v for v in (vb, va) if v is not None and v.status != IRStatus.OK), None)
    if broken is None and (va is None or vb is None):
        return Row(b, check, "not compared", "", f"no Triton kernel of {b if vb is None else a} here", level)
    if broken is not None:
        why = _first(broken.error.splitlines()[0]) if broken.error else ""
        return Row(b, check, "not found" if broken.status == NOT_RUN else "did not compile", "",
                   f"{broken.variant}: {why}" if why else broken.variant, level)
    pair = next((p for p in section.pairs if (p.a, p.b) == (a, b)), None)
    changed = [d for d in pair.stages if not d.identical] if pair else []
    amounts = changes((("carried pointers", _pointers(va), _pointers(vb)),)) + resources(va, vb)
    if not changed:
        return Row(b, check, "identical", "; ".join(amounts), "every stage", level)
    lines = sum(d.changed_lines for d in changed)
    where = "every stage" if len(changed) == len(pair.stages) > 1 else \
        ", ".join(STAGE_TITLES.get(d.stage, d.stage) for d in changed)
    return Row(b, check, "changed", "; ".join(amounts) or f"{lines} changed lines", where, level)


def _compiled(report: Report, pair: PairVerdicts) -> list[Row]:
    a, b, code = pair.baseline, pair.variant, pair.code
    if code.same is not None:
        return [Row(b, "compiled code", "same code", ", ".join(code.same.kernels), code.same.where, Level.OK)]
    if code.uncompared is not None:
        return [Row(b, "compiled code", "not compared", "", _first(code.uncompared), code.line.level)]
    sections = report.ir_sections
    several = len(sections) > 1
    return [_ir(s, line, a, b, f"compiled {s.kernel}" if several else "compiled code")
            for s, line in zip(sections, code.sections)]


def shared_kinds(report: Report) -> tuple[str, ...]:
    """The kinds of the problems every variant shares, most severe first: what the first screen names of them
    (an op that writes into its input, say), the groups themselves being behind --verbose."""
    found = {p.kind for p in lists(report).shared}
    return tuple(k for k in ProblemKind if k in found)


def _directions(report: Report) -> list[str]:
    """The numerics directions with a row: those run, then those asked for that a stop signal kept from starting."""
    run = [c.direction for c in report.numerics.cases] if report.numerics is not None else []
    unstarted = ["forward" if s.check == NUMERICS else s.check for s in report.skipped
                 if s.interrupted and s.check in (NUMERICS, BACKWARD)]
    return list(dict.fromkeys(run + unstarted))


def _alone(report: Report, name: str) -> list[Row]:
    """A variant compared alone: per pass, its problems against the float64 reference, and its accuracy against
    the reference point (torch) where one ran: the verdicts the headline's problem list details."""
    out, section, refs = [], report.numerics, []
    for direction in _directions(report):
        cases = [c for c in section.cases if c.direction == direction] if section is not None else []
        check = "numerics" if direction == "forward" else direction
        if not cases:
            out.append(Row(name, check, "not run", "", _first(why_not_run(report.skipped, check)), Level.SKIP))
            continue
        bad = [c for c in cases if problems(c, name)]
        of = f"of {_n(len(cases), 'case')}"
        if all(c.reference == name for c in cases):   # the reference point is the yardstick, judged by nothing
            out.append(Row(name, check, "not judged", "", "the reference point", Level.INFO))
            continue
        out.append(Row(name, check, "problems", f"{len(bad)} {of}", _places(bad), Level.FAIL) if bad else
                   Row(name, check, "no problems", f"{len(cases)} {of}", "every case", Level.OK))
        judged_cases = [(c, v) for c in cases for v in c.verdicts if (v.a, v.b) == (c.reference, name)]
        for accuracy, level in ((Accuracy.LESS, Level.FAIL), (Accuracy.MORE, Level.OK), (Accuracy.AS, Level.OK)):
            hits = [c for c, v in judged_cases if v.accuracy == accuracy]
            if hits:   # the worst that holds anywhere
                ref = hits[0].reference
                refs.append(ref)
                where = "every case" if len(hits) == len(judged_cases) else _places(hits)
                verdict = f"as accurate as {ref}" if accuracy == Accuracy.AS else f"{accuracy} than {ref}"
                out.append(Row(name, check, verdict, f"{len(hits)} {of}", where, level))
                break
    against = " and ".join(["the float64 reference", *dict.fromkeys(refs)])
    return [dataclasses.replace(r, against=against) for r in out]


def rows(report: Report) -> list[Row]:
    """Every pair's rows, in the headline's order of pairs; a variant compared alone, its rows against the
    references. Decided once per report (compare/model/kept.py)."""
    return list(kept(report, Row, lambda: tuple(_rows(report))))


def _rows(report: Report) -> list[Row]:
    out = []
    pairs = verdicts(report)
    if not pairs:
        names = judged(report)
        return _alone(report, names[0]) if len(names) == 1 else []
    for pair in pairs:
        a, b = pair.baseline, pair.variant
        mine = [_numerics(report, pair, d) for d in _directions(report)]
        out += [dataclasses.replace(r, against=a) for r in mine + _timing(pair) + _compiled(report, pair)]
        out += [Row(b, v.check, v.outcome.value, v.amount, v.where, v.outcome.level, a) for v in verdicts_of(report, a, b)]
    return out
