"""What is wrong with one variant in one numerics case, as comparable records; how to say a set of them
in a line per input kind and dtype; and, once for every renderer and gate, which of them every variant
shares, which a variant introduced against the baseline and which it fixed (`lists`).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.kept import kept
from compare.model.plain_words import listed
from compare.model.results import NumericsCase, NumericsSection, Report, VariantNumerics
from compare.model.states import Accuracy, Bits, Failure, LoadStatus, ProblemKind, Status

@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem of one variant in one numerics case."""

    direction: str
    dtype: str
    input_kind: str
    shape: str
    output: str          # "-" for a crash
    kind: ProblemKind
    detail: str = ""     # how to say it, if more precisely than `kind` (not part of its identity)
    order: int = 0       # the output's place among the case's outputs, for listing

    @property
    def key(self) -> tuple:
        return (self.direction, self.dtype, self.input_kind, self.shape, self.output, self.kind)


def variant_of(case: NumericsCase, name: str) -> Optional[VariantNumerics]:
    return next((v for v in case.variants if v.variant == name), None)


# failures that say nothing of the variant's numerics: it was not run, as far as any comparison goes
NOT_RUN = (Failure.INTERPRETER, Failure.CALL)


def ran(v: Optional[VariantNumerics]) -> bool:
    """It gave numbers, or crashed in a way that is its own (not the interpreter's limit, not the call's)."""
    return v is not None and (v.produced or (v.status == Status.ERROR and v.failure not in NOT_RUN))


def produced(v: Optional[VariantNumerics]) -> bool:
    return v is not None and v.produced


@dataclasses.dataclass(frozen=True)
class SaidOnce:
    """A variant that failed with one kind of failure in every case of a pass (direction "": of every pass),
    said in one line instead of a problem per case."""

    variant: str
    direction: str
    kind: Failure
    error: str           # the first case's error, one line
    at: str = ""         # LIBRARY: file:line in the library's tree


def said_once(section: Optional[NumericsSection], name: str) -> tuple[SaidOnce, ...]:
    """`name`'s failures said once: per pass where it failed in every case it was tried in with the same
    kind (not a plain crash, which stays a problem of its inputs); one for all passes where they agree."""
    found = []
    for d in dict.fromkeys(c.direction for c in section.cases) if section else ():
        tried = [v for c in section.cases if c.direction == d and (v := variant_of(c, name)) is not None
                 and v.status in (Status.PASS, Status.FAIL, Status.ERROR)]
        kinds = {v.failure for v in tried}
        if tried and all(v.status == Status.ERROR for v in tried) and len(kinds) == 1 \
                and not kinds & {Failure.CRASH, Failure.NONE}:
            first = tried[0]
            found.append(SaidOnce(name, d, first.failure, first.reasons[0] if first.reasons else "", first.failed_at))
    if len(found) > 1 and len({(f.kind, f.error) for f in found}) == 1:
        return (dataclasses.replace(found[0], direction=""),)
    return tuple(found)


def covered(once: tuple[SaidOnce, ...], case: NumericsCase) -> bool:
    """Whether a failure said once (`once`, said_once's) covers `case`: it is no problem of that case."""
    return any(s.direction in ("", case.direction) for s in once)


def problems(case: NumericsCase, name: str) -> set[Problem]:
    """What is wrong with variant `name` in `case` (empty for the reference point: it is the yardstick).
    A tolerance miss on an output where the yardstick misses too is none: the dtype's tolerance does not
    hold there for anyone (a float32 sum over 10^5 elements), and the accuracy verdict against the
    yardstick judges the variant instead ("less accurate than the reference point")."""
    v = variant_of(case, name)
    if not ran(v) or name == case.reference:
        return set()
    ref = variant_of(case, case.reference) if case.reference else None   # the yardstick's own tolerance misses
    unattainable = {e.output for e in ref.outputs if e.beyond_tol} if produced(ref) else set()
    where = (case.direction, case.dtype, case.input_kind, case.shape)
    # an input it writes into: its output field names the input (x, dy), listed after the outputs
    found = {Problem(*where, w.input, ProblemKind.WRITES_INPUT, "", len(v.outputs) + i) for i, w in enumerate(v.writes)}
    if v.status == Status.ERROR:
        crash = f"crashed ({v.reasons[0]})" if v.reasons else ""
        return found | {Problem(*where, "-", ProblemKind.CRASHED, crash)} if v.failure not in NOT_RUN else found
    order = {e.output: i for i, e in enumerate(v.outputs)}
    for e in v.outputs:
        nonfinite = "NaN" if e.nan and not e.inf else "Inf" if e.inf and not e.nan else "NaN/Inf"
        for kind, count, say in ((ProblemKind.UNWRITTEN, e.unwritten, ""),
                                 (ProblemKind.NONFINITE, e.nonfinite_mismatch, f"{nonfinite} where the reference is finite"),
                                 (ProblemKind.BEYOND_TOLERANCE, 0 if e.output in unattainable else e.beyond_tol, "")):
            if count:
                found.add(Problem(*where, e.output, kind, say, order[e.output]))
    for verdict in case.verdicts:
        if (verdict.a, verdict.b) == (case.reference, name) and verdict.accuracy == Accuracy.LESS:
            found |= {Problem(*where, o, ProblemKind.LESS_ACCURATE, f"less accurate than {case.reference}", order.get(o, 0))
                      for o in verdict.lost}
    return found


