"""A replayed op (compare/model/replay.py) in the review's words: one line for the summary, a table of its
calls for the comment. Reads the records' verdicts; decides nothing."""
from __future__ import annotations

import math

from compare.model.line import plural
from compare.model.replay import Agreement, ReplayedCall, ReplayedOp, ReplayVerdict, TensorDiff

_LEVEL = {ReplayVerdict.IDENTICAL: "ok", ReplayVerdict.SPREAD: "ok", ReplayVerdict.WITHIN: "info", ReplayVerdict.BEYOND: "warn",
          ReplayVerdict.HEAD_FAILS: "fail", ReplayVerdict.BASE_FAILS: "info", ReplayVerdict.BOTH_FAIL: "warn",
          ReplayVerdict.NOT_IMPORTED: "warn", ReplayVerdict.NO_CALLS: "warn"}
NO_REFERENCE = "nothing here says which side is right"
NOT_RUN = "timing and compiled code were not run on its recorded calls"


def tensor_text(t: TensorDiff) -> str:
    """How one tensor of BASE and HEAD differ, in a phrase."""
    if t.agreement == Agreement.IDENTICAL:
        return f"{t.name}: identical bits"
    if t.agreement == Agreement.UNLIKE:
        return f"{t.name}: not comparable ({t.why})"
    where = f"[{', '.join(map(str, t.where))}]" if t.where else ""
    nan = f", {t.nan_mismatch} NaN/inf at one side only" if t.nan_mismatch else ""
    elsewhere = f", up to {t.max_ulp:.0f} ULP elsewhere" if t.max_ulp > max(2 * t.ulp_where, t.ulp_where + 1) else ""
    if t.spread >= 0:
        elsewhere += f"; BASE run twice differs by up to {t.spread:.2e}"
    return (f"{t.name}{where}: {t.base_value:.9g} at BASE, {t.head_value:.9g} at HEAD (the largest difference, "
            f"{t.max_abs:.2e}, {t.ulp_where:.0f} ULP{elsewhere}); {t.differing} of {math.prod(t.shape)} elements "
            f"differ, {t.beyond} beyond {t.dtype} tolerance{nan}")


def _failure(op: ReplayedOp, side: str) -> str:
    """How `side` fails: the first failure, and on which calls where not on every one."""
    failing = [c for c in op.calls if any(f.side == side for f in c.failures)]
    if not failing:
        return ""
    f = next(f for f in failing[0].failures if f.side == side)
    which = "" if len(failing) == len(op.calls) else \
        f" on call{'s' if len(failing) > 1 else ''} {', '.join(str(c.index + 1) for c in failing)}"
    does = "ends the replaying process" if f.ended_process else "raises"
    return f"its {f.stage} {does} at {side}{which}: {f.error}"


def _failures(op: ReplayedOp, first: str, other: str) -> str:
    """`first`'s failure, then `other`'s where it has one, else that `other` runs what `first` does not."""
    more = _failure(op, other)
    return _failure(op, first) + (f"; {more}" if more else f" ({other} runs it)")


def summary(op: ReplayedOp, hint: str = "") -> tuple[str, str]:
    """(level, line) of one replayed op for the review's summary; `hint`: how to compare it whole, where the
    review's time budget stopped it."""
    head = f"{op.label}: replayed (no family fits it)"
    unreplayed = f"{op.label}: changed, not compared: no family fits it, and"   # "replayed" would say it was
    v = op.verdict
    if v == ReplayVerdict.NO_CALLS and op.stopped:
        return _LEVEL[v], f"{unreplayed} the review's time budget ran out before a call of it was replayed; {hint}"
    if v == ReplayVerdict.NOT_IMPORTED:
        return _LEVEL[v], f"{unreplayed} no call of it could be recorded: " + \
            "; ".join([f.text() for f in op.not_imported] + list(op.notes))
    if v == ReplayVerdict.NO_CALLS:
        return _LEVEL[v], f"{unreplayed} no call of it was replayed: {'; '.join(op.notes) or 'no call recorded'}"
    said = {ReplayVerdict.IDENTICAL: "identical bits in every output and gradient",
            ReplayVerdict.HEAD_FAILS: lambda: _failures(op, "HEAD", "BASE"),
            ReplayVerdict.BASE_FAILS: lambda: _failures(op, "BASE", "HEAD"),
            ReplayVerdict.BOTH_FAIL: lambda: _failures(op, "BASE", "HEAD"),
            ReplayVerdict.SPREAD: lambda: f"{v}: {tensor_text(op.worst())}",
            ReplayVerdict.WITHIN: lambda: f"{v}: {tensor_text(op.worst())}; {NO_REFERENCE}",
            ReplayVerdict.BEYOND: lambda: f"{v}: {tensor_text(op.worst())}; {NO_REFERENCE}"}[v]
    stopped = f" (the review's time budget stopped it: the calls it did not reach are not here; {hint})" \
        if op.stopped else ""
    calls = f"{plural(len(op.calls), 'call')} recorded from {', '.join(op.tests)}"
    return _LEVEL[v], f"{head}, {calls}{stopped}: {said() if callable(said) else said}"


