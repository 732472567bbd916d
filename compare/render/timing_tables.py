"""The timing tables, their legend and the timing lines of the summary (one case per table, the A/A
control as the table's last row)."""
from __future__ import annotations

import collections

from compare.model.ratios import ratio_interval, ratio_span, ratio_text
from compare.render.table import Table
from compare.model.results import TimingCase, TimingComparison, TimingSection
from compare.model.states import SAME_CODE_BASES, TimingBasis

NO_DIFFERENCE = "no difference beyond noise"


def timing_legend(section: TimingSection) -> tuple[str, ...]:
    head = (
        "median, p20-p80: per-call GPU time over all rounds (ms); GB/s: the family's fewest bytes for the pass "
        f"over the median; % copy: that against the measured {section.copy_gbs:.0f} GB/s device-to-device copy",
        "peak MiB: memory one call allocates beyond what was allocated before it",
        f"ratio: median(variant) / median(baseline), > 1 is slower; {section.confidence:.0%} interval from a paired "
        "bootstrap over rounds; p: sign-flip permutation test on per-round log ratios",
    )
    if not any(case.control is not None for case in section.cases):   # a report made before the A/A control
        return head + (f"verdict: faster/slower only when p < 0.05 and the whole interval lies outside 1 ± "
                       f"{section.noise:g}; otherwise no difference beyond noise", f"method: {section.method}")
    return head + (
        "A/A control: the baseline timed again as a hidden entry of the same rounds, against itself",
        f"verdict: faster/slower only when p < 0.05 and the whole interval lies outside 1 ± the larger of the "
        f"noise band ({section.noise:g}) and the A/A control's farthest reach from 1; otherwise no difference beyond "
        "noise; identical timed code: both run the same compiled code in the timed pass, so any difference is "
        "measurement noise",
        f"method: {section.method}",
    )


def _verdict_cell(c: TimingComparison) -> str:
    if c.basis in SAME_CODE_BASES:
        return f"{c.verdict} ({c.basis})"
    if c.basis == TimingBasis.AA_CONTROL:
        return f"{c.verdict} (A/A margin ±{c.margin * 100:.2f}%)"
    return c.verdict


def timing_table(case: TimingCase, legend: tuple[str, ...]) -> Table:
    headers = ("variant", "median ms", "p20-p80 ms", "GB/s", "% copy", "peak MiB", "vs baseline",
               "95% interval", "p", "verdict")
    comps = {c.variant: c for c in case.comparisons}
    rows, notes = [], []
    for v in case.variants:
        if v.status != "ok":
            rows.append((v.variant, v.status.replace("_", " "), *(["-"] * 8)))
            notes.append(f"{v.variant}: {v.reason}")
            continue
        c = comps.get(v.variant)
        if c is None:
            cmp = ("baseline", "", "", "")
        elif c.verdict == "n/a":
            cmp = ("-", "-", "-", f"n/a ({c.reason})")
        else:
            cmp = (ratio_text(c.ratio, 2), ratio_interval(c.ci_low, c.ci_high), f"{c.p_value:.3g}", _verdict_cell(c))
        rows.append((v.variant, f"{v.median_ms:.4f}", f"{v.p20_ms:.4f}-{v.p80_ms:.4f}", f"{v.gbs:.0f}",
                     f"{v.fraction_of_copy:.0%}", f"{v.peak_memory_bytes / 2**20:.1f}", *cmp))
    c = case.control
    if c is not None and c.verdict != "n/a":
        rows.append((f"A/A: {c.baseline} again", "", "", "", "", "", ratio_text(c.ratio, 2),
                     ratio_interval(c.ci_low, c.ci_high), f"{c.p_value:.3g}", "control"))
    graph = ", CUDA graph replay" if case.graph else ""
    rounds = max((v.rounds for v in case.variants), default=0)
    dtype = f", {case.dtype}" if case.dtype else ""
    places = f", {case.placements} buffer placements" if case.placements > 1 else ""
    title = f"Timing: {case.shape}{dtype}, {case.mode}{graph}, {rounds} rounds{places} in {case.seconds:.1f} s"
    if case.launch_bound:
        notes.append(f"launch-bound (host time per eager call at least half the GPU time): {', '.join(case.launch_bound)}")
    if case.note:
        notes.append(case.note)
    if case.ran_on:   # a spread run (--jobs, --scheduler): the GPU this case was timed on
        notes.append(f"timed on {case.ran_on}")
    return Table(title, headers, tuple(rows), legend, tuple(notes))