def _worst_per_output(items: set[Problem]) -> list[Problem]:
    worst: dict[tuple, Problem] = {}
    # sorted, so that among equally bad problems (say NaN on one shape, NaN/Inf on another) the one
    # shown does not depend on set order: a report must render the same in every process
    for p in sorted(items, key=lambda p: (ProblemKind.rank(p.kind), p.shape, p.detail, p.dtype, p.input_kind)):
        k = (p.direction, p.output)
        if k not in worst or ProblemKind.rank(p.kind) < ProblemKind.rank(worst[k].kind):
            worst[k] = p
    return sorted(worst.values(), key=lambda p: (p.direction != "forward", p.direction, p.order))


def describe(items: set[Problem], kinds_order: tuple[str, ...] = ()) -> list[str]:
    """Problems as lines, one per (input kind, dtype): '<kind> inputs, <dtype>: <what> in <direction> <outputs>; ...',
    input kinds in `kinds_order` (then the rest)."""
    lines = []
    for (kind, dtype), ps in _by_place(items, kinds_order):
        by_what: dict[str, list[str]] = {}
        for p in _worst_per_output(ps):
            by_what.setdefault(p.detail or p.kind, []).append(p.direction if p.output == "-"
                                                               else f"{p.direction} {p.output}")
        shapes = len({p.shape for p in ps})
        on = f", {shapes} shapes" if shapes > 1 else ""
        lines.append(f"{kind} inputs, {dtype}{on}: " + "; ".join(f"{what} in {_join_outputs(outs)}"
                                                                 for what, outs in by_what.items()))
    return lines


def by_problem(items: set[Problem] | frozenset[Problem], kinds_order: tuple[str, ...] = ()) -> list[str]:
    """Problems as lines, one per problem and the outputs it is on, each naming every input kind it holds on,
    worst first: 'NaN where the reference is finite in forward y and backward dx: large_mean and huge inputs
    (float32)' (the dtype with each input kind where several)."""
    dtypes = sorted({p.dtype for p in items})
    where: dict[tuple[str, str], list[str]] = {}
    worst_kind: dict[tuple[str, str], int] = {}
    for (kind, dtype), ps in _by_place(items, kinds_order):
        by_what: dict[str, list[Problem]] = {}
        for p in _worst_per_output(ps):
            by_what.setdefault(p.detail or p.kind, []).append(p)
        for what, ps in by_what.items():
            key = (what, _join_outputs([p.direction if p.output == "-" else f"{p.direction} {p.output}" for p in ps]))
            where.setdefault(key, []).append(kind if len(dtypes) == 1 else f"{kind} {dtype}")
            worst_kind[key] = min(ProblemKind.rank(p.kind) for p in ps)
    only = f" ({dtypes[0]})" if len(dtypes) == 1 else ""
    return [f"{what} in {outs}: {listed(where[(what, outs)])} inputs{only}"
            for what, outs in sorted(where, key=lambda k: worst_kind[k])]


def _by_place(items, kinds_order: tuple[str, ...]) -> list[tuple[tuple[str, str], set[Problem]]]:
    """`items` grouped by (input kind, dtype), input kinds in `kinds_order` (then the rest, by name)."""
    rank = {k: i for i, k in enumerate(kinds_order)}
    places = sorted({(p.input_kind, p.dtype) for p in items}, key=lambda k: (rank.get(k[0], len(rank)), k))
    return [(place, {p for p in items if (p.input_kind, p.dtype) == place}) for place in places]


def _join_outputs(outs: list[str]) -> str:
    """'forward y', 'forward rstd', 'backward dx' as 'forward y, rstd and backward dx'."""
    by_dir: dict[str, list[str]] = {}
    for o in outs:
        d, _, name = o.partition(" ")
        by_dir.setdefault(d, []).append(name)
    return " and ".join(f"{d} {', '.join(n for n in names if n)}".strip() for d, names in by_dir.items())


def input_kinds(section: NumericsSection) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.input_kind for c in section.cases))




# ---------------------------------------------------------------- shared, introduced, fixed
def bits(case: NumericsCase, a: str, b: str, output: str | None = None) -> Bits | str:
    """The pair's bitwise verdict in `case`, for `output` or the worst over its outputs ("" if none recorded)."""
    found = [p.verdict for p in case.pairs if {p.a, p.b} == {a, b} and output in (None, p.output)]
    return max(found, key=Bits.rank, default="")


