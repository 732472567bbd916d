"""The report as summary lines and titled tables with legends, shared by every text renderer."""
from __future__ import annotations

import dataclasses

from compare.supervisor import CRASHES
from compare.render import ir_tables
from compare.results import IRSection, NumericsCase, NumericsSection, Report


IR_TITLE = "Compiled code (IR)"


@dataclasses.dataclass(frozen=True)
class Table:
    """`legend`: what the columns mean, the same under tables of a kind, so renderers print it once per
    section (`section_legend`); `aside`: lines about this table alone, printed under it."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    legend: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    aside: tuple[str, ...] = ()


def section_legend(tables) -> tuple[str, ...]:
    """The legends of `tables`, each line once, in the order they first appear."""
    return tuple(dict.fromkeys(line for t in tables for line in t.legend))


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    intro: tuple[str, ...]
    tables: tuple[Table, ...]
    lines: tuple[tuple[str, str], ...] = ()   # the section's verdict lines (level, text), detail under the headline


@dataclasses.dataclass(frozen=True)
class Summary:
    """Notices under the headline (variants not loaded, sections skipped): (level, text), level one of
    ok, warn, fail, skip, info."""

    lines: tuple[tuple[str, str], ...]


def sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.2e}"


NUMERICS_LEGEND = (
    "status: pass = every output within tolerance, fully written, non-finite only where the reference is "
    "(an element non-finite in both counts as agreement)",
    "max abs / rel L2: worst |out - ref| and ||out - ref|| / ||ref|| against float64, over elements finite in both",
    "ULPs of max: max abs in units in the last place of max|ref| in the output's dtype (the per-element ULP, "
    "in report.json as max_ulp, is tiny where outputs are near zero and says little there)",
    "beyond tol: elements outside the case dtype's tolerance (torch.testing.assert_close's defaults: float32 "
    "rtol 1.3e-6 atol 1e-5, float16 rtol 1e-3 atol 1e-5, bfloat16 rtol 1.6e-2 atol 1e-5), applied to every "
    "output of the case, float32 outputs included",
    "NaN/Inf: non-finite values the kernel wrote; unwritten: elements still holding the NaN poison after the launch",
    "Worst case over all trials; inputs drawn fresh for every trial.",
)
REFERENCE_LEGEND = ("yardstick: the reference point; it judges the other variants and is judged by nothing "
                    "(its own distance from float64 is shown for scale)",)
UNTRUSTED_LEGEND = ("untrusted: not run, because this backend is known not to compute the dtype faithfully "
                    "(the note says why); numbers from it would not hold on a GPU",)
PAIRS_LEGEND = (
    "bitwise: raw bits of the two outputs compared (-0.0 vs +0.0 and NaN payloads count as different); "
    "within spread: A's output is not deterministic and B differs from A by at most 2 x the max |difference| "
    "between two runs of A on the first trial's inputs",
    "differing: elements whose bits differ, summed over trials; max abs A-B: largest |A - B| among them; "
    "run-to-run: elements differing / max |difference| between two runs of A; first at: index of the first "
    "differing element",
)


def verdict_legend(factor: float) -> tuple[str, ...]:
    return (f"B loses on an output when it has more non-finite-mismatched or unwritten elements than A, or as many "
            f"and B's rel L2 > {factor:g} x A's + u, or B's max abs > {factor:g} x A's + u/2 x max|ref| with B's "
            f"per-element ULP > 1 (u: machine epsilon of the case's dtype); B gains where A loses by the same rule",
            "less accurate: B loses on some output (even if it gains on another); more accurate: B gains and loses "
            "nowhere; as accurate: neither, or every output bitwise equal")


_BITWISE = {"identical": "equal", "within run-to-run spread": "within spread", "differ": "DIFFER"}


def _label(name: str, case: NumericsCase, added: str) -> str:
    return f"{name} (reference point)" if name == added else name


def _numerics_tables(case: NumericsCase, section: NumericsSection) -> list[Table]:
    added, factor = section.added_reference, section.verdict_factor
    names = list(dict.fromkeys(e.output for v in case.variants for e in v.outputs)) or ["output"]
    first, rest = names[0], names[1:]
    headers = ("variant", "status", f"{first} max abs", f"{first} rel L2", f"{first} ULPs of max", f"{first} beyond tol",
               *(h for n in rest for h in (f"{n} max abs", f"{n} rel L2")), "NaN/Inf", "unwritten")
    rows, notes, yardstick = [], [], []
    for v in case.variants:
        out = {e.output: e for e in v.outputs}
        label = _label(v.variant, case, added)
        is_reference = v.variant == case.reference
        status = "yardstick" if is_reference and v.status in ("pass", "fail") else v.status.replace("_", " ")
        if v.status in ("not_run", "error", "untrusted") or first not in out:
            rows.append((label, status, *(["-"] * (len(headers) - 2))))
        else:
            e = out[first]
            ulps = e.ulps_of_max
            cells = [sci(e.max_abs), sci(e.rel_l2), "-" if ulps != ulps else f"{ulps:.1f}", str(e.beyond_tol)]
            for n in rest:
                cells += [sci(out[n].max_abs), sci(out[n].rel_l2)] if n in out else ["-", "-"]
            rows.append((label, status, *cells, str(sum(x.nan + x.inf for x in v.outputs)),
                         str(sum(x.unwritten for x in v.outputs))))
        (yardstick if is_reference and v.status in ("pass", "fail") else notes).extend(
            f"{v.variant}: {r}" for r in v.reasons)
    legend = NUMERICS_LEGEND + (section.backward_legend if case.direction == "backward" else section.forward_legend)
    if case.reference:
        legend += REFERENCE_LEGEND
    if any(v.status == "untrusted" for v in case.variants):
        legend += UNTRUSTED_LEGEND
    where = f"{case.direction}, {case.shape}, {case.dtype}, {case.input_kind} inputs"
    tables = [Table(f"Numerics: {where}, {len(case.seeds)} trials", headers, tuple(rows), legend, tuple(notes),
                    tuple(f"{line} (for scale)" for line in yardstick))]
    if case.pairs:
        prow = tuple((p.a, p.b, p.output, _BITWISE[p.verdict], str(p.n_diff), "-" if p.equal else sci(p.max_abs),
                      f"{p.spread_n_diff} / {sci(p.spread_max_abs)}" if p.spread_n_diff else "0",
                      "-" if p.first_diff is None else str(list(p.first_diff))) for p in case.pairs)
        legend = PAIRS_LEGEND + (section.backward_pairs_legend if case.direction == "backward" else ())
        tables.append(Table(f"Bitwise: {where}", ("A", "B", "output", "bitwise", "differing", "max abs A-B",
                                                  "run-to-run", "first at"), prow, legend))
    if case.verdicts:
        vrow = tuple((_label(v.a, case, added), _label(v.b, case, added),
                      "LESS ACCURATE" if v.accuracy == "less accurate" else v.accuracy,
                      v.basis, "; ".join(v.detail) or "-") for v in case.verdicts)
        tables.append(Table(f"Accuracy verdicts: {where}", ("A", "B", "B against A", "basis", "where B lost, then gained"),
                            vrow, verdict_legend(factor)))
    return tables


def _case_key(c: NumericsCase) -> str:
    return f"{c.direction} {c.dtype} {c.input_kind}"


def _grouped(items, limit: int = 4) -> str:
    """'key (first detail; n shapes), ...' for (case, detail) items, grouped by direction/dtype/kind."""
    groups: dict[str, list[str]] = {}
    for c, detail in items:
        groups.setdefault(_case_key(c), []).append(detail)
    parts = [f"{k} ({d[0]}{'' if len(d) == 1 else f'; {len(d)} shapes'})" for k, d in groups.items()]
    more = f"; and {len(parts) - limit} more" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def numerics_summary(section: NumericsSection, baseline: str) -> list[tuple[str, str]]:
    lines = []
    names = list(dict.fromkeys(v.variant for c in section.cases for v in c.variants))
    for name in names:
        results = [(c, v) for c in section.cases for v in c.variants if v.variant == name]
        label = f"{name} (reference point)" if name == section.added_reference else name
        bad = [(c, v) for c, v in results if v.status in ("fail", "error")]
        not_run = [(c, v) for c, v in results if v.status == "not_run"]
        untrusted = [(c, v) for c, v in results if v.status == "untrusted"]
        ran = len(results) - len(not_run) - len(untrusted)
        if any(c.reference == name for c, _ in results):   # the yardstick: shown for scale, never judged
            outside = [(c, v) for c, v in bad if v.status == "fail"]
            lines.append(("info", f"numerics: {label} is the yardstick, judged by nothing; for scale, it is outside "
                                  f"the dtype's tolerance in {len(outside)} of {ran} cases run"
                                  + (": " + _grouped((c, v.reasons[0]) for c, v in outside) if outside else "")))
            bad = [(c, v) for c, v in bad if v.status == "error"]
            ran = 0   # said above
        if bad:
            lines.append(("fail", f"numerics: {label} FAILED in {len(bad)} of {ran} cases run: " + _grouped(
                (c, v.reasons[0] if v.reasons else v.status) for c, v in bad)))
        elif ran:
            lines.append(("ok", f"numerics: {label} within tolerance in all {ran} cases run"))
        if untrusted:
            dts = sorted({c.dtype for c, _ in untrusted})
            lines.append(("warn", f"numerics: {label} in {', '.join(dts)} ({len(untrusted)} cases): "
                                  f"{untrusted[0][1].reasons[0].split(': ', 1)[-1]}"))
        if not_run:
            lines.append(("warn", f"numerics: {label} not run in {len(not_run)} cases: {not_run[0][1].reasons[0]}"))
    lines.extend(_reference_callouts(section))
    for other in names:
        if other in (baseline, section.added_reference):
            continue
        pairs = [p for c in section.cases for p in c.pairs
                 if {p.a, p.b} == {baseline, other}]
        if not pairs:
            continue
        differing = [p for p in pairs if p.verdict == "differ"]
        spread = sorted({p.output for p in pairs if p.verdict == "within run-to-run spread"})
        if differing:
            outs = sorted({p.output for p in differing})
            lines.append(("info", f"bitwise: {other} vs {baseline}: differ in {', '.join(outs)} "
                                  f"({sum(p.n_diff for p in differing)} elements over all cases)"))
        elif spread:
            lines.append(("info", f"bitwise: {other} vs {baseline}: {', '.join(spread)} differ only within the "
                                  f"run-to-run spread; every other output identical"))
        else:
            lines.append(("info", f"bitwise: {other} vs {baseline}: identical bits in every output of every case"))
    return lines


def _reference_callouts(section: NumericsSection) -> list[tuple[str, str]]:
    """Every case where a variant is less accurate than the reference point (torch), by the verdict rule."""
    lines = []
    refs = {c.reference for c in section.cases if c.reference}
    for ref in sorted(refs):
        losers: dict[str, list] = {}
        for c in section.cases:
            for v in c.verdicts:
                if v.a == ref and c.reference == ref and v.accuracy == "less accurate":
                    losers.setdefault(v.b, []).append((c, f"{c.shape}: {v.detail[0] if v.detail else v.basis}"))
        judged = any(v.a == ref for c in section.cases for v in c.verdicts)
        for name, items in losers.items():
            for key in dict.fromkeys(_case_key(c) for c, _ in items):
                these = [(c, d) for c, d in items if _case_key(c) == key]
                lines.append(("warn", f"less accurate than {ref}: {name}, {key}: " + "; ".join(d for _, d in these)))
        if judged and not losers:
            lines.append(("ok", f"accuracy: every variant as or more accurate than {ref} in every case judged "
                                f"(factor {section.verdict_factor:g})"))
    return lines


# a skipped check's reason starts "CHECK:"; the headline's line of that topic says it for each pair
_HEADLINE_TOPIC = {"timing": "timing", "ir": "compiled code"}


def _in_headline(reason: str, head) -> bool:
    """Whether every pair's headline already says the check of `reason` was skipped (so it is said once)."""
    topic = _HEADLINE_TOPIC.get(reason.split(":", 1)[0])
    return bool(head and head.pairs and topic) and all(
        any(line.topic == topic and line.level == "skip" for line in pair.lines) for pair in head.pairs)


