"""Plots of a timed report (matplotlib, an optional extra): per mode, time per variant across the
preset's x axis, each variant's ratio to the baseline with its interval, and the roofline panel: each
variant's share of the measured copy bandwidth (the family's fewest bytes over the median time), with
the 2/3 cap marked on the shapes whose family says the pass must read x twice ("reads_x_twice")."""
from __future__ import annotations

from compare.model.results import Report
from compare.model.states import TimingStatus

FOCUS = 0.5   # the ratio panel leaves out variants more than 50% away from the baseline, so small gaps stay visible
REREAD_CAP = 2 / 3   # x read twice and y written once: at most 2 of every 3 bytes moved are the fewest bytes
MAX_TICKS = 12   # shapes on an axis up to which each one's value is a tick of its own


def roofline(report: Report, cases) -> tuple[dict[str, list[tuple[float, float]]], list[float]]:
    """For the roofline panel: per variant, (x, % of copy bandwidth) of every shape it was timed on, and
    the x values of the shapes where the 2/3 cap applies (their shape parameters say reads_x_twice)."""
    x_of = dict(zip(report.shapes, report.x_values or range(len(report.shapes))))
    series: dict[str, list[tuple[float, float]]] = {}
    for c in cases:
        for v in c.variants:
            if v.status == TimingStatus.OK and v.fraction_of_copy > 0:
                series.setdefault(v.variant, []).append((x_of[c.shape], 100 * v.fraction_of_copy))
    capped = [x_of[label] for label, twice in zip(report.shapes, report.reads_x_twice) if twice]
    return series, capped


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def relative_panel(cases, names: list[str]) -> tuple[list[str], str]:
    """The variants the time-vs-baseline panel draws, and its title: those within ±FOCUS of the baseline
    on every shape (one far off would flatten the others to a line), or every compared variant when none
    is (an empty panel would say nothing)."""
    compared = [n for n in names if any(k.variant == n and k.verdict != "n/a" for c in cases for k in c.comparisons)]
    far = [n for n in compared if any(k.variant == n and k.verdict != "n/a" and abs(k.ratio - 1) > FOCUS
                                      for c in cases for k in c.comparisons)]
    if far and len(far) == len(compared):
        return compared, f"every variant beyond ±{FOCUS:.0%} of the baseline somewhere: all drawn"
    return [n for n in compared if n not in far], \
        (f"beyond ±{FOCUS:.0%} somewhere, so left out here: {', '.join(far)}" if far else "")


SOFTWARE = "kernel-ab"   # every plot's PNG "Software" text: compare/command_line/output_files.py tells its own plots by it


def pngs(report: Report) -> list[tuple[str, bytes]]:
    """(file name, PNG bytes) of one plot per timed mode (and dtype, when several were timed). Needs
    matplotlib (check `available()`)."""
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if report.timing is None:
        return []
    made = []
    keys = list(dict.fromkeys((c.mode, c.dtype) for c in report.timing.cases))
    for mode, dtype in keys:
        fig = figure(report, mode, dtype)
        data = io.BytesIO()
        fig.savefig(data, format="png", dpi=110, metadata={"Software": SOFTWARE})
        plt.close(fig)
        made.append((f"timing_{mode}_{dtype}.png" if len({d for _, d in keys}) > 1 else f"timing_{mode}.png",
                     data.getvalue()))
    return made


def figure(report: Report, mode: str, dtype: str):
    """The three panels of one timed mode and dtype: median times, time against the baseline, share of
    copy bandwidth. The variants are named once, in a legend under the panels (a legend inside a panel
    with several variants covered their points); a panel's own legend holds only its bands and lines."""
    import matplotlib.pyplot as plt
    x_of = dict(zip(report.shapes, report.x_values or range(len(report.shapes))))
    cases = [c for c in report.timing.cases if (c.mode, c.dtype) == (mode, dtype)]
    fig, (left, right, roof) = plt.subplots(1, 3, figsize=(19, 5.4))
    names = list(dict.fromkeys(v.variant for c in cases for v in c.variants))
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}   # one colour per variant in every panel
    shown, title = relative_panel(cases, names)
    for name in names:
        pts = [(x_of[c.shape], v.median_ms, v.p20_ms, v.p80_ms) for c in cases for v in c.variants
               if v.variant == name and v.status == "ok"]
        if pts:
            xs, med, lo, hi = zip(*pts)
            left.errorbar(xs, med, yerr=[[m - l for m, l in zip(med, lo)], [h - m for m, h in zip(med, hi)]],
                          marker="o", capsize=3, label=name, color=colors[name])
        comps = [(x_of[c.shape], k.ratio, k.ci_low, k.ci_high) for c in cases for k in c.comparisons
                 if k.variant == name and k.verdict != "n/a"]
        if comps and name in shown:
            xs, r, lo, hi = zip(*comps)
            right.errorbar(xs, [(v - 1) * 100 for v in r],
                           yerr=[[(a - b) * 100 for a, b in zip(r, lo)], [(b - a) * 100 for a, b in zip(r, hi)]],
                           marker="o", capsize=3, color=colors[name])
    band = report.timing.noise * 100
    right.axhspan(-band, band, color="grey", alpha=0.2, label=f"noise band ±{band:g}%")
    right.axhline(0, color="black", linewidth=0.8)
    series, capped = roofline(report, cases)
    for name, pts in series.items():
        roof.plot(*zip(*pts), marker="o", color=colors.get(name))
    roof.axhline(100, color="black", linewidth=0.8)
    if capped:
        roof.scatter(capped, [100 * REREAD_CAP] * len(capped), marker="_", s=900, color="red", zorder=3,
                     label="2/3 cap for a kernel that reads x twice (group too large for one program)")
    xs_drawn = sorted({x_of[c.shape] for c in cases})
    for ax in (left, right, roof):
        ax.set_xlabel(report.x_name or "shape")
        if len(set(x_of.values())) > 1 and min(x_of.values()) > 0:
            ax.set_xscale("log", base=2)
        if len(xs_drawn) <= MAX_TICKS:   # each shape's own value (a log axis labels powers of two only)
            ax.set_xticks(xs_drawn, [f"{x:,.0f}" if float(x).is_integer() else f"{x:g}" for x in xs_drawn])
            ax.minorticks_off()
        ax.grid(alpha=0.3)
    for ax in (right, roof):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    left.set_ylabel("median ms (bars: p20-p80)")
    left.set_yscale("log")
    right.set_ylabel(f"time vs {report.baseline}, % (bars: 95% interval)")
    roof.set_ylabel(f"% of copy bandwidth ({report.timing.copy_gbs:.0f} GB/s), fewest bytes")
    top = max((pct for pts in series.values() for _, pct in pts), default=0.0)
    roof.set_ylim(0, max(110.0, top * 1.05))   # a backward (or the copy's own variation) can pass 100%
    if title:
        right.set_title(title, fontsize=9)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8) or 1, fontsize=9, frameon=False)
    fig.suptitle(f"{report.family} {mode}, {dtype or report.dtype}, {report.timing.gpu}")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
