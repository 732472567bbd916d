"""One variant against the baseline in compiled code, decided once: the headline's line over every
compiled-code section (the forward kernels, and the kernels of other passes when variants bring their own,
each named by its kernel when there are several), each section's own verdict, which the glance's rows read,
and one phrase where the two run the same compiled code (compare/model/same_code.py)."""
from __future__ import annotations

import dataclasses
from typing import Optional

from compare.model import plain_words
from compare.model.line import Line
from compare.model.loopclaims import loop_claims
from compare.model.results import IRSection, IRVariant, PassStatus, Report
from compare.model.results_ir import NOT_RUN, failed_at, op_kernel
from compare.model.same_code import SameCode, same_code
from compare.model.skips import why_not_run
from compare.model.states import IRStatus, Level
from compare.model.vocabulary import STAGE_TITLES as _STAGE

TOPIC = "compiled code"


@dataclasses.dataclass(frozen=True)
class PairCode:
    line: Line
    same: Optional[SameCode]           # both sides run the same compiled code in every pass
    uncompared: Optional[str]          # why no compiled code was compared (no section); None where some was
    sections: tuple[Line, ...] = ()    # each section's own verdict, in the report's order (text: its phrase);
                                       # () where `same` or `uncompared` says it all


def pair_code(report: Report, a: str, b: str) -> PairCode:
    """B against A in the report's compiled-code sections."""
    sections = report.ir_sections
    if not sections:
        why = why_not_run(report.skipped, "ir")
        return PairCode(Line(TOPIC, Level.SKIP, f"compiled code: not compared ({why})"), None, why)
    same = same_code(report, a, b)
    if same is not None:
        return PairCode(Line(TOPIC, Level.OK, f"compiled code: {same.said}"), same, None)
    own = tuple(_section(s, a, b) for s in sections)
    if len(sections) == 1:
        return PairCode(Line(TOPIC, own[0].level, f"compiled code: {own[0].text}"), None, None, own)
    level = min((line.level for line in own), key=Level.rank)
    return PairCode(Line(TOPIC, level, "compiled code: " + "; ".join(
        f"{s.kernel} kernel: {line.text}" for s, line in zip(sections, own))), None, None, own)


def details(section: IRSection, a: str, b: str) -> str:
    """The headline's words on B against A in `section`, by the stages' short names and the instructions' own
    names: what the folded compiled-code section says under the plain words at the top."""
    return _section(section, a, b, plain=False).text


def pair_code_line(section: IRSection, a: str, b: str) -> str:
    """The headline's plain words on B against A in `section` alone."""
    return _section(section, a, b).text


def sides(section: IRSection, a: str, b: str) -> tuple[IRVariant | None, IRVariant | None, list]:
    """A's and B's rows in `section` (None: no row), and their launched kernels paired by name (op-level variants)."""
    va = next((v for v in section.variants if v.variant == a), None)
    vb = next((v for v in section.variants if v.variant == b), None)
    return va, vb, [m for m in section.kernels if (m.a, m.b) == (a, b)]


def changes(counts) -> list[str]:
    """'registers 40 -> 48' for each (what, A's, B's) that differs where both are known (-1: not known)."""
    return [f"{what} {x} -> {y}" for what, x, y in counts if x != y and x >= 0 and y >= 0]