def build(report: Report, head=None) -> tuple[Summary, list[Section]]:
    """The notices for under the headline (variants not loaded, sections skipped, unless `head`, the
    report's headline, says so already) and the sections, each with its own verdict lines."""
    summary: list[tuple[str, str]] = []
    sections: list[Section] = []
    failed = [v for v in report.variants if v.status != "ok"]
    for v in failed:
        error = " / ".join(v.error.splitlines())
        how = error if error.startswith(CRASHES) else f"could not be loaded: {error}"
        summary.append(("fail", f"variant {v.name} {how}"))
    summary.extend(("warn", f"variant {line}") for line in report.incidents)
    if report.numerics is not None:
        n = report.numerics
        tables = [t for case in n.cases for t in _numerics_tables(case, n)]
        intro = (n.note, *n.plan)
        if n.added_reference:
            intro += (f"{n.added_reference} was not named; it runs as a reference point for the accuracy "
                      f"verdicts (labelled 'reference point').",)
        sections.append(Section("Numerics", intro, tuple(tables), tuple(numerics_summary(n, report.baseline))))
    if report.timing is not None:
        from compare.render.timing_tables import timing_legend, timing_summary, timing_table  # it uses Table
        legend = timing_legend(report.timing)
        intro = [f"GPU: {report.timing.gpu}; device-to-device copy {report.timing.copy_gbs:.0f} GB/s (read + write)"]
        intro.extend(f"{name}: compiled in {sec:.1f} s (reported, not timed)" for name, sec in report.timing.compile_seconds)
        sections.append(Section("Timing", tuple(intro), tuple(timing_table(c, legend) for c in report.timing.cases),
                                tuple(timing_summary(report.timing))))
    for ir in report.ir_sections:
        sections.append(ir_section(ir, tuple(ir_tables.ir_summary(ir, report.baseline))))
    summary.extend(("skip", f"skipped: {reason}") for reason in report.skipped if not _in_headline(reason, head))
    return Summary(tuple(summary)), sections


