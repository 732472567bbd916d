"""The report as summary lines and titled tables with legends, shared by every text renderer."""
from __future__ import annotations

import dataclasses

from compare.render import ir_tables
from compare.results import IRSection, NumericsCase, NumericsSection, Report, TimingCase, TimingSection


IR_TITLE = "Compiled code (IR)"


@dataclasses.dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    legend: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    intro: tuple[str, ...]
    tables: tuple[Table, ...]


@dataclasses.dataclass(frozen=True)
class Summary:
    """The verdict lines at the top: (level, text), level one of ok, warn, fail, skip, info."""

    lines: tuple[tuple[str, str], ...]


def sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.2e}"


NUMERICS_LEGEND = (
    "status: pass = every output within tolerance, fully written, non-finite only where the reference is",
    "max abs / rel L2: worst |out - ref| and ||out - ref|| / ||ref|| against float64, over elements finite in both",
    "ULP: worst error in units in the last place of the output's dtype",
    "beyond tol: elements outside torch.testing.assert_close's default rtol/atol for the dtype",
    "NaN/Inf: non-finite values the kernel wrote; unwritten: elements still holding the NaN poison after the launch",
    "Worst case over all trials; inputs drawn fresh for every trial.",
)
PAIRS_LEGEND = (
    "bitwise: raw bits of the two outputs compared (-0.0 vs +0.0 and NaN payloads count as different)",
    "differing: elements whose bits differ, summed over trials; first at: index of the first such element",
)


def _numerics_tables(case: NumericsCase) -> list[Table]:
    headers = ("variant", "status", "y max abs", "y rel L2", "y ULP", "y beyond tol",
               "mean max abs", "rstd max abs", "NaN/Inf", "unwritten")
    rows, notes = [], []
    for v in case.variants:
        out = {e.output: e for e in v.outputs}
        if v.status in ("not_run", "error"):
            rows.append((v.variant, v.status.replace("_", " "), *(["-"] * 8)))
        else:
            y, mean, rstd = out.get("y"), out.get("mean"), out.get("rstd")
            nonfinite = sum(e.nan + e.inf for e in v.outputs)
            unwritten = sum(e.unwritten for e in v.outputs)
            rows.append((v.variant, v.status, sci(y.max_abs), sci(y.rel_l2), f"{y.max_ulp:.1f}",
                         str(y.beyond_tol), sci(mean.max_abs) if mean else "-", sci(rstd.max_abs) if rstd else "-",
                         str(nonfinite), str(unwritten)))
        notes.extend(f"{v.variant}: {r}" for r in v.reasons)
    title = f"Numerics: {case.shape}, {case.dtype}, {case.input_kind} inputs, {len(case.seeds)} trials"
    tables = [Table(title, headers, tuple(rows), NUMERICS_LEGEND, tuple(notes))]
    if case.pairs:
        prow = tuple((p.a, p.b, p.output, "equal" if p.equal else "DIFFER", str(p.n_diff),
                      "-" if p.first_diff is None else str(list(p.first_diff))) for p in case.pairs)
        tables.append(Table(f"Bitwise: {case.shape}, {case.dtype}, {case.input_kind} inputs",
                            ("A", "B", "output", "bitwise", "differing", "first at"), prow, PAIRS_LEGEND))
    return tables