def has(case: NumericsCase, name: str, other: str, p: Problem) -> bool:
    """Does `name` have `other`'s problem `p` in `case`? Yes also when the two outputs' bits are identical or
    differ only within run-to-run spread: then the problem comes and goes with the run, not the variant."""
    return (p.key in {q.key for q in problems(case, name)}
            or (p.output != "-" and bits(case, name, other, p.output) in (Bits.IDENTICAL, Bits.WITHIN_SPREAD)))


def judged(report: Report) -> list[str]:
    """Variants the headline is about: loaded ones, in order, without the reference point added unasked."""
    added = report.numerics.added_reference if report.numerics else ""
    return [v.name for v in report.variants if v.status == LoadStatus.OK and v.name != added]


@dataclasses.dataclass(frozen=True)
class Lists:
    """The baseline's problems by who keeps them, and each other variant's against the baseline."""

    baseline: str
    others: tuple[str, ...]                 # the variants judged against the baseline (no yardstick)
    shared: frozenset[Problem]              # the baseline's, kept by every one of `others`
    kept: dict[tuple[str, ...], frozenset[Problem]]   # the baseline's, kept by only these of `others`
    introduced: dict[str, frozenset[Problem]]         # variant -> what it has and the baseline has not
    fixed: dict[str, frozenset[Problem]]              # variant -> what the baseline has and it has not
    once: dict[str, tuple[SaidOnce, ...]] = dataclasses.field(default_factory=dict)   # variant -> said once
    alone: frozenset[Problem] = frozenset()   # the baseline's, where no other variant gave numbers to compare

    def fixers(self, items: frozenset[Problem]) -> list[str]:
        """The variants that fixed some of `items`."""
        return [n for n in self.others if items & self.fixed[n]]


def lists(report: Report) -> Lists:
    """Problems shared by every variant, kept by some, introduced and fixed by each, case by case: a
    problem is B's own only where the baseline gave numbers and has it not; fixed only where both gave
    numbers and B has it not (a side that failed never fixes, nor is as good). A failure said once
    (`said_once`) is no problem of the cases it covers. Decided once per report (compare/model/kept.py)."""
    return kept(report, Lists, lambda: _lists(report))


def _lists(report: Report) -> Lists:
    section, base = report.numerics, report.baseline
    names = judged(report)
    yardsticks = {c.reference for c in section.cases} if section else set()
    others = tuple(n for n in names if n != base and n not in yardsticks)
    once = {n: said_once(section, n) for n in (base, *others)}
    shared: set[Problem] = set()
    alone: set[Problem] = set()
    kept: dict[tuple[str, ...], set[Problem]] = {}
    introduced: dict[str, set[Problem]] = {n: set() for n in others}
    fixed: dict[str, set[Problem]] = {n: set() for n in others}

    def counted(c: NumericsCase, n: str) -> bool:
        return ran(variant_of(c, n)) and not covered(once[n], c)
    for c in section.cases if section else ():
        mine = problems(c, base) if counted(c, base) else set()
        for n in others:
            if produced(variant_of(c, base)) and counted(c, n):
                introduced[n] |= {p for p in problems(c, n) if not has(c, base, n, p)}
            if produced(variant_of(c, base)) and produced(variant_of(c, n)):
                fixed[n] |= {p for p in mine if not has(c, n, base, p)}
        for p in mine:   # a variant that did not run (or failed) in the case neither keeps nor fixes the problem
            fixers = [n for n in others if p in fixed[n]]
            keepers = tuple(n for n in others if n not in fixers and counted(c, n) and has(c, n, base, p))
            losers = [n for n in others if counted(c, n) and n not in keepers]
            if not losers and (keepers or not others):
                shared.add(p)
            elif keepers or fixers:
                kept.setdefault(keepers, set()).add(p)
            else:   # no other variant gave numbers to compare there, or none that have or fix it
                alone.add(p)
    return Lists(base, others, frozenset(shared), {k: frozenset(v) for k, v in kept.items() if k},
                 {n: frozenset(v) for n, v in introduced.items()}, {n: frozenset(v) for n, v in fixed.items()},
                 once, frozenset(alone))


def brief(items: set[Problem] | frozenset[Problem], kinds_order: tuple[str, ...] = ()) -> str:
    """Problems in a few words, worst first, by what and on which inputs: 'NaN on large_mean and
    all_equal inputs | less accurate than torch on nonfinite inputs' (the dtype too where several)."""
    several = len({p.dtype for p in items}) > 1
    where: dict[str, list[str]] = {}
    worst = [p for _, ps in _by_place(items, kinds_order) for p in _worst_per_output(ps)]
    for p in sorted(worst, key=lambda p: ProblemKind.rank(p.kind)):   # stable: input kinds stay in order
        what = p.detail.split(" where ")[0] if p.kind == ProblemKind.NONFINITE \
            else p.detail if p.kind == ProblemKind.LESS_ACCURATE else p.kind
        label = f"{p.input_kind} {p.dtype}" if several else p.input_kind
        if label not in where.setdefault(what, []):
            where[what].append(label)
    return " | ".join(f"{what} on {listed(labels)} inputs" for what, labels in where.items())
