"""Whether two variants run the same compiled code: every kernel of every pass they run identical at every
stage down to SASS, decided from a report's compiled-code sections alone (so a saved report.json decides
the same). Where they do, a timing difference between them is noise by construction: the headline says
so instead of a timing verdict. `same_pass_code` decides it for one timed pass: the whole op's kernels, or
those that pass launched (an op whose forward kernel changed and whose backward kernels did not)."""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model.kept import carried, kept
from compare.model.problems import judged
from compare.model.results import IRSection, PassStatus, Report
from compare.model.states import TimingBasis, TimingVerdict
from compare.model.plain_words import STAGE_WORDS

MACHINE_STAGE = "sass"   # identical here too: the same machine code, not only the same intermediate code


@dataclasses.dataclass(frozen=True)
class SameCode:
    """Two variants' kernels, identical at every stage compiled."""

    mode: str                     # "offline" (compiled for `target` without a GPU) or "launched" (as run here)
    target: str                   # "sm_90", or "the GPU's" when launched
    stages: tuple[str, ...]
    kernels: tuple[str, ...]      # what was compared: "forward kernel", or an op's launched kernels by name
    shared: tuple[str, ...] = ()  # passes not compiled: every variant runs the same kernel for them
    passes: tuple[str, ...] = ()  # the timed passes this holds for (same_pass_code); () for every pass

    @property
    def where(self) -> str:
        """'sm_90, compiled offline' or 'as launched on this GPU'."""
        return f"{self.target}, compiled offline" if self.mode == "offline" else "as launched on this GPU"

    @property
    def said(self) -> str:
        """'both sides run the same compiled code (sm_90, compiled offline: forward kernel identical at every
        stage, from Triton's IR to the machine code)': the headline's plain words for the stages."""
        shared = f"; {' and '.join(self.shared)} kernel shared, not compiled" if self.shared else ""
        first = STAGE_WORDS.get(self.stages[0], self.stages[0]) if self.stages else ""
        at = f"every stage, from {first} to the machine code" if len(self.stages) > 1 else first
        return (f"both sides run the same compiled code ({self.where}: {', '.join(self.kernels)} identical at "
                f"{at}{shared})")


def _unknown(section: IRSection, a: str, b: str) -> bool:
    """A pass of a or b (or of every variant) that no section compares for a reason other than sharing."""
    return any(n.status != PassStatus.SHARED and n.variant in ("", a, b) for n in section.passes)


def _identical(section: IRSection, a: str, b: str) -> Optional[tuple[str, ...]]:
    """What of a and b this section compared, when all of it is identical; None otherwise."""
    matches = [m for m in section.kernels if (m.a, m.b) == (a, b)]
    if matches:   # op-level variants: every kernel either launched, paired by name
        return tuple(m.kernel for m in matches) if all(m.identical for m in matches) else None
    pair = next((p for p in section.pairs if (p.a, p.b) == (a, b)), None)
    if pair is None or not pair.stages or not all(d.identical for d in pair.stages):
        return None
    return (f"{section.kernel} kernel",)


@dataclasses.dataclass(frozen=True)
class CompiledCode:
    """Whether the pairs a report judges run the same compiled code, decided once per report: in every pass
    (`same_code`), and in each timed pass at its dtype (`same_pass_code`); None where they do not."""

    whole: dict[tuple[str, str], Optional[SameCode]]                  # (a, b)
    passes: dict[tuple[str, str, str, str], Optional[SameCode]]       # (a, b, mode, dtype)


def compiled_code(report: Report) -> CompiledCode:
    """The report's CompiledCode: the baseline against each variant judged, and each timing comparison's pair."""
    return kept(report, CompiledCode, lambda: _compiled_code(report))


def _compiled_code(report: Report) -> CompiledCode:
    timed = [(c.baseline, c.variant, case.mode, case.dtype)
             for case in (report.timing.cases if report.timing is not None else ()) for c in case.comparisons]
    pairs = [(report.baseline, n) for n in judged(report) if n != report.baseline] + [k[:2] for k in timed]
    whole = {pair: _same_code(report, *pair) for pair in dict.fromkeys(pairs)}
    return CompiledCode(whole, {k: _same_pass_code(report, whole[k[:2]], *k) for k in dict.fromkeys(timed)})


def same_code(report: Report, a: str, b: str) -> Optional[SameCode]:
    """SameCode when a and b ran the same compiled code in every pass (see the module), else None: also
    when any pass or stage down to SASS was not compared."""
    whole = compiled_code(report).whole
    return whole[(a, b)] if (a, b) in whole else _same_code(report, a, b)


