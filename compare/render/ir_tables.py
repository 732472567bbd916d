"""The IR section as verdict lines, tables with legends and diff blocks, for every text renderer."""
from __future__ import annotations

import dataclasses

from compare.model.loopclaims import match_lines, op_deltas
from compare.model.loopmatch import stage_matches, stage_of
from compare.model.pair_code import details, not_found, pair_code_line
from compare.model.results import IRLoop, IRSection, IRVariant
from compare.model.states import IRStatus, LoopMatch
from compare.model.results_ir import NOT_RUN, IRKernelMatch, failed_at
from compare.model.vocabulary import STAGE_TITLES



@dataclasses.dataclass(frozen=True)
class DiffBlock:
    """A titled piece of listing text: a normalized unified diff, or (with --full) a whole listing."""

    title: str
    text: str
    kind: str        # "diff" or "listing"
    a: str = ""      # the two variants of a diff
    b: str = ""


RESOURCES_LEGEND = (
    "registers, spills, stack: per thread, from the cubin (cuobjdump -res-usage); spills = local memory bytes "
    "(Triton's n_spills is this / 4); shared: Triton's metadata.shared (bytes per block)",
    "launched: n_regs / n_spills the kernel Triton launched reports (GPU only); agree: both sources give the same",
)
LOOPS_LEGEND = (
    "loop: position in the stage's loop nest (2.1 = first loop inside loop 2), with its induction variable as the "
    "source names it (TTIR/TTGIR); line: first line in the normalized listing",
    "carried: values carried from one iteration to the next (TTIR/TTGIR iter_args, LLIR header phis, PTX registers "
    "read before written in the loop); * = pointer (PTX: feeds an address); SASS: none given (physical registers)",
    "matches: the baseline's loop this one is, told by nesting, trip count (TTIR/TTGIR), global loads and stores and "
    "op mix, not by position (its similarity, 0 to 1); added: like none of the baseline's; unsure: like several "
    "(or several like it) with no pairing clearly best, so none is claimed",
    "ops: instructions in the loop itself, nested loops excluded; change, instruction count changes: against the "
    "matched baseline loop",
)
MEMORY_LEGEND = (
    "global loads and stores by width; TTIR/TTGIR: scalar pointer or tensor of pointers (the vector width is chosen "
    "when lowering to LLIR); LLIR/PTX: ld/st.global.vN = N elements per instruction; SASS: .128 = 16 bytes",
)
DIFF_LEGEND = (
    "normalized: locations, debug info and comments dropped; values, registers, labels and the kernel renamed "
    "canonically; lines aligned so that an inserted instruction does not rename the rest",
    "changed lines: lines removed plus added (the measure every line and diff title gives); diff length: lines of "
    "the whole diff with 3 lines of context; raw: the same for a plain unified diff of the listings as Triton "
    "wrote them",
)


KERNELS_LEGEND = (
    "op-level variants: the Triton kernels each op launched in one forward and one backward pass, paired by kernel "
    "name with the baseline op's; identical: every stage's normalized listing agrees, on the same grid; changed: the "
    "stages that differ (their diffs are below, as OP:KERNEL), and grid where it ran on another; only in: launched by "
    "one of the two ops",
    "an op's kernel (OP:KERNEL) is measured in the loop tables against the first op's kernel of the same name",
)


def _status(section: IRSection, m: IRKernelMatch) -> str:
    """A pair's status; a failed one says at which op its kernel did not compile."""
    failed = failed_at(section.variants, m.kernel, (m.a, m.b)) if m.failed else ()
    return m.status + (f" (did not compile in {' and '.join(failed)})" if failed else "")


def kernel_rows(section: IRSection) -> tuple:
    return tuple((m.kernel, m.a, m.b, _status(section, m),
                  ", ".join(STAGE_TITLES.get(s, s) for s in m.changed_stages) or "-") for m in section.kernels)


def _kernel_lines(section: IRSection) -> list[tuple[str, str]]:
    """One line per pair of ops: which of their kernels compiled identically, which changed, which failed where."""
    lines = []
    for a, b in dict.fromkeys((m.a, m.b) for m in section.kernels):
        these = [m for m in section.kernels if (m.a, m.b) == (a, b)]
        parts = [f"{m.kernel} {_status(section, m)}" + (
            f" ({', '.join(STAGE_TITLES.get(s, s) for s in m.changed_stages)})" if m.changed_stages else "")
            for m in these]
        level = "warn" if any(m.failed for m in these) else "info"
        parts += not_found(section, (a, b))
        lines.append((level, f"ir kernels launched by {b} vs {a}, paired by name: {'; '.join(parts)}"))
    return lines


