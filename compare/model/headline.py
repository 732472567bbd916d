"""The reviewer's answer first: what each variant changed against the baseline, apart from what they share.

Per pair, at most three lines (numerics, timing, compiled code), the problems introduced and fixed, and the
gate lines compare/model/gates.py reads; once, the baseline's problems the variants keep. Derived from a Report's
sections alone, so a saved report.json re-renders the same. The reference point judges, never is judged.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.fouls import fouled, said
from compare.model.kept import kept
from compare.model.line import Line
from compare.model.pair_code import PairCode, pair_code
from compare.model.pair_numerics import PairNumerics, once_lines, pair_numerics
from compare.model.pair_timing import PairTiming, pair_timing
from compare.model.problems import Lists, Problem, by_problem, describe, input_kinds, judged, lists
from compare.model.results import Report
from compare.model.states import Level
from compare.model.vocabulary import BACKWARD, NUMERICS


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


@dataclasses.dataclass(frozen=True)
class PairVerdicts:
    """Everything decided about one variant against the baseline: what its headline lines, glance rows and
    gate lines say."""

    baseline: str
    variant: str
    introduced: frozenset[Problem]          # its problems the baseline has not
    fixed: frozenset[Problem]               # the baseline's problems it has not
    foul: Optional[Line]                    # a fouled side: then no accuracy and no timing verdict
    numerics: Optional[PairNumerics]        # over every pass; None without numerics, or with a foul
    passes: dict[str, PairNumerics]         # each pass ("forward", "backward") on its own: a glance row each
    once: tuple[Line, ...]                  # failures said once (problems.said_once) of either side (no foul)
    once_gate: tuple[str, ...]
    timing: PairTiming
    code: PairCode


def verdicts(report: Report) -> tuple[PairVerdicts, ...]:
    """Each variant judged against the baseline, in order; decided once per report (compare/model/kept.py)."""
    return kept(report, PairVerdicts, lambda: _verdicts(report))


def _verdicts(report: Report) -> tuple[PairVerdicts, ...]:
    found, fouls = lists(report), fouled(report)   # a fouled side earns the pair no accuracy and no timing verdict
    return tuple(_pair(report, found, fouls, b) for b in judged(report) if b != report.baseline)


def _pair(report: Report, found: Lists, fouls: dict, b: str) -> PairVerdicts:
    section, a = report.numerics, report.baseline
    introduced, fixed = found.introduced.get(b, frozenset()), found.fixed.get(b, frozenset())
    who = b if b in fouls else a if a in fouls else ""
    foul = Line("foul", Level.FAIL, f"foul: {who}: {said(fouls[who])}; no accuracy and no timing verdict") if who \
        else None
    whole, passes, once, once_gate = None, {}, [], []
    if section is not None:
        for direction in dict.fromkeys(c.direction for c in section.cases):
            own = dataclasses.replace(section, cases=tuple(c for c in section.cases if c.direction == direction))
            passes[direction] = pair_numerics(own, a, b, frozenset(p for p in introduced if p.direction == direction),
                                              frozenset(p for p in fixed if p.direction == direction), found.once)
    if section is not None and foul is None:   # a fouled pair's headline says the foul, not its numerics
        whole = pair_numerics(section, a, b, introduced, fixed, found.once)
        once, once_gate = once_lines(found, a, b)
    return PairVerdicts(a, b, introduced, fixed, foul, whole, passes, tuple(once), tuple(once_gate),
                        pair_timing(report, a, b), pair_code(report, a, b))


def headline(report: Report) -> Headline:
    """The report's headline, decided once per report (compare/model/kept.py)."""
    return kept(report, Headline, lambda: _headline(report))


def _headline(report: Report) -> Headline:
    section, base = report.numerics, report.baseline
    found = lists(report)   # compare/model/problems.py decides what is shared, introduced or fixed
    kinds = input_kinds(section) if section else ()
    # each numerics pass asked for that a stop signal kept from starting has a glance row, so a line here too
    unstarted = [Line(s.check, Level.SKIP, f"{s.check}: not run ({s.why})") for s in report.skipped
                 if s.interrupted and s.check in (NUMERICS, BACKWARD)]
    pairs = []
    for pair in verdicts(report):
        b = pair.variant
        if pair.foul is not None:
            pairs.append(PairHeadline(base, b, (pair.foul, pair.code.line), (), tuple(describe(pair.introduced, kinds))))
            continue
        lines, gate = [], []
        if pair.numerics is not None:
            line = pair.numerics.line
            lines += ([] if pair.once and line.level == Level.SKIP else [line]) + list(pair.once)
            gate = [*pair.numerics.gate, *pair.once_gate]
        lines += [*unstarted, pair.timing.line, pair.code.line]
        pairs.append(PairHeadline(base, b, tuple(lines), tuple(gate), tuple(describe(pair.introduced, kinds)),
                                  tuple(describe(pair.fixed, kinds))))
    shared_title = ("shared by every variant (not introduced by this change)" if found.others
                    else f"problems of {base} (the only variant judged)")
    kept_lines = tuple(f"{line} (kept by {', '.join(keepers)}; fixed by {', '.join(found.fixers(ps))})"
                       for keepers, ps in found.kept.items() for line in describe(ps, kinds))
    kept_lines += tuple(f"{line} (no other variant gave numbers there to compare)"
                        for line in describe(found.alone, kinds))
    kept_title = f"problems of {base} only some variants keep" + (
        ", or where no other gave numbers" if found.alone else "")
    return Headline(tuple(pairs), shared_title, tuple(describe(found.shared, kinds)), kept_title, kept_lines,
                    tuple(by_problem(found.shared, kinds)))
