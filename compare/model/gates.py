"""Exit-code gates for CI: each gate asked for, decided once into the report (`decide`), before any
renderer runs; the exit code comes from the same records.

They act on what a variant introduced against the baseline: a problem the baseline already has (and
so every pull request that leaves it alone would "fail" on) does not trip them. A gate whose evidence
is missing (no GPU, so nothing was timed) ends "not judged", and fails unless --accept-unjudged."""
from __future__ import annotations

import dataclasses

from compare.model.fouls import foul_lines
from compare.model.kept import carried
from compare.model.headline import headline
from compare.model.problems import describe, judged, problems, ran, variant_of
from compare.model.results import Failure, Gate, Report
from compare.model.pair_timing import not_timed, untimed_dtypes
from compare.model.same_code import same_pass_code
from compare.model.skips import short_why
from compare.model.states import GateOutcome, LoadStatus, TimingVerdict


def decide(report: Report, fail_on_numerics: bool = False, fail_if_slower_pct: float | None = None,
           accept_unjudged: bool = False) -> tuple[Gate, ...]:
    """The gates asked for (--fail-on-numerics, --fail-if-slower PCT), each with its outcome and lines;
    `accept_unjudged` lets a gate that could not judge pass."""
    gates = []
    if fail_on_numerics:
        gates.append(_numerics(report))
    if fail_if_slower_pct is not None:
        gates.append(_slower(report, fail_if_slower_pct))
    return tuple(dataclasses.replace(g, accepted=accept_unjudged and g.outcome == GateOutcome.NOT_JUDGED)
                 for g in gates)


def decided(report: Report, fail_on_numerics: bool = False, fail_if_slower_pct: float | None = None,
            accept_unjudged: bool = False, more: tuple[Gate, ...] = ()) -> Report:
    """`report` holding its gates (`decide`, then `more` decided elsewhere), and what was decided on it before:
    the gates read it, never feed it."""
    gates = decide(report, fail_on_numerics, fail_if_slower_pct, accept_unjudged) + tuple(more)
    return carried(report, dataclasses.replace(report, gates=gates))


def failures(report: Report, fail_on_numerics: bool = False, fail_if_slower_pct: float | None = None,
             accept_unjudged: bool = False) -> list[str]:
    """One line per reason a gate asked for fails the run; empty when every one holds."""
    return [line for g in decide(report, fail_on_numerics, fail_if_slower_pct, accept_unjudged) if g.fails
            for line in reasons(g)]


def reasons(gate: Gate) -> list[str]:
    """Why `gate` fails the run, a line each (for stderr and CI logs), naming the flag where unjudged."""
    if not gate.fails:
        return []
    return [f"{gate.name} could not be judged: {line}" if gate.outcome == GateOutcome.NOT_JUDGED else line
            for line in gate.lines]


def brief(gate: Gate) -> str:
    """Why `gate` fails, in one line naming the flag: its first reason, and how many more (the report lists all)."""
    said = reasons(gate)
    if not said:
        return ""
    first = said[0] if said[0].startswith(gate.name) else f"{gate.name}: {said[0]}"
    return first + (f" (and {len(said) - 1} more)" if len(said) > 1 else "")


def _numerics(report: Report) -> Gate:
    """Fails on a variant that could not be loaded, one with a foul (compare/model/fouls.py), one with a problem
    the baseline has not in the same case (crash, unwritten or non-finite-mismatched elements, errors beyond
    tolerance, less accurate than the reference point), or one judged less accurate than the baseline
    (compare/model/headline.py). The reference point never trips it; with one variant only, its own
    problems count."""
    name = "--fail-on-numerics"
    broken = [_unloaded(v) for v in report.variants if v.status != LoadStatus.OK]
    broken += foul_lines(report)   # a foul fails every gate, whichever check saw it
    section = report.numerics
    if section is None:   # a gate never passes without the evidence it judges
        return Gate(name, None, GateOutcome.FAILED, tuple(broken)) if broken else \
            Gate(name, None, GateOutcome.NOT_JUDGED, ("no numerics were run",))
    broken += introduced(report)
    if broken:
        return Gate(name, None, GateOutcome.FAILED, tuple(broken))
    yardsticks = {c.reference for c in section.cases}
    names = [n for n in judged(report) if n not in yardsticks]
    unrun = [n for n in names if not any(ran(variant_of(c, n)) for c in section.cases)]
    if unrun:
        why = [f"{n} ran in no numerics case ({_why_not(report, n)})" for n in unrun]
        return Gate(name, None, GateOutcome.NOT_JUDGED, tuple(why))
    what = f"introduced against {report.baseline}" if len(names) > 1 else f"of {report.baseline}'s"
    n = len(section.cases)
    return Gate(name, None, GateOutcome.PASSED, (f"no numerics problem {what} in {n} case{'' if n == 1 else 's'}",))