def ir_section(section: IRSection, lines: tuple[tuple[str, str], ...] = ()) -> Section:
    """The compiled-code section: resources, then per stage the loop nest and the global memory ops,
    then the sizes of the normalized diffs next to the raw ones (the diff text is in `ir_tables.diff_blocks`)."""
    where = f"{section.mode}, target {section.target}"
    heading = IR_TITLE if section.kernel == "forward" else f"{IR_TITLE}: {section.kernel} kernel"
    intro = (f"{section.shape}, {section.dtype}; {where}; {section.note}",
             f"specialization: {section.specialization}")
    tables = [Table("Resources per thread", ("variant", "compiled", "registers", "spills", "stack", "shared",
                                             "launched regs / spills", "agree"),
                    ir_tables.resources_rows(section), ir_tables.RESOURCES_LEGEND,
                    tuple(f"{v.variant}: {v.error}" for v in section.variants if v.status != "ok"))]
    if section.kernels:
        tables.insert(0, Table("Kernels launched by the ops, paired by name", ("kernel", "A", "B", "compiled code",
                                                                               "stages that differ"),
                               ir_tables.kernel_rows(section), ir_tables.KERNELS_LEGEND))
    for stage in section.stages:
        title = ir_tables.STAGE_TITLES[stage]
        tables.append(Table(f"{title} loops", ("loop", "variant", "matches", "line", "carried", "pointers", "ops",
                                               "delta", "op deltas vs match"),
                            ir_tables.loop_rows(section, stage), ir_tables.LOOPS_LEGEND))
        tables.append(Table(f"{title} global loads and stores", ("variant", "kind", "op", "width", "loop", "count"),
                            ir_tables.memory_rows(section, stage), ir_tables.MEMORY_LEGEND))
    if section.pairs:
        tables.append(Table("Normalized diff against raw diff", ("A", "B", "stage", "changed", "diff lines",
                                                                 "raw changed", "raw diff lines", "diff / raw"),
                            ir_tables.diff_rows(section), ir_tables.DIFF_LEGEND))
    return Section(heading, intro, tuple(tables), lines)


