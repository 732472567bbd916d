"""What one invocation of benchmarks/hostile_sweep.py did, judged against what its case expects.

`classify(case, outcome)` reads only the facts the runner gathered (`outcome`, a dict: rc, timed_out,
seconds, stdout, stderr, orphans, leftovers, changed, written, report, report_error, setup_error), so
it can be tested without running anything. It returns the problems as [class, detail] pairs; none
means ok. `primary` picks the class a case is counted under.
"""
from __future__ import annotations

from benchmarks.hostile_cases import SIGNALS, Case, signal_number

CLASSES = ("wrong_verdict", "no_report", "hang", "file_destroyed", "traceback", "orphan", "leftover_file",
           "wrong_exit", "other")
# the order a case with several problems is counted under: the first of these it has
PRIORITY = ("hang", "file_destroyed", "orphan", "no_report", "wrong_verdict", "traceback", "leftover_file",
            "wrong_exit", "other")
FAST_SECONDS = 20.0   # a value check comes before any work; a torch import is ~3-5 s on a busy 2-core box
TRACEBACK_MARKS = ("Traceback (most recent call last)", "Fatal Python error")


def _lines(text: str) -> list[str]:
    return [line for line in (text or "").splitlines() if line.strip()]


def _common(case: Case, o: dict) -> list[list[str]]:
    problems = []
    if o.get("timed_out"):
        after = f"{case.timeout:g} s after the {case.signal[0]}" if case.signal else f"after {case.timeout:g} s"
        problems.append(["hang", f"still running {after}; killed"])
    if any(mark in (o.get("stderr") or "") for mark in TRACEBACK_MARKS):
        problems.append(["traceback", "a traceback on stderr"])
    for path, what in sorted((o.get("changed") or {}).items()):
        problems.append(["file_destroyed", f"{path}: {what}"])
    for orphan in o.get("orphans") or []:
        problems.append(["orphan", f"left running: {orphan}"])
    for path in [] if o.get("timed_out") else o.get("leftovers") or []:   # a killed run cannot clean up
        problems.append(["leftover_file", f"left behind: {path}"])
    return problems


def _one_error_line(o: dict) -> list[list[str]]:
    problems = []
    lines = _lines(o.get("stderr"))
    if len(lines) != 1 or not lines[0].startswith("kernel-ab: error:"):
        problems.append(["other", f"stderr is {len(lines)} lines, not one `kernel-ab: error:` line"])
    if (o.get("stdout") or "").strip():
        problems.append(["other", "wrote to stdout"])
    if not o.get("timed_out") and o.get("seconds", 0.0) > FAST_SECONDS:
        problems.append(["other", f"took {o['seconds']:.1f} s to refuse (more than {FAST_SECONDS:g} s)"])
    return problems


def _written(case: Case, o: dict) -> list[list[str]]:
    problems = []
    for path in case.written:
        state = (o.get("written") or {}).get(path, {})
        if not state.get("exists"):
            problems.append(["file_destroyed", f"{path}: gone, not replaced by a report"])
        elif state.get("unchanged"):
            problems.append(["other", f"{path}: not written"])
        elif not state.get("valid"):
            problems.append(["file_destroyed", f"{path}: not a complete kernel-ab report ({state.get('why', '')})"])
        elif not state.get("new_inode"):   # os.replace of a finished temporary file gives the path a new inode
            problems.append(["other", f"{path}: rewritten in place, not atomically (same inode)"])
    return problems