def _cause(op: ReplayedOp) -> tuple:
    """What kept `op` from being recorded: the same for every op one failed import kept out."""
    return tuple((f.side, f.test, f.raised_in or f.module, f.error) for f in op.not_imported), op.notes


def not_replayed(ops: list[ReplayedOp], hint) -> list[tuple[str, str]]:
    """(level, line) of the ops no call of which was replayed: a line an op, but one line for the ops that the
    same failed import kept from being recorded (a library's package that raises: every op under it)."""
    groups: dict = {}
    for op in ops:
        shared = op.verdict == ReplayVerdict.NOT_IMPORTED and op.not_imported and not op.stopped
        groups.setdefault(_cause(op) if shared else id(op), []).append(op)
    return [summary(g[0], hint(g[0])) if len(g) == 1 else _together(g) for g in groups.values()]


def _together(ops: list[ReplayedOp]) -> tuple[str, str]:
    said = []
    for i, f in enumerate(ops[0].not_imported):
        modules = list(dict.fromkeys(op.not_imported[i].module for op in ops))
        what = f"their test file {f.test}" if f.test else \
            f"their module {modules[0]}" if len(modules) == 1 else "their modules"
        where = f" ({f.raised_in} raised)" if f.raised_in and modules != [f.raised_in] else ""
        which = f" (the modules: {', '.join(modules)})" if len(modules) > 1 and not f.test else ""
        said.append(f"at {f.side} {what} could not be imported{where}: {f.error}{which}")
    return _LEVEL[ReplayVerdict.NOT_IMPORTED], (
        f"{len(ops)} ops ({', '.join(op.label for op in ops)}): changed, not compared: no family fits them, and "
        "no call of them could be recorded: " + "; ".join(said + list(ops[0].notes)))


def _call_row(c: ReplayedCall) -> str:
    if c.failures:
        result = "; ".join(f"{f.side}: {f.stage} ends the replaying process ({f.error})" if f.ended_process else
                           f"{f.side}: {f.stage} raises {f.error}" for f in c.failures)
    else:
        differing = [t for t in c.tensors if t.agreement != Agreement.IDENTICAL]
        result = "; ".join(tensor_text(t) for t in differing) or f"identical bits ({plural(len(c.tensors), 'tensor')})"
    return f"| {c.index + 1} | `{c.test or '?'}` | `{c.signature}` | {result.replace('|', '/')} |"


def markdown(op: ReplayedOp, room: int | None = None) -> list[str]:
    """The op's section of the comment under a short heading (its line is the review's answer, above it): its
    calls folded, as many rows as fit in `room` characters (None: all), and what could not be done."""
    text = [f"### `{op.label}`", ""]
    if op.calls:
        rows = [_call_row(c) for c in op.calls]
        kept = rows if room is None else [r for i, r in enumerate(rows) if sum(map(len, rows[:i + 1])) <= room]
        text += [f"<details><summary>The {plural(len(rows), 'call')} replayed, BASE against HEAD</summary>", "",
                 "| call | test | arguments | BASE against HEAD |", "|---|---|---|---|", *kept, ""]
        if len(kept) < len(rows):
            text += [f"{len(rows) - len(kept)} more calls left out to keep this comment short: the review's --json "
                     "holds every call", ""]
        text += ["</details>", ""]
    text += [f"- {n}" for n in [f.text() for f in op.not_imported] + list(op.notes)] + [f"- {timed_line(op)}", ""]
    return text


def timed_line(op: ReplayedOp) -> str:
    """Which recorded call its timing and compiled code ran on, and how it was grown, or why they did not run."""
    if op.report is not None:
        return f"timing and compiled code, BASE against HEAD on its recorded calls: {op.timed}"
    return op.timed or NOT_RUN
