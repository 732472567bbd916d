"""The report as summary lines and titled tables with legends, shared by every text renderer."""
from __future__ import annotations

import dataclasses

from compare.results import NumericsCase, NumericsSection, Report


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
    """The verdict lines at the top: (level, text), level one of ok, warn, fail, info."""

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
    for reason in report.skipped:
        summary.append(("warn", f"skipped: {reason}"))
    return Summary(tuple(summary)), sections


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
