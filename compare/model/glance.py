"""The report at a glance: each variant against the baseline, a row per check (numerics of each pass, timing
of each mode, the compiled code of each kernel) saying the verdict in a word or two, how much and where.
The rows are read off the same values the headline reads, and each row's level is the headline's own
line's for that check (compare/model/headline.py), so the glance never judges anew; the headline's
lines say the rest."""
from __future__ import annotations

import dataclasses

from compare.model import headline as hl
from compare.model.check_sections import verdicts_of
from compare.model.problems import bits, judged, lists, problems, variant_of
from compare.model.states import Accuracy, Bits, IRStatus, ProblemKind, TimingVerdict
from compare.model.ratios import ratio_span
from compare.model.results import IRSection, NumericsSection, Report
from compare.model.results_ir import NOT_RUN, failed_at
from compare.model.same_code import same_code, timing_groups
from compare.model.skips import why_not_run
from compare.model.vocabulary import STAGE_TITLES

HEADERS = ("check", "verdict", "how much", "where")


@dataclasses.dataclass(frozen=True)
class Row:
    variant: str
    check: str      # "numerics" (forward), "backward", "timing full", "compiled code", ...
    verdict: str
    amount: str     # how much: cases, a ratio's span, counts before -> after
    where: str
    level: str      # "ok", "fail", "warn", "info" or "skip", as the headline's line for the check
    against: str = ""   # the baseline; for a variant compared alone, the references it is judged against


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


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


def _numerics(section: NumericsSection | None, a: str, b: str, found, direction: str, skipped=()) -> Row:
    cases = [c for c in section.cases if c.direction == direction] if section is not None else []
    check = "numerics" if direction == "forward" else direction   # as --check names them
    if not cases:   # asked for, never started (a stop signal came first)
        return Row(b, check, "not run", "", _first(why_not_run(skipped, check)), "skip")
    own = dataclasses.replace(section, cases=tuple(cases))
    introduced = frozenset(p for p in found.introduced.get(b, ()) if p.direction == direction)
    fixed = frozenset(p for p in found.fixed.get(b, ()) if p.direction == direction)
    level = hl._numerics_line(own, a, b, introduced, fixed, found.once)[0].level
    both = [c for c in cases if hl._produced(c, a) and hl._produced(c, b)]
    if not both:
        why = next((v.reasons[0] for c in cases for v in [variant_of(c, b) or variant_of(c, a)] if v and v.reasons),
                   "no case where both ran")
        return Row(b, check, "not compared", f"0 of {_n(len(cases), 'case')}", _first(why), level)
    differ = [c for c in both if bits(c, a, b) in (Bits.DIFFER, "")]
    judged = [(c, v) for c in differ for v in c.verdicts if (v.a, v.b) == (a, b)]
    less = [c for c, v in judged if v.accuracy == Accuracy.LESS and hl._where(c, v, v.lost)]
    more = [c for c, v in judged if v.accuracy == Accuracy.MORE and hl._where(c, v, v.gained)]
    of = f"of {_n(len(both), 'case')}"
    order = list(dict.fromkeys(f"{c.dtype} {c.input_kind}" for c in cases))
    if less:
        return Row(b, check, "less accurate", f"{len(less)} {of}", _places(less), level)
    if introduced:
        kinds = {(p.dtype, p.input_kind) for p in introduced}
        return Row(b, check, "new problems", f"{len(kinds)} {of}", _places(introduced, order), level)
    if fixed:
        kinds = {(p.dtype, p.input_kind) for p in fixed}
        return Row(b, check, "fixes problems", f"{len(kinds)} {of}", _places(fixed, order), level)
    if more:
        return Row(b, check, "more accurate", f"{len(more)} {of}", _places(more), level)
    unjudged = [c for c in differ if not any((v.a, v.b) == (a, b) for v in c.verdicts)]
    if differ and not unjudged:   # as the headline says it: "as accurate as A where bits differ"
        return Row(b, check, "as accurate", f"{len(differ)} {of}", _places(differ), level)
    if differ:
        return Row(b, check, "bits differ", f"{len(differ)} {of}", "no accuracy verdict", level)
    spread = [c for c in both if bits(c, a, b) == Bits.WITHIN_SPREAD]
    if spread:
        return Row(b, check, "within spread", f"{len(spread)} {of}", "run-to-run spread", level)
    return Row(b, check, "identical bits", f"{len(both)} {of}", "every case", level)


def _timing(report: Report, a: str, b: str) -> list[Row]:
    line = hl._timing_line(report, a, b)
    if report.timing is None:
        return [Row(b, "timing", "not measured", "", _first(line.text.removeprefix("timing: not measured: ")), "skip")]
    if line.level == "skip":   # timed, but not this variant against the baseline
        return [Row(b, "timing", "not compared", "", "", "skip")]
    if same_code(report, a, b) is not None:
        return [Row(b, "timing", "no verdict", "", "same compiled code", line.level)]
    rows = []
    for group in timing_groups(report, a, b):
        judged = [c for c in group.comparisons if c.verdict != TimingVerdict.NA]
        if group.same is not None:
            rows.append(Row(b, f"timing {group.key}", "no verdict", "", "same compiled code", "info"))
            continue
        if not judged:
            rows.append(Row(b, f"timing {group.key}", "not compared", "",
                            _first(group.comparisons[0].reason or "a variant failed"), "warn"))
            continue
        verdicts = [c.verdict for c in judged]
        verdict = TimingVerdict.SLOWER if TimingVerdict.SLOWER in verdicts else max(dict.fromkeys(verdicts), key=verdicts.count)   # ties: the first
        hits = [c for c in judged if c.verdict == verdict]
        span = ratio_span(min(c.ratio for c in hits), max(c.ratio for c in hits))
        rows.append(Row(b, f"timing {group.key}", verdict.removesuffix(" beyond noise"), span,
                        f"{len(hits)} of {_n(len(group.comparisons), 'shape')}",
                        "warn" if verdict == TimingVerdict.SLOWER else "info"))
    return rows