def _control_summary(section: TimingSection) -> list[tuple[str, str]]:
    """Per mode and dtype: how far the A/A control reached, so a reader sees the floor under every verdict."""
    lines = []
    groups = dict.fromkeys((case.mode, case.dtype) for case in section.cases if case.control is not None)
    several = len({d for _, d in groups}) > 1
    for mode, dtype in groups:
        ctrl = [case.control for case in section.cases if (case.mode, case.dtype) == (mode, dtype)
                and case.control is not None and case.control.verdict != "n/a"]
        if not ctrl:
            continue
        worst = max(ctrl, key=lambda c: c.reach)
        flagged = sum(c.verdict != NO_DIFFERENCE for c in ctrl)
        label = f"{mode} {dtype}" if several else mode
        level = "warn" if flagged else "info"
        lines.append((level, f"timing {label}: A/A control ({worst.baseline} against itself) reaches at most "
                             f"±{worst.reach * 100:.2f}% over {len(ctrl)} shapes"
                             + (f"; {flagged} beyond the noise band" if flagged else "")))
    return lines


def timing_summary(section: TimingSection) -> list[tuple[str, str]]:
    lines = []
    keys = list(dict.fromkeys((c.baseline, c.variant, case.mode, case.dtype)
                              for case in section.cases for c in case.comparisons))
    several = len({k[3] for k in keys}) > 1
    for baseline, variant, mode, dtype in keys:
        said = f"timing {mode}{f' {dtype}' if several else ''}: {variant} vs {baseline}"
        comps = [c for case in section.cases for c in case.comparisons if (c.baseline, c.variant) == (baseline, variant)
                 and (case.mode, case.dtype) == (mode, dtype) and c.verdict != "n/a"]
        if not comps:
            statuses = {v.status for case in section.cases if (case.mode, case.dtype) == (mode, dtype)
                        for v in case.variants if v.variant in (baseline, variant) and v.status != "ok"}
            fouled = sorted({f.foul.value for case in section.cases if (case.mode, case.dtype) == (mode, dtype)
                             for f in case.fouls if f.variant in (baseline, variant)})
            if fouled:   # compare/model/fouls.py: no verdict for a side that fouled
                lines.append(("fail", f"{said}: no verdict (foul: {'; '.join(fouled)})"))
            elif statuses == {"not_run"}:   # the variant's run said these shapes are not its own
                lines.append(("warn", f"{said}: not compared (not run: not for these shapes)"))
            else:
                lines.append(("fail", f"{said}: not compared (a variant failed)"))
            continue
        counts = collections.Counter(c.verdict for c in comps)
        parts = ", ".join(f"{v} in {n} of {len(comps)} shapes" for v, n in counts.items())
        lo, hi = min(c.ratio for c in comps), max(c.ratio for c in comps)
        level = "warn" if "slower" in counts else "info"
        same = f" ({comps[0].basis}: measurement noise)" if all(c.basis in SAME_CODE_BASES for c in comps) else ""
        lines.append((level, f"{said}: {parts}{same} (ratio {ratio_span(lo, hi, 2)})"))
    lines.extend(_control_summary(section))
    for case in section.cases:
        for v in case.variants:
            if v.status == "not_run":
                lines.append(("warn", f"timing {case.mode} {case.shape}: {v.variant} not run: {v.reason}"))
            elif v.status != "ok":
                lines.append(("fail", f"timing {case.mode} {case.shape}: {v.variant} failed: {v.reason}"))
    return lines