def numerics_summary(section: NumericsSection, baseline: str) -> list[tuple[str, str]]:
    lines = []
    names = list(dict.fromkeys(v.variant for c in section.cases for v in c.variants))
    for name in names:
        results = [(c, v) for c in section.cases for v in c.variants if v.variant == name]
        bad = [(c, v) for c, v in results if v.status in ("fail", "error")]
        not_run = [(c, v) for c, v in results if v.status == "not_run"]
        if bad:
            c, v = bad[0]
            lines.append(("fail", f"numerics: {name} FAILED in {len(bad)} of {len(results)} cases; first: "
                                  f"{c.shape} {c.dtype} {c.input_kind}: {v.reasons[0] if v.reasons else v.status}"))
        elif not_run and len(not_run) == len(results):
            lines.append(("warn", f"numerics: {name} not run: {not_run[0][1].reasons[0]}"))
        else:
            lines.append(("ok", f"numerics: {name} within tolerance in all {len(results) - len(not_run)} cases run"))
    for other in names:
        if other == baseline:
            continue
        pairs = [p for c in section.cases for p in c.pairs
                 if {p.a, p.b} == {baseline, other}]
        if not pairs:
            continue
        differing = [p for p in pairs if not p.equal]
        if differing:
            outs = sorted({p.output for p in differing})
            lines.append(("info", f"bitwise: {other} vs {baseline}: differ in {', '.join(outs)} "
                                  f"({sum(p.n_diff for p in differing)} elements over all cases)"))
        else:
            lines.append(("info", f"bitwise: {other} vs {baseline}: identical bits in every output of every case"))
    return lines


def timing_legend(section: TimingSection) -> tuple[str, ...]:
    return (
        "median, p20-p80: per-call GPU time over all rounds (ms); GB/s: the family's fewest bytes for the pass "
        f"over the median; % copy: that against the measured {section.copy_gbs:.0f} GB/s device-to-device copy",
        "peak MiB: memory one call allocates beyond what was allocated before it",
        f"ratio: median(variant) / median(baseline), > 1 is slower; {section.confidence:.0%} interval from a paired "
        "bootstrap over rounds; p: sign-flip permutation test on per-round log ratios",
        f"verdict: faster/slower only when p < 0.05 and the whole interval lies outside 1 ± {section.noise:g}; "
        "otherwise no difference beyond noise",
        f"method: {section.method}",
    )


def _pct(x: float) -> str:
    return f"{(x - 1) * 100:+.2f}%"


def _timing_table(case: TimingCase, legend: tuple[str, ...]) -> Table:
    headers = ("variant", "median ms", "p20-p80 ms", "GB/s", "% copy", "peak MiB", "vs baseline",
               f"95% interval", "p", "verdict")
    comps = {c.variant: c for c in case.comparisons}
    rows, notes = [], []
    for v in case.variants:
        if v.status != "ok":
            rows.append((v.variant, "error", *(["-"] * 8)))
            notes.append(f"{v.variant}: {v.reason}")
            continue
        c = comps.get(v.variant)
        if c is None:
            cmp = ("baseline", "", "", "")
        elif c.verdict == "n/a":
            cmp = ("-", "-", "-", f"n/a ({c.reason})")
        else:
            cmp = (_pct(c.ratio), f"[{_pct(c.ci_low)}, {_pct(c.ci_high)}]", f"{c.p_value:.3g}", c.verdict)
        rows.append((v.variant, f"{v.median_ms:.4f}", f"{v.p20_ms:.4f}-{v.p80_ms:.4f}", f"{v.gbs:.0f}",
                     f"{v.fraction_of_copy:.0%}", f"{v.peak_memory_bytes / 2**20:.1f}", *cmp))
    graph = ", CUDA graph replay" if case.graph else ""
    rounds = max((v.rounds for v in case.variants), default=0)
    title = f"Timing: {case.shape}, {case.mode}{graph}, {rounds} rounds in {case.seconds:.1f} s"
    return Table(title, headers, tuple(rows), legend, tuple(notes))