def _pointers(v) -> int:
    stage = next((s for s in v.stages if s.stage == "ttir"), v.stages[0] if v.stages else None)
    return sum(l.carried_pointers for l in stage.loops) if stage else 0


def _failed_where(section: IRSection, failed: list[str], ops: tuple[str, str]) -> str:
    """'OP.head: k1, k2': the kernels `failed` by the op (of `ops`) whose compile of them failed."""
    by_op = {op: [k for k in failed if op in failed_at(section.variants, k, ops)] for op in ops}
    said = [f"{op}: {', '.join(kernels)}" for op, kernels in by_op.items() if kernels]
    return "; ".join(said) or ", ".join(failed)


def _ir(section: IRSection, report: Report, a: str, b: str, check: str) -> Row:
    level = hl._ir_line(section, a, b, report.skipped).level
    va = next((v for v in section.variants if v.variant == a), None)
    vb = next((v for v in section.variants if v.variant == b), None)
    matches = [m for m in section.kernels if (m.a, m.b) == (a, b)]
    if matches:
        changed = [m.kernel for m in matches if m.status == "changed"]
        failed = [m.kernel for m in matches if m.status == "failed"]
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
    amounts = [f"{what} {x} -> {y}" for what, x, y in (("carried pointers", _pointers(va), _pointers(vb)),
                                                       ("registers", va.registers, vb.registers),
                                                       ("spill bytes", va.spill_bytes, vb.spill_bytes))
               if x != y and x >= 0 and y >= 0]
    if not changed:
        return Row(b, check, "identical", "; ".join(amounts), "every stage", level)
    lines = sum(d.changed_lines for d in changed)
    where = "every stage" if len(changed) == len(pair.stages) > 1 else \
        ", ".join(STAGE_TITLES.get(d.stage, d.stage) for d in changed)
    return Row(b, check, "changed", "; ".join(amounts) or f"{lines} changed lines", where, level)


def _compiled(report: Report, a: str, b: str) -> list[Row]:
    same = same_code(report, a, b)
    if same is not None:
        return [Row(b, "compiled code", "same code", ", ".join(same.kernels), same.where, "ok")]
    sections = report.ir_sections
    if not sections:
        line = hl._ir_lines(report, a, b)
        return [Row(b, "compiled code", "not compared", "", _first(line.text.removeprefix(
            "compiled code: not compared (").rstrip(")")), line.level)]
    several = len(sections) > 1
    return [_ir(s, report, a, b, f"compiled {s.kernel}" if several else "compiled code") for s in sections]


def shared_kinds(report: Report) -> tuple[str, ...]:
    """The kinds of the problems every variant shares, most severe first: what the first screen names of them
    (an op that writes into its input, say), the groups themselves being behind --verbose."""
    found = {p.kind for p in lists(report).shared}
    return tuple(k for k in ProblemKind if k in found)


def _directions(report: Report) -> list[str]:
    """The numerics directions with a row: those run, then those asked for that a stop signal kept from starting."""
    run = [c.direction for c in report.numerics.cases] if report.numerics is not None else []
    unstarted = ["forward" if s.check == "numerics" else s.check for s in report.skipped
                 if s.interrupted and s.check in ("numerics", "backward")]
    return list(dict.fromkeys(run + unstarted))


def _alone(report: Report, name: str) -> list[Row]:
    """A variant compared alone: per pass, its problems against the float64 reference, and its accuracy against
    the reference point (torch) where one ran: the verdicts the headline's problem list details."""
    out, section, refs = [], report.numerics, []
    for direction in _directions(report):
        cases = [c for c in section.cases if c.direction == direction] if section is not None else []
        check = "numerics" if direction == "forward" else direction
        if not cases:
            out.append(Row(name, check, "not run", "", _first(why_not_run(report.skipped, check)), "skip"))
            continue
        bad = [c for c in cases if problems(c, name)]
        of = f"of {_n(len(cases), 'case')}"
        if all(c.reference == name for c in cases):   # the reference point is the yardstick, judged by nothing
            out.append(Row(name, check, "not judged", "", "the reference point", "info"))
            continue
        out.append(Row(name, check, "problems", f"{len(bad)} {of}", _places(bad), "fail") if bad else
                   Row(name, check, "no problems", f"{len(cases)} {of}", "every case", "ok"))
        judged_cases = [(c, v) for c in cases for v in c.verdicts if (v.a, v.b) == (c.reference, name)]
        for accuracy, level in ((Accuracy.LESS, "fail"), (Accuracy.MORE, "ok"), (Accuracy.AS, "ok")):
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
    references."""
    found = lists(report)
    out = []
    pairs = hl.headline(report).pairs
    if not pairs:
        names = judged(report)
        return _alone(report, names[0]) if len(names) == 1 else []
    for pair in pairs:
        a, b = pair.baseline, pair.variant
        mine = [_numerics(report.numerics, a, b, found, d, report.skipped) for d in _directions(report)]
        out += [dataclasses.replace(r, against=a) for r in mine + _timing(report, a, b) + _compiled(report, a, b)]
        out += [Row(b, v.check, v.outcome.value, v.amount, v.where, v.outcome.level, a) for v in verdicts_of(report, a, b)]
    return out
