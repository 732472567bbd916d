"""A new run against a saved one (compare/model/runs.py), as a Section every renderer draws: the two runs,
the caveat of their setting, a line per verdict count and per change, a table per check; and as JSON."""
from __future__ import annotations

import json

from compare.model.jsonform import encode
from compare.model.results import MARKER_KEY, Environment
from compare.model.runs import JSON_MARKER, NumericsChange, RunsComparison, Setting
from compare.model.states import TimingVerdict
from compare.render.table import Section, Table

SHOWN = 8   # changed rows named one a line; the rest are counted (the tables hold every row)
_TIMING_LEVEL = {TimingVerdict.SLOWER: "warn", TimingVerdict.FASTER: "ok", TimingVerdict.NO_DIFFERENCE: "ok",
                 TimingVerdict.NA: "skip"}
_NUMERICS_LEVEL = {NumericsChange.LESS: "fail", NumericsChange.LOST: "fail", NumericsChange.NEITHER: "skip"}
TITLE = "Against the saved run"


def _side(name: str, e: Environment) -> str:
    where = e.gpu_name or e.device
    commit = f"kernel-ab {e.git_commit[:12]}{' (dirty)' if e.git_dirty else ''}" if e.git_commit else "commit unknown"
    return f"{name}: {where}, {commit}, {e.time_utc or 'time unknown'}"


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}%"


def _counts(words: list[str], total: int, what: str) -> str:
    tally = {w: words.count(w) for w in dict.fromkeys(words)}
    return f"{what}: " + ", ".join(f"{w} in {n}" for w, n in tally.items()) + f" of {total}"


def _timing_lines(c: RunsComparison) -> list[tuple[str, str]]:
    rows = [(case, v) for case in c.timing for v in case.variants]
    if not rows:
        return []
    lines = [("info", _counts([str(v.verdict) for _, v in rows], len(rows), "timing (case and variant)"))]
    moved = [(case, v) for case, v in rows if v.verdict in (TimingVerdict.SLOWER, TimingVerdict.FASTER)]
    for case, v in moved[:SHOWN]:
        lines.append((_TIMING_LEVEL[v.verdict], f"{v.variant} {case.shape} {case.dtype} {case.mode}: {v.verdict} "
                      f"across runs, {_pct(v.ratio)} ({_pct(v.ci_low)} to {_pct(v.ci_high)}; {v.basis} "
                      f"±{100 * v.margin:.1f}%)"))
    if len(moved) > SHOWN:
        lines.append(("info", f"... {len(moved) - SHOWN} more faster or slower: the timing table"))
    return lines


def _numerics_lines(c: RunsComparison) -> list[tuple[str, str]]:
    rows = [(case, v) for case in c.numerics for v in case.variants]
    if not rows:
        return []
    lines = [("info", _counts([str(v.change) for _, v in rows], len(rows), "numerics (case and variant)"))]
    if not all(case.same_inputs for case in c.numerics):
        lines.append(("warn", "some cases drew other seeds in the two runs: their inputs differ, so only their "
                              "accuracy is compared, never their errors as equal"))
    changed = [(case, v) for case, v in rows if v.change not in (NumericsChange.SAME_ERRORS, NumericsChange.NEITHER)]
    for case, v in changed[:SHOWN]:
        where = f" ({', '.join(v.detail or v.differing)})" if v.detail or v.differing else ""
        lines.append((_NUMERICS_LEVEL.get(v.change, "ok"), f"{v.variant} {case.shape} {case.dtype} {case.input_kind} "
                      f"{case.direction}: {v.change} ({v.old_status} -> {v.new_status}){where}"))
    if len(changed) > SHOWN:
        lines.append(("info", f"... {len(changed) - SHOWN} more changed: the numerics table"))
    return lines


TIMING_LEGEND = ("change: the new run's median time against the saved run's; faster/slower only when p < 0.05 and "
                 "the whole interval lies outside the margin: the larger of the noise band and the two runs' A/A "
                 "controls (compare.checks.stats.decide)",)
NUMERICS_LEGEND = ("report.json keeps each output's errors against the float64 reference, not the outputs: equal "
                   "errors on the same inputs are consistent with identical bits, not proof of them",)


def _timing_row(v) -> tuple[str, ...]:
    if v.verdict == TimingVerdict.NA:
        return v.variant, "-", "-", "-", "-", "-", f"{v.verdict}: {v.reason}", "-"
    return (v.variant, f"{v.old_median_ms:.4g}", f"{v.new_median_ms:.4g}", _pct(v.ratio),
            f"{_pct(v.ci_low)} to {_pct(v.ci_high)}", f"{v.p_value:.2g}", str(v.verdict),
            f"±{100 * v.margin:.1f}% {v.basis}")


def _status(v) -> str:
    return str(v.new_status) if v.old_status == v.new_status else f"{v.old_status} -> {v.new_status}"


def _tables(c: RunsComparison) -> tuple[Table, ...]:
    """A table per case (its rows fit a comment's width): timing's, then numerics'."""
    timing = [Table(f"timing across runs: {case.shape} {case.dtype} {case.mode}",
                    ("variant", "saved ms", "new ms", "change", "95% interval", "p", "verdict", "margin"),
                    tuple(_timing_row(v) for v in case.variants), legend=TIMING_LEGEND,
                    aside=(case.note,) if case.note else ()) for case in c.timing if case.variants]
    numerics = [Table(f"numerics across runs: {case.shape} {case.dtype} {case.input_kind} {case.direction}",
                      ("variant", "status", "change", "outputs whose errors differ"),
                      tuple((v.variant, _status(v), str(v.change), ", ".join(v.differing) or "-") for v in case.variants),
                      legend=NUMERICS_LEGEND, aside=() if case.same_inputs else ("other seeds: other inputs",))
                for case in c.numerics if case.variants]
    return (*timing, *numerics)


def section(c: RunsComparison) -> Section:
    """The comparison as a Section: the two runs and the caveat first, then the verdict lines and the tables."""
    # the caveat warns where a verdict leans on it (timing across runs, or two setups); else it informs
    leans = c.setting is Setting.TWO_SETUPS or any(case.variants for case in c.timing)
    lines = [("info", _side(f"saved {c.old}", c.old_environment)), ("info", _side(f"new {c.new}", c.new_environment)),
             ("warn" if leans else "info", f"{c.setting}: {c.caveat}"), *_timing_lines(c), *_numerics_lines(c)]
    if c.old_environment == c.new_environment:
        lines.insert(2, ("info", "both reports are of one run (the same command at the same time): the verdicts "
                                 "say only that it matches itself"))
    lines += [("skip", line) for line in c.only_in_one[:SHOWN]]
    if len(c.only_in_one) > SHOWN:
        lines.append(("skip", f"... {len(c.only_in_one) - SHOWN} more cases or variants in one run only"))
    return Section(f"{TITLE} ({c.family})", (), _tables(c), tuple(lines))


def as_json(c: RunsComparison) -> str:
    return json.dumps({MARKER_KEY: JSON_MARKER, "setting": str(c.setting), "caveat": c.caveat, **encode(c)},
                      indent=2, allow_nan=False) + "\n"