def _report(case: Case, o: dict) -> list[list[str]]:
    report = o.get("report")
    if not isinstance(report, dict):
        return [["no_report", f"no report.json: {o.get('report_error') or 'missing'}"]]
    problems = []
    variants = {v.get("name"): v for v in report.get("variants") or [] if isinstance(v, dict)}
    statuses: dict[str, dict[str, list[str]]] = {}
    for c in (report.get("numerics") or {}).get("cases") or []:
        for v in c.get("variants") or []:
            statuses.setdefault(v.get("variant"), {}).setdefault(c.get("direction", "?"), []).append(v.get("status"))
    good = statuses.get(case.good, {})
    if variants.get(case.good, {}).get("status", "missing") != "ok":
        problems.append(["wrong_verdict", f"the correct variant {case.good} is "
                         f"{variants.get(case.good, {}).get('status', 'missing')} in the report"])
    for direction in ("forward", "backward"):
        if not good.get(direction):
            problems.append(["no_report", f"no {direction} numerics for the correct variant {case.good}"])
    # the correct variant and the reference point (torch) run on the same inputs as the hostile one
    for name in sorted(n for n in statuses if n != case.hostile):
        for direction, got in sorted(statuses[name].items()):
            if any(s != "pass" for s in got):
                problems.append(["wrong_verdict", f"{name}'s {direction} status is {', '.join(sorted(set(got)))}, "
                                 "not pass"])
    hostile = variants.get(case.hostile)
    if hostile is None:
        problems.append(["wrong_verdict", f"the hostile variant {case.hostile} is not named in the report"])
    else:
        failed = hostile.get("status") != "ok"
        if failed and not str(hostile.get("error") or "").strip():
            problems.append(["other", f"{case.hostile} is {hostile.get('status')} without saying what happened"])
        # a variant that writes into its inputs is told apart by the writes the report records for it
        wrote = any(v.get("variant") == case.hostile and v.get("writes")
                    for c in (report.get("numerics") or {}).get("cases") or [] for v in c.get("variants") or [])
        flagged = failed or wrote or any(s != "pass" for ss in statuses.get(case.hostile, {}).values() for s in ss)
        if case.must_flag and not flagged:
            problems.append(["wrong_verdict", f"the hostile variant {case.hostile} is reported as passing"])
    return problems


def _signal(case: Case, o: dict) -> list[list[str]]:
    name = case.signal[0]
    problems = []
    # 128+N by exit, or death by the signal itself after the one line (the Unix way to pass it on)
    if not o.get("timed_out") and o.get("rc") not in (SIGNALS[name], -signal_number(name)):
        problems.append(["wrong_exit", f"exit code {o.get('rc')} after {name}, expected {SIGNALS[name]}"])
    lines = _lines(o.get("stderr"))
    if len(lines) != 1 or not lines[0].startswith("kernel-ab:"):
        problems.append(["other", f"stderr is {len(lines)} lines after {name}, not one `kernel-ab:` line"])
    if o.get("report_error") and o.get("report_error") != "missing":
        problems.append(["other", f"a partial report.json: {o['report_error']}"])
    return problems


def classify(case: Case, o: dict) -> list[list[str]]:
    """The problems of one invocation ([class, detail] pairs); [] when it met its expectation."""
    if o.get("setup_error"):
        return [["other", f"setup failed: {o['setup_error']}"]]
    problems = _common(case, o)
    if case.expect in ("usage_error", "refused"):
        if not o.get("timed_out") and o.get("rc") != 2:
            problems.append(["wrong_exit", f"exit code {o.get('rc')}, expected 2"])
        problems += _one_error_line(o)
    elif case.expect == "written":
        if not o.get("timed_out") and o.get("rc") != case.expect_rc:
            problems.append(["wrong_exit", f"exit code {o.get('rc')}, expected {case.expect_rc}"])
        problems += _written(case, o)
    elif case.expect == "report":
        if not o.get("timed_out") and o.get("rc") != case.expect_rc:
            problems.append(["wrong_exit", f"exit code {o.get('rc')}, expected {case.expect_rc}"])
        if not o.get("timed_out"):
            problems += _report(case, o)
    elif case.expect == "signal":
        problems += _signal(case, o)
    else:
        problems.append(["other", f"unknown expectation {case.expect!r}"])
    return problems


def primary(problems: list[list[str]]) -> str:
    """The class a case counts under: ok, or its first problem class in PRIORITY order."""
    classes = {p[0] for p in problems}
    return next((c for c in PRIORITY if c in classes), "ok")
