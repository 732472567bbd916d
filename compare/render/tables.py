"""The report as summary lines and titled tables with legends, shared by every text renderer."""
from __future__ import annotations

from compare.model.pair_numerics import grouped
from compare.model.problems import NOT_RUN, Lists, covered, describe, input_kinds, lists, produced, variant_of
from compare.render import ir_tables
from compare.render.table import Section, Summary, Table, section_legend  # noqa: F401 (re-exported)
from compare.model.results import CheckSection, Failure, IRSection, NumericsCase, NumericsSection, Report, Skip
from compare.model.states import Accuracy, Bits, GateOutcome, Level, LoadStatus, Status
from compare.model.vocabulary import STAGE_TITLES


IR_TITLE = "Compiled code (IR)"


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
    "output of the case, float32 outputs included; a miss on an output where the reference point misses too is not "
    "counted as a problem of the variant (the verdict lines and the headline): the accuracy verdict judges it",
    "NaN/Inf: non-finite values the kernel wrote; unwritten: elements still holding the NaN poison after the launch",
    "Worst case over all trials; inputs drawn fresh for every trial.",
)
REFERENCE_LEGEND = ("reference: the reference point; it judges the other variants and is judged by nothing "
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


_BITWISE = {Bits.IDENTICAL: "equal", Bits.WITHIN_SPREAD: "within spread", Bits.DIFFER: "DIFFER"}


def _label(name: str, added: str) -> str:
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
        label = _label(v.variant, added)
        is_reference = v.variant == case.reference
        status = "reference" if is_reference and v.produced else v.status.replace("_", " ")
        if v.status in (Status.NOT_RUN, Status.ERROR, Status.UNTRUSTED) or first not in out:
            rows.append((label, status, *(["-"] * (len(headers) - 2))))
        else:
            e = out[first]
            ulps = e.ulps_of_max
            cells = [sci(e.max_abs), sci(e.rel_l2), "-" if ulps != ulps else f"{ulps:.1f}", str(e.beyond_tol)]
            for n in rest:
                cells += [sci(out[n].max_abs), sci(out[n].rel_l2)] if n in out else ["-", "-"]
            rows.append((label, status, *cells, str(sum(x.nan + x.inf for x in v.outputs)),
                         str(sum(x.unwritten for x in v.outputs))))
        (yardstick if is_reference and v.produced else notes).extend(f"{v.variant}: {r}" for r in v.reasons)
    legend = NUMERICS_LEGEND + (section.backward_legend if case.direction == "backward" else section.forward_legend)
    if case.reference:
        legend += REFERENCE_LEGEND
    if any(v.status == Status.UNTRUSTED for v in case.variants):
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
        vrow = tuple((_label(v.a, added), _label(v.b, added),
                      "LESS ACCURATE" if v.accuracy == Accuracy.LESS else v.accuracy,
                      v.basis, "; ".join(v.detail) or "-") for v in case.verdicts)
        tables.append(Table(f"Accuracy verdicts: {where}", ("A", "B", "B against A", "basis", "where B lost, then gained"),
                            vrow, verdict_legend(factor)))
    return tables


def numerics_summary(section: NumericsSection, found: Lists) -> list[tuple[str, str]]:
    """The section's verdict lines: each variant's problems as the headline groups them (shared by every
    variant, introduced, fixed), the yardstick for scale, what did not run, and the bits against the baseline."""
    lines = []
    kinds, base, only = input_kinds(section), found.baseline, not found.others
    names = list(dict.fromkeys(v.variant for c in section.cases for v in c.variants))
    for name in names:
        results = [(c, v) for c in section.cases for v in c.variants if v.variant == name]
        label = _label(name, section.added_reference)
        not_run = [(c, v) for c, v in results if v.status == Status.NOT_RUN]
        untrusted = [(c, v) for c, v in results if v.status == Status.UNTRUSTED]
        failed, counted = _counted(found, name, results)
        ran = len(counted)
        if any(c.reference == name for c, _ in results):   # the yardstick: shown for scale, never judged
            outside = [(c, v) for c, v in results if v.status == Status.FAIL]
            crashed = [(c, v) for c, v in results if v.status == Status.ERROR]
            lines.append(("info", f"numerics: {label} judges the others and is not judged; for scale, it is outside "
                                  f"the dtype's tolerance in {len(outside)} of {ran} cases run"
                                  + (": " + grouped(((c, v.reasons[0]) for c, v in outside), 4) + TOLERANCE_RULE.format(
                                      ref=name) if outside else "")))
            if crashed:
                lines.append(("warn", f"numerics: {label} (the reference point) crashed in {len(crashed)} cases: "
                                      + grouped(((c, v.reasons[0] if v.reasons else "crashed") for c, v in crashed), 4)))
        elif name == base and ran:
            lines.append(_baseline_line(found, label, ran))
        elif name in found.others and ran:
            against = sum(produced(variant_of(c, base)) for c in counted)   # where the baseline gave numbers too
            lines += _against(found, name, label, kinds, against, ran)
        if untrusted:
            dts = sorted({c.dtype for c, _ in untrusted})
            lines.append(("warn", f"numerics: {label} in {', '.join(dts)} ({len(untrusted)} cases): "
                                  f"{untrusted[0][1].reasons[0].split(': ', 1)[-1]}"))
        if not_run:
            lines.append(("warn", f"numerics: {label} not run in {len(not_run)} cases: {not_run[0][1].reasons[0]}"))
        for kind in dict.fromkeys(v.failure for _, v in failed):
            these = [v for _, v in failed if v.failure == kind]
            lines.append(("warn", f"numerics: {label} {'not run' if kind in NOT_RUN else 'failed'} ({kind.value}) in "
                                  f"{len(these)} cases: {these[0].reasons[0] if these[0].reasons else '?'}"))
    if found.shared:
        title = "its own" if only else "shared by every variant (not introduced by this change)"
        lines.append(("fail" if only else "warn", f"numerics: {base}'s problems, {title}: "
                      + " | ".join(describe(found.shared, kinds))))
    for keepers, ps in found.kept.items():
        lines.append(("warn", f"numerics: {base}'s problems kept by {', '.join(keepers)} (fixed by "
                              f"{', '.join(found.fixers(ps))}): " + " | ".join(describe(ps, kinds))))
    lines.extend(_reference_callouts(section))
    lines.extend(_bitwise_lines(section, base))
    return lines


def _counted(found: Lists, name: str, results: list) -> tuple[list, list]:
    """(the (case, result) pairs of `name` that failed without running, the cases it ran in): a failure said
    once (the same in every case of a pass) is no case run, as the interpreter's limit is none: no number of it
    was judged."""
    once = found.once.get(name, ())
    failed = [(c, v) for c, v in results if v.status == Status.ERROR and (v.failure in NOT_RUN or covered(once, c))]
    skipped = {id(v) for _, v in failed}
    return failed, [c for c, v in results if v.status not in (Status.NOT_RUN, Status.UNTRUSTED) and id(v) not in skipped]


def _against(found: Lists, name: str, label: str, kinds, against: int, ran: int) -> list[tuple[str, str]]:
    """What `name` introduced and fixed against the baseline (`against` of the `ran` cases it ran: those where
    the baseline gave numbers too)."""
    base, introduced, fixed = found.baseline, found.introduced[name], found.fixed[name]
    lines = []
    if introduced:
        lines.append(("fail", f"numerics: {label} introduced (not in {base}): " + " | ".join(describe(introduced, kinds))))
    elif against:
        where = _all(against) if against == ran else f"the {against} of its {ran} cases run where {base} ran too"
        lines.append(("ok", f"numerics: {label} introduced no problem against {base} in {where}"))
    if fixed:
        lines.append(("ok", f"numerics: {label} fixed (in {base}, not in {label}): " + " | ".join(describe(fixed, kinds))))
    return lines


def _baseline_line(found: Lists, label: str, ran: int) -> tuple[str, str]:
    """How many cases the baseline has problems in, and where the lines below put them."""
    mine = found.shared.union(*found.kept.values(), *found.fixed.values())
    if not mine:
        return "ok", f"numerics: {label} (baseline): no problem in {_all(ran)}"
    where = f"numerics: {label} (baseline): problems in {len({p.key[:4] for p in mine})} of {ran} cases run: "
    if not found.others:
        return "fail", where + "its own (the only variant judged)"
    how = []
    if found.shared:
        how.append("some shared by every variant")
    if found.kept:
        how.append("some kept by only some variants")
    fixers = [n for n, ps in found.fixed.items() if ps]
    if fixers:
        how.append(f"fixed by {', '.join(fixers)}")
    return "info", where + "; ".join(how)


TOLERANCE_RULE = ("; a variant's tolerance miss on an output where {ref} misses too is not counted as its "
                  "problem (the tolerance does not hold there; the accuracy verdict against {ref} judges it)")


def _all(n: int) -> str:
    return "the 1 case run" if n == 1 else f"all {n} cases run"


def _bitwise_lines(section: NumericsSection, baseline: str) -> list[tuple[str, str]]:
    lines = []
    for other in dict.fromkeys(v.variant for c in section.cases for v in c.variants):
        if other in (baseline, section.added_reference):
            continue
        pairs = [p for c in section.cases for p in c.pairs if {p.a, p.b} == {baseline, other}]
        if not pairs:
            continue
        differing = [p for p in pairs if p.verdict == Bits.DIFFER]
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
    """Every variant as or more accurate than the reference point (torch), when so: where one is less
    accurate, that is a problem of it, listed with the others above."""
    lines = []
    for ref in sorted({c.reference for c in section.cases if c.reference}):
        judged = any(v.a == ref for c in section.cases for v in c.verdicts)
        losers = any(v.a == ref and c.reference == ref and v.accuracy == Accuracy.LESS
                     for c in section.cases for v in c.verdicts)
        if judged and not losers:
            lines.append(("ok", f"accuracy: every variant as or more accurate than {ref} in every case judged "
                                f"(factor {section.verdict_factor:g})"))
    return lines


# the headline's line of a skipped check's topic says why for each pair
_HEADLINE_TOPIC = {"timing": "timing", "ir": "compiled code"}


def _in_headline(skip: Skip, head) -> bool:
    """Whether every pair's headline already says `skip`'s check was skipped (so it is said once)."""
    topic = _HEADLINE_TOPIC.get(skip.check)
    return bool(head and head.pairs and topic) and all(
        any(line.topic == topic and line.level == Level.SKIP for line in pair.lines) for pair in head.pairs)


def build(report: Report, head=None) -> tuple[Summary, list[Section]]:
    """The notices for under the headline (variants not loaded, sections skipped, unless `head`, the
    report's headline, says so already) and the sections, each with its own verdict lines."""
    summary: list[tuple[str, str]] = []
    sections: list[Section] = []
    failed = [v for v in report.variants if v.status != LoadStatus.OK]
    for v in failed:
        error = " / ".join(v.error.splitlines())
        how = error if v.failure in (Failure.CRASH, Failure.TAMPER) else f"could not be loaded: {error}"
        summary.append(("fail", f"variant {v.name} {v.needs.text() if v.needs else how}"))
    summary.extend(("warn", f"variant {line}") for line in report.incidents)
    summary.extend(("info", library.line()) for library in report.library)
    if report.numerics is not None:
        n = report.numerics
        tables = [t for case in n.cases for t in _numerics_tables(case, n)]
        intro = (n.note, *n.plan)
        if n.added_reference:
            intro += (f"{n.added_reference} was not named; it runs as a reference point for the accuracy "
                      f"verdicts (labelled 'reference point').",)
        sections.append(Section("Numerics", intro, tuple(tables), tuple(numerics_summary(n, lists(report)))))
    if report.timing is not None:
        from compare.render.timing_tables import timing_legend, timing_summary, timing_table  # it uses Table
        legend = timing_legend(report.timing)
        intro = [f"GPU: {report.timing.gpu}; device-to-device copy {report.timing.copy_gbs:.0f} GB/s (read + write)"]
        intro.extend(f"{name}: compiled in {sec:.1f} s (reported, not timed)" for name, sec in report.timing.compile_seconds)
        sections.append(Section("Timing", tuple(intro), tuple(timing_table(c, legend) for c in report.timing.cases),
                                tuple(timing_summary(report.timing))))
    for ir in report.ir_sections:
        sections.append(ir_section(ir, tuple(ir_tables.ir_summary(ir))))
    sections.extend(check_section(s) for s in report.checks)
    summary.extend(("skip", f"skipped: {reason}") for reason in report.skipped
                   if not reason.interrupted and not _in_headline(reason, head))   # Report.interrupted says those
    return Summary(tuple(summary)), sections


def ir_section(section: IRSection, lines: tuple[tuple[str, str], ...] = ()) -> Section:
    """The compiled-code section: resources, then per stage the loop nest and the global memory ops,
    then the sizes of the normalized diffs next to the raw ones (the diff text is in `ir_tables.diff_blocks`)."""
    where = f"{section.mode}, target {section.target}"
    heading = IR_TITLE if section.kernel == "forward" else f"{IR_TITLE}: {section.kernel} kernel"
    intro = (f"{section.shape}, {section.dtype}; {where}; {section.note}",
             *([f"specialization: {section.specialization}"] if section.specialization.strip() else []))
    tables = [Table("Resources per thread", ("variant", "compiled", "registers", "spills", "stack", "shared",
                                             "launched regs / spills", "agree"),
                    ir_tables.resources_rows(section), ir_tables.RESOURCES_LEGEND,
                    tuple(f"{v.variant}: {v.error}" for v in section.variants if v.status != "ok"))]
    if section.kernels:
        tables.insert(0, Table("Kernels launched by the ops, paired by name", ("kernel", "A", "B", "compiled code",
                                                                               "stages that differ"),
                               ir_tables.kernel_rows(section), ir_tables.KERNELS_LEGEND))
    for stage in section.stages:
        title = STAGE_TITLES[stage]
        tables.append(Table(f"{title} loops", ("loop", "variant", "matches", "line", "carried", "pointers", "ops",
                                               "change", "instruction count changes"),
                            ir_tables.loop_rows(section, stage), ir_tables.LOOPS_LEGEND))
        tables.append(Table(f"{title} global loads and stores", ("variant", "kind", "op", "width", "loop", "count"),
                            ir_tables.memory_rows(section, stage), ir_tables.MEMORY_LEGEND))
    if section.pairs:
        tables.append(Table("Normalized diff against raw diff", ("A", "B", "stage", "changed lines", "diff length",
                                                                 "raw changed lines", "raw diff length", "diff / raw"),
                            ir_tables.diff_rows(section), ir_tables.DIFF_LEGEND))
    return Section(heading, intro, tuple(tables), lines)


_HOLDS = {True: "yes", False: "NO", None: "not run"}


def check_section(found: CheckSection) -> Section:
    """A check outside the built-in four: its verdict lines, then a row per variant and case saying whether the
    property holds."""
    lines = tuple((v.outcome.level, f"{found.check}: {v.variant} against {v.baseline}: {v.outcome.value}"
                   + (f" in {v.amount} ({v.where})" if v.amount else f" ({v.where})")) for v in found.verdicts)
    rows = tuple((r.variant, r.case, _HOLDS[r.holds], r.detail or "-") for r in found.rows)
    return Section(found.title, found.intro, (Table(found.title, ("variant", "case", found.check, "detail"), rows,
                                                    found.legend),), lines)


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


def gate_lines(report: Report, full: bool = True) -> list[tuple[str, str]]:
    """Each gate asked for and how it ended (compare/model/gates.py decided it), as (level, text); not `full`, a
    failed gate's reasons are only counted (the command's one summary line says the first and where the rest are)."""
    lines = []
    for g in report.gates:
        flag = g.name if g.threshold is None else f"{g.name} {g.threshold:g}"
        n = len(g.lines)
        said = "; ".join(g.lines) if full or not g.fails else f"{n} reason{'' if n == 1 else 's'}"
        if g.outcome == GateOutcome.NOT_JUDGED:
            how = ("could not be judged (accepted: --accept-unjudged)" if g.accepted
                   else "could not be judged, so it fails (--accept-unjudged would let it pass)")
            lines.append(("warn" if g.accepted else "fail", f"gate {flag}: {how}: {said}"))
        else:
            lines.append(("fail" if g.fails else "ok", f"gate {flag}: {g.outcome.upper() if g.fails else g.outcome}"
                                                      + (f": {said}" if said else "")))
    return lines