def _section(section: IRSection, a: str, b: str, plain: bool = True) -> Line:
    va, vb, matches = sides(section, a, b)
    if matches:   # op-level variants: the kernels each launched, paired by name
        return _ops(section, a, b, matches, plain)
    gone = [v for v in (vb, va) if v is not None and v.status == NOT_RUN]
    if gone:   # an op that failed when run: its kernels are unknown, not broken
        first = gone[0].error.splitlines()[0] if gone[0].error else "?"
        return Line(TOPIC, Level.FAIL if gone[0] is vb else Level.SKIP,
                    f"the kernels of {gone[0].variant} not found: {first}")
    if vb is None or va is None:
        return Line(TOPIC, Level.SKIP, f"{b} not compared with {a}")
    if vb.status != IRStatus.OK:
        return Line(TOPIC, Level.FAIL, f"{b} did not compile: {vb.error.splitlines()[0] if vb.error else '?'}")
    if va.status != IRStatus.OK:
        return Line(TOPIC, Level.SKIP, f"the baseline {a} did not compile")
    parts = loop_claims(section, va, vb, plain=plain) + resources(va, vb, plain)
    pair = next((p for p in section.pairs if (p.a, p.b) == (a, b)), None)
    if pair is not None:
        changed = [d for d in pair.stages if not d.identical]
        if not changed:
            parts.append("identical at every stage")
        elif plain and len(changed) == len(pair.stages) > 1:   # every stage, in order: its counts in that order
            first, last = (plain_words.STAGE_WORDS[d.stage] for d in (changed[0], changed[-1]))
            parts.append(f"lines changed from {first} to {last}: " + ", ".join(str(d.changed_lines) for d in changed))
        elif plain:
            parts.append("lines changed: " + ", ".join(f"{d.changed_lines} in {plain_words.STAGE_WORDS[d.stage]}"
                                                       for d in changed))
        else:
            parts.append("changed lines: " + ", ".join(f"{_STAGE[d.stage]} {d.changed_lines}" for d in changed))
    return Line(TOPIC, Level.INFO, "; ".join(parts or ["no structural change found"]))


def resources(va: IRVariant, vb: IRVariant, plain: bool = False) -> list[str]:
    """A's and B's registers and spill bytes where they differ (`plain`: spills in plain words)."""
    spilled = "bytes spilled to memory per thread" if plain else "spill bytes"
    return changes((("registers", va.registers, vb.registers), (spilled, va.spill_bytes, vb.spill_bytes)))


def _ops(section: IRSection, a: str, b: str, matches: list, plain: bool = True) -> Line:
    """The launched kernels of two ops, paired by name: each one's status, a changed one's loops (carried
    pointers at both sides, see loop_claims) and resources, then the passes whose kernels were not found."""
    rows = {v.variant: v for v in section.variants if v.status == IRStatus.OK}
    said, broken = [], set()
    for m in matches:
        failed = failed_at(section.variants, m.kernel, (a, b)) if m.failed else ()
        broken.update(failed)
        at = _changed_at(section, m.changed_stages, plain) if m.changed_stages else ""
        text = f"{m.kernel} {m.status}{at}" + \
            (f" (did not compile in {' and '.join(failed)})" if failed else "")
        va, vb = rows.get(op_kernel(a, m.kernel)), rows.get(op_kernel(b, m.kernel))
        claims = loop_claims(section, va, vb, names=(a, b), plain=plain) + resources(va, vb, plain) \
            if m.changed and va is not None and vb is not None else []
        text += f" [{'; '.join(claims)}]" if claims else ""
        said.append(text)
    said += not_found(section, (a, b))
    # the variant's kernel that does not compile fails it; the baseline's alone is what the change fixed or kept
    level = Level.INFO if not any(m.failed for m in matches) else Level.WARN if broken == {a} else Level.FAIL
    head = "the kernels each op launched, paired by name: " if plain else "launched kernels, paired by name: "
    return Line(TOPIC, level, head + "; ".join(said))


def _changed_at(section: IRSection, stages: tuple[str, ...], plain: bool) -> str:
    if plain:
        return " (at every stage)" if len(section.stages) > 1 and set(section.stages) <= set(stages) \
            else f" (in {plain_words.stages(stages)})"
    return f" ({', '.join(_STAGE.get(x, x) for x in stages)})"


def not_found(section: IRSection, ops: tuple[str, ...]) -> list[str]:
    """'backward kernels of A, B not found (its backward failed: ...)': the passes of `ops` that failed
    when run to find their kernels, one phrase per pass and reason."""
    by: dict[tuple[str, str], list[str]] = {}
    for n in section.passes:
        if n.status == PassStatus.NOT_FOUND and n.variant in ops:
            by.setdefault((n.kernel, n.why), []).append(n.variant)
    return [f"{kernel} kernels of {', '.join(who)} not found (the {kernel} failed: {why})"
            for (kernel, why), who in by.items()]