def variants_table(report: Report) -> Table:
    rows = tuple((v.name, v.kind, _kernels(v), v.why, v.origin) for v in report.variants)
    legend = VARIANTS_LEGEND + (OP_LEGEND if any(v.kind == "op" for v in report.variants) else ())
    return Table("Variants", ("variant", "kind", "kernels", "what it is", "from"), rows, legend)


VARIANTS_LEGEND = ("kernels: the Triton kernels a variant brings, by pass; for a pass it does not bring it runs "
                   "the family's shared kernel; op: torch code (autograd for the backward), no Triton kernel of its own",)


OP_LEGEND = ("kind op: a library's op loaded with --variant, called as its users call it; its kernels are "
             "\"as launched\": found when it runs, and paired by name in the compiled-code section",)


def _kernels(v) -> str:
    if v.kind == "op":
        return "as launched"
    if v.kind != "triton":
        return "op"
    own = set(v.kernels)
    return ", ".join(f"{p} {'(own)' if p in own else '(shared)'}" for p in ("forward", "backward"))


def environment_lines(report: Report) -> list[str]:
    e = report.environment
    gpu = f"{e.gpu_name} x{e.gpu_count}, driver {e.driver}, CUDA {e.cuda}" if e.gpu_name else "none"
    lines = [
        f"device: {e.device}; GPU: {gpu}",
        f"torch {e.torch}, triton {e.triton}, Python {e.python}, {e.platform}",
        f"kernel-ab commit {e.git_commit[:12] or 'unknown'}{' (dirty)' if e.git_dirty else ''}, {e.time_utc}",
        f"command: {e.command}",
    ]
    if e.clocks:
        lines.insert(1, f"clocks (MHz) {e.clocks}")
    return lines