def _unloaded(v) -> str:
    """A failed variant's line: what it did to the process, how its run ended, or that it never loaded."""
    first = v.error.splitlines()[0] if v.error else "?"
    if v.failure == Failure.TAMPER:
        return f"variant {v.name} tampered with the process: {first}"
    if v.failure == Failure.CRASH:   # it loaded and ran: its error says how its process ended
        return f"variant {v.name} {first}"
    return f"variant {v.name} could not be loaded"


def tampered(report: Report) -> list[str]:
    """A line for each variant that changed the process's shared state or the run's outcome: every gate
    fails on it (none of its numbers or times is evidence, and nothing it did may pass a check)."""
    return [_unloaded(v) for v in report.variants if v.failure == Failure.TAMPER]


def introduced(report: Report) -> list[str]:
    """What the variants introduced in numerics against the baseline (the pairs' gate lines of
    compare/model/headline.py); with one variant, its own problems."""
    if report.numerics is None:
        return []
    names = judged(report)
    if len(names) == 1:
        items = {p for c in report.numerics.cases for p in problems(c, names[0])}
        return [f"numerics: {names[0]}: {line}" for line in describe(items)]
    return [g for pair in headline(report).pairs for g in pair.introduced]


def _why_not(report: Report, name: str) -> str:
    said = [r for c in report.numerics.cases for v in c.variants if v.variant == name for r in v.reasons]
    return said[0] if said else "no result"


def _slower(report: Report, pct: float) -> Gate:
    """Fails on a foul (compare/model/fouls.py), and on a variant whose timing verdict against the baseline
    is "slower" (significant, outside the noise band) by more than `pct` percent; a non-significant
    difference never does, nor one in a pass where both run the same compiled code (the headline gives it
    no verdict: compare/model/same_code.py)."""
    name = "--fail-if-slower"
    if tampered(report) or foul_lines(report):   # a foul or a tampered process fails every gate
        return Gate(name, pct, GateOutcome.FAILED, tuple(tampered(report) + foul_lines(report)))
    if report.timing is None:
        why = short_why(report.skipped, "timing")
        return Gate(name, pct, GateOutcome.NOT_JUDGED, (f"timing was not measured ({why})",))
    broken, judged_pairs, untimed = [], set(), {}
    for case in report.timing.cases:
        for c in case.comparisons:
            if c.verdict == TimingVerdict.NA:
                untimed.setdefault(c.variant, f"{case.shape} {case.mode}: {c.reason or 'not compared'}")
                continue
            judged_pairs.add(c.variant)
            if c.verdict == TimingVerdict.SLOWER and (c.ratio - 1) * 100 > pct and \
                    same_pass_code(report, c.baseline, c.variant, case.mode, case.dtype) is None:
                broken.append(f"timing: {c.variant} is {(c.ratio - 1) * 100:.2f}% slower than {c.baseline} "
                              f"on {case.shape} {case.mode} (limit {pct:g}%)")
    if broken:
        return Gate(name, pct, GateOutcome.FAILED, tuple(broken))
    never = [n for n in untimed if n not in judged_pairs]
    if never or not judged_pairs:
        why = [f"{n} was compared on no shape ({untimed[n]})" for n in never]
        return Gate(name, pct, GateOutcome.NOT_JUDGED,
                    tuple(why) or (f"no variant was timed against {report.baseline}",))
    partly = [f"{n} not compared on every shape ({why})" for n, why in untimed.items()] + \
        [not_timed(s) for s in untimed_dtypes(report)]
    return Gate(name, pct, GateOutcome.PASSED, (f"no variant slower than {report.baseline} by more than {pct:g}%",
                                      *partly))