def _carried(loop: IRLoop) -> str:
    if not loop.carried:
        return "none"
    return ", ".join(c.type + ("*" if c.pointer else "") + (f" {c.name}" if c.name else "") for c in loop.carried)


def resources_rows(section: IRSection) -> tuple:
    rows = []
    for v in section.variants:
        if v.status != "ok":
            rows.append((v.variant, "NOT RUN" if v.status == NOT_RUN else "FAILED", *(["-"] * 6)))
            continue
        launched = "-" if v.launched_registers < 0 else f"{v.launched_registers} / {v.launched_spills}"
        agree = "-" if v.launched_registers < 0 else (
            "yes" if (v.launched_registers, v.launched_spills) == (v.registers, v.spill_bytes // 4) else "NO")
        rows.append((v.variant, "ok", str(v.registers), f"{v.spill_bytes} B", str(v.stack_bytes), str(v.shared_bytes),
                     launched, agree))
    return tuple(rows)


def _baseline_of(v: IRVariant, ok: list[IRVariant]) -> IRVariant:
    """What a variant's loops are measured against: the first variant, or for a kernel an op launched
    (OP:KERNEL; a variant name holds no ':') the first op's kernel of the same name."""
    kernel = v.variant.partition(":")[2]
    if not kernel:
        return next(u for u in ok if ":" not in u.variant)
    return next(u for u in ok if u.variant.partition(":")[2] == kernel)


def _loop_row(loop: IRLoop, v: IRVariant, matches: str, base: IRLoop | None) -> tuple:
    delta = "-" if base is None else f"{loop.instructions - base.instructions:+d}"
    return (f"{loop.path} ({loop.variable})" if loop.variable else loop.path, v.variant, matches,
            str(loop.first_line), _carried(loop), str(loop.carried_pointers), str(loop.instructions), delta,
            "-" if base is None else (op_deltas(loop, base, 5) or "="))


def loop_rows(section: IRSection, stage: str) -> tuple:
    """Each baseline loop, then the loop each other variant matched to it; then each variant's loops
    matched to none (added, or without a confident match)."""
    ok = [v for v in section.variants if v.status == IRStatus.OK]
    rows = []
    for first in [v for v in ok if _baseline_of(v, ok) is v]:
        base = stage_of(first, stage)
        if base is None:
            continue
        others = [(v, stage_of(v, stage)) for v in ok if v is not first and _baseline_of(v, ok) is first]
        others = [(v, s, stage_matches(section, first.variant, v.variant, stage)) for v, s in others if s]
        for loop in sorted(base.loops, key=lambda l: l.first_line):
            rows.append(_loop_row(loop, first, "-", None))
            for v, s, found in others:
                m = next((m for m in found if loop.path in m.a), None)
                if m is not None and m.status == LoopMatch.MATCHED:
                    mine = next(l for l in s.loops if l.path == m.b[0])
                    rows.append(_loop_row(mine, v, f"{loop.path} ({m.score:.2f})", loop))
                elif m is None or m.status == LoopMatch.REMOVED:
                    rows.append((loop.path, v.variant, "removed", "-", "no such loop", "-", "-", "-", "-"))
        for v, s, found in others:
            for m in found:
                for path in m.b if m.status in (LoopMatch.ADDED, LoopMatch.UNSURE) else ():
                    mine = next(l for l in s.loops if l.path == path)
                    said = "added" if m.status == LoopMatch.ADDED else f"unsure: {', '.join(m.a)}"
                    rows.append(_loop_row(mine, v, said, None))
    return tuple(rows)


def memory_rows(section: IRSection, stage: str) -> tuple:
    rows = []
    for v in section.variants:
        s = stage_of(v, stage) if v.status == IRStatus.OK else None
        for m in s.memory if s else ():
            rows.append((v.variant, m.kind, m.op, m.width, m.loop, str(m.count)))
    return tuple(rows)


def diff_rows(section: IRSection) -> tuple:
    rows = []
    for p in section.pairs:
        for d in p.stages:
            ratio = f"{d.diff_lines / d.raw_diff_lines:.3f}" if d.raw_diff_lines else "-"
            rows.append((p.a, p.b, STAGE_TITLES[d.stage], "identical" if d.identical else str(d.changed_lines),
                         str(d.diff_lines), str(d.raw_changed_lines), str(d.raw_diff_lines), ratio))
    return tuple(rows)


def ir_summary(section: IRSection) -> list[tuple[str, str]]:
    """Verdict lines: failed compiles, pointer-carrying loops per stage, diff sizes and registers."""
    ir = "ir" if section.kernel == "forward" else f"ir {section.kernel}"
    lines = _kernel_lines(section)
    for v in section.variants:
        if v.status != "ok":
            what = "kernels not found" if v.status == NOT_RUN else "did not compile"
            lines.append(("fail", f"{ir}: {v.variant} {what}: {v.error.splitlines()[0] if v.error else '?'}"))
    ok = [v for v in section.variants if v.status == IRStatus.OK]
    for stage in section.stages:
        if stage == "sass":
            continue
        parts = []
        for v in ok:
            s = stage_of(v, stage)
            carrying = [l for l in s.loops if l.carried_pointers] if s else []
            parts.append(f"{v.variant} " + (", ".join(f"loop {l.path} carries {l.carried_pointers} pointer"
                                                     f"{'s' if l.carried_pointers != 1 else ''}"
                                                     + (f" ({', '.join(l.pointer_names)})" if l.pointer_names else "")
                                                     for l in carrying)
                                            or "no loop carries a pointer"))
        lines.append(("info", f"{ir} {STAGE_TITLES[stage]}: " + "; ".join(parts)))
    lines += [("info", f"{ir} loops of {p.b} paired with {p.a}'s: {text}")
              for p in section.pairs for text in match_lines(section, p.a, p.b)]
    for p in section.pairs:
        sizes = ", ".join(f"{STAGE_TITLES[d.stage]} {'identical' if d.identical else d.changed_lines}"
                          for d in p.stages)
        lines.append(("info", f"{ir} changed lines, {p.b} against {p.a}: {sizes}"))
    if ok:
        regs = ", ".join(f"{v.variant} {v.registers} regs {v.spill_bytes} B spilled" for v in ok)
        level = "warn" if any(v.spill_bytes > 0 for v in ok) else "info"
        lines.append((level, f"{ir} resources: {regs}"))
    for p in section.pairs:   # the headline's plain words as the tables and diffs name stages and ops; last, so
        raw = details(section, p.a, p.b)   # that a comment short of room cuts it before any other line
        if raw != pair_code_line(section, p.a, p.b):
            lines.append(("info", f"{ir} {p.b} against {p.a}, by stage and instruction: {raw}"))
    return lines


def diff_blocks(section: IRSection) -> list[DiffBlock]:
    """The normalized diffs that are not empty, and with --full the whole normalized listings."""
    blocks = []
    for p in section.pairs:
        for d in p.stages:
            if not d.identical:
                kernel = "" if section.kernel == "forward" else f" ({section.kernel} kernel)"
                blocks.append(DiffBlock(f"{STAGE_TITLES[d.stage]}{kernel}: {p.a} -> {p.b}, {d.changed_lines} changed lines",
                                        d.diff, "diff", p.a, p.b))
    for v in section.variants:
        for s in v.stages:
            if s.listing:
                blocks.append(DiffBlock(f"{STAGE_TITLES[s.stage]} of {v.variant}, normalized ({s.lines} lines)",
                                        s.listing, "listing"))
    return blocks


def side_by_side(diff: str) -> list[tuple[str, str, str]]:
    """Rows (a, b, tag) of a unified diff: tag ' ' context, '~' changed, '-' only in A, '+' only in B, '@' hunk."""
    rows, minus, plus = [], [], []

    def flush():
        for k in range(max(len(minus), len(plus))):
            a = minus[k] if k < len(minus) else ""
            b = plus[k] if k < len(plus) else ""
            rows.append((a, b, "~" if a and b else ("-" if a else "+")))
        minus.clear()
        plus.clear()
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        tag, text = line[:1], line[1:]
        if tag == "-":
            minus.append(text)
        elif tag == "+":
            plus.append(text)
        else:
            flush()
            rows.append((line, line, "@") if tag == "@" or line.startswith("...") else (text, text, " "))
    flush()
    return rows