def timing_summary(section: TimingSection) -> list[tuple[str, str]]:
    lines = []
    keys = list(dict.fromkeys((c.baseline, c.variant, case.mode) for case in section.cases for c in case.comparisons))
    for baseline, variant, mode in keys:
        comps = [c for case in section.cases for c in case.comparisons
                 if (c.baseline, c.variant) == (baseline, variant) and case.mode == mode and c.verdict != "n/a"]
        if not comps:
            lines.append(("fail", f"timing {mode}: {variant} vs {baseline}: not compared (a variant failed)"))
            continue
        counts = {}
        for c in comps:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        parts = ", ".join(f"{v} in {n} of {len(comps)} shapes" for v, n in counts.items())
        lo, hi = min(c.ratio for c in comps), max(c.ratio for c in comps)
        level = "warn" if "slower" in counts else "info"
        lines.append((level, f"timing {mode}: {variant} vs {baseline}: {parts} (ratio {_pct(lo)} to {_pct(hi)})"))
    for case in section.cases:
        for v in case.variants:
            if v.status != "ok":
                lines.append(("fail", f"timing {case.mode} {case.shape}: {v.variant} failed: {v.reason}"))
    return lines


def build(report: Report) -> tuple[Summary, list[Section]]:
    summary: list[tuple[str, str]] = []
    sections: list[Section] = []
    failed = [v for v in report.variants if v.status != "ok"]
    for v in failed:
        summary.append(("fail", f"variant {v.name} could not be loaded: {' / '.join(v.error.splitlines())}"))
    if report.numerics is not None:
        summary.extend(numerics_summary(report.numerics, report.baseline))
        tables = [t for case in report.numerics.cases for t in _numerics_tables(case)]
        sections.append(Section("Numerics", (report.numerics.note,), tuple(tables)))
    if report.timing is not None:
        summary.extend(timing_summary(report.timing))
        legend = timing_legend(report.timing)
        intro = [f"GPU: {report.timing.gpu}; device-to-device copy {report.timing.copy_gbs:.0f} GB/s (read + write)"]
        intro.extend(f"{name}: compiled in {sec:.1f} s (reported, not timed)" for name, sec in report.timing.compile_seconds)
        sections.append(Section("Timing", tuple(intro), tuple(_timing_table(c, legend) for c in report.timing.cases)))
    if report.ir is not None:
        summary.extend(ir_tables.ir_summary(report.ir, report.baseline))
        sections.append(ir_section(report.ir))
    for reason in report.skipped:
        summary.append(("skip", f"skipped: {reason}"))
    return Summary(tuple(summary)), sections


def ir_section(section: IRSection) -> Section:
    """The compiled-code section: resources, then per stage the loop nest and the global memory ops,
    then the sizes of the normalized diffs next to the raw ones (the diff text is in `ir_tables.diff_blocks`)."""
    where = f"{section.mode}, target {section.target}"
    intro = (f"{section.shape}, {section.dtype}; {where}; {section.note}",
             f"specialization: {section.specialization}")
    tables = [Table("Resources per thread", ("variant", "compiled", "registers", "spills", "stack", "shared",
                                             "launched regs / spills", "agree"),
                    ir_tables.resources_rows(section), ir_tables.RESOURCES_LEGEND,
                    tuple(f"{v.variant}: {v.error}" for v in section.variants if v.status != "ok"))]
    for stage in section.stages:
        title = ir_tables.STAGE_TITLES[stage]
        tables.append(Table(f"{title} loops", ("loop", "variant", "line", "carried", "pointers", "ops", "delta",
                                               "op deltas vs baseline"),
                            ir_tables.loop_rows(section, stage), ir_tables.LOOPS_LEGEND))
        tables.append(Table(f"{title} global loads and stores", ("variant", "kind", "op", "width", "loop", "count"),
                            ir_tables.memory_rows(section, stage), ir_tables.MEMORY_LEGEND))
    if section.pairs:
        tables.append(Table("Normalized diff against raw diff", ("A", "B", "stage", "changed", "diff lines",
                                                                 "raw changed", "raw diff lines", "diff / raw"),
                            ir_tables.diff_rows(section), ir_tables.DIFF_LEGEND))
    return Section(IR_TITLE, intro, tuple(tables))


def variants_table(report: Report) -> Table:
    rows = tuple((v.name, v.kind, v.why, v.origin) for v in report.variants)
    return Table("Variants", ("variant", "kind", "what it is", "from"), rows)


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