def _same_code(report: Report, a: str, b: str) -> Optional[SameCode]:
    sections = report.ir_sections
    if not sections or any(MACHINE_STAGE not in s.stages or _unknown(s, a, b) for s in sections):
        return None
    kernels: list[str] = []
    for section in sections:
        found = _identical(section, a, b)
        if found is None:
            return None
        kernels += found
    shared = tuple(n.kernel for s in sections for n in s.passes if n.status == PassStatus.SHARED)
    first = sections[0]
    return SameCode(first.mode, first.target, first.stages, tuple(kernels), shared)


def _pass_identical(section: IRSection, a: str, b: str, mode: str) -> Optional[tuple[str, ...]]:
    """The kernels ops a and b launched in pass `mode`, when this section compared them all and each is
    identical (code and grid); None otherwise, and where it does not know which pass launched what. Triton
    variants' passes are judged when timed, by kernel and launcher (compare/checks/timing_verdicts.py)."""
    if any(n.status != PassStatus.SHARED and n.kernel == mode and n.variant in ("", a, b) for n in section.passes):
        return None
    launched = [m for m in section.kernels if (m.a, m.b) == (a, b) and mode in m.passes]
    return tuple(m.kernel for m in launched) if launched and all(m.identical for m in launched) else None


def same_pass_code(report: Report, a: str, b: str, mode: str, dtype: str = "") -> Optional[SameCode]:
    """SameCode when a's and b's timed pass `mode` ("forward", "backward", "full") at `dtype` runs the same
    compiled code: every pass does (`same_code`), or a and b are ops and every kernel that pass launched is
    identical down to SASS, on the same grid. The latter only at the dtype compiled ("": not recorded, taken
    as it) and for one pass: "full" runs both, which is `same_code`'s question."""
    passes = compiled_code(report).passes
    key = (a, b, mode, dtype)
    return passes[key] if key in passes else _same_pass_code(report, same_code(report, a, b), *key)


def _same_pass_code(report: Report, whole: Optional[SameCode], a: str, b: str, mode: str,
                    dtype: str) -> Optional[SameCode]:
    if whole is not None or mode == "full":
        return whole
    sections = [s for s in report.ir_sections if MACHINE_STAGE in s.stages]
    if not sections or (dtype and any(dtype != s.dtype for s in sections)):
        return None
    for section in sections:
        found = _pass_identical(section, a, b, mode)
        if found:
            return SameCode(section.mode, section.target, section.stages, found, passes=(mode,))
    return None


@dataclasses.dataclass(frozen=True)
class TimingGroup:
    """A pair's comparisons in one timed pass (and dtype, where the section holds several) over the shapes,
    and the compiled code both sides are known to run in it (`same`: then no verdict)."""

    key: str                   # "backward", or "backward bfloat16"
    comparisons: tuple         # the TimingComparisons of b against a, a shape each
    same: Optional[SameCode] = None

    @property
    def judged(self) -> list:
        """The comparisons with a verdict (n/a: a side failed, or a foul withheld it)."""
        return [c for c in self.comparisons if c.verdict != TimingVerdict.NA]


def timing_groups(report: Report, a: str, b: str) -> list[TimingGroup]:
    """The pair's timing comparisons by pass (and dtype), each with `same_pass_code`, in the section's order."""
    section = report.timing
    if section is None:
        return []
    several = len({c.dtype for c in section.cases}) > 1 or len(report.dtype.split(",")) > 1   # one untimed: said
    found: dict[str, tuple[list, Optional[SameCode]]] = {}
    for case in section.cases:
        for c in case.comparisons:
            if (c.baseline, c.variant) == (a, b):
                key = f"{case.mode} {case.dtype}" if several else case.mode
                found.setdefault(key, ([], same_pass_code(report, a, b, case.mode, case.dtype)))[0].append(c)
    return [TimingGroup(key, tuple(comps), same) for key, (comps, same) in found.items()]


def settled(report: Report) -> Report:
    """`report` with each timing comparison in a pass whose compiled code is the same on both sides
    (`same_pass_code`) given no difference on that basis: decided once, when the report is made, so that its
    tables, summaries and gates say what its headline says."""
    if report.timing is None or not report.ir_sections:
        return report
    cases = []
    for case in report.timing.cases:
        comparisons = tuple(
            dataclasses.replace(c, verdict=TimingVerdict.NO_DIFFERENCE, basis=TimingBasis.IDENTICAL_COMPILED_CODE)
            if c.verdict != TimingVerdict.NA and same_pass_code(report, c.baseline, c.variant, case.mode, case.dtype)
            else c for c in case.comparisons)
        cases.append(dataclasses.replace(case, comparisons=comparisons))
    # what changed is the timing verdicts, which feed no compiled-code verdict: those are kept
    return carried(report, dataclasses.replace(report, timing=dataclasses.replace(report.timing, cases=tuple(cases))),
                   (CompiledCode,))
