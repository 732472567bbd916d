"""The review in one report: each compared op's own report (its headline first, as compare writes it), then
what the change did to every kernel that was not compared, and why, with the line that would map it.

Terminal: each op's report, then the review's lines. Markdown (--markdown, --out's report.md): the
review's lines, then each op's comment, cut to share the comment's room. --out also writes each op's
whole report into a folder of its own (report-full.md, report.json: `kernel-ab report` re-renders it).
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from compare.render.markdown import MARK
from compare.review.kernels import Change, Changes, What
from compare.review.ops_changed import CODE
from compare.review.mapping import TABLE, JudgedThrough, Unmapped
from compare.review import replay_render
from compare.model.budget import BudgetUse, Cut, DtypesLeftOut, LeftOut
from compare.model.replay import NOT_REPLAYED, NUMERICS_FAILURES, ReplayedOp, ReplayVerdict
from compare.model.headline import headline
from compare.model.kept import shared
from compare.runtime.exit_codes import after_report

_MARKS = {**{level: MARK[level] + " " for level in ("ok", "fail", "warn")}, "info": ""}


@dataclasses.dataclass(frozen=True)
class Review:
    base_rev: str           # as given
    head_rev: str
    base: str               # the commits
    head: str
    changes: Changes
    compared: tuple         # command.Compared, one per op
    unmapped: tuple[Unmapped, ...]
    control: bool = False   # --aa: each op's BASE compared against BASE again
    replayed: tuple[ReplayedOp, ...] = ()   # the ops no family fits, compared on their tests' calls
    left_out: tuple[LeftOut, ...] = ()      # ops not compared: the time budget spent before their turn, or --op
    budget: BudgetUse | None = None
    dtypes_left_out: tuple[DtypesLeftOut, ...] = ()   # dtypes the default left out (--dtype adds them)
    judged_through: tuple[JudgedThrough, ...] = ()    # ops whose changes other ops' comparisons cover

    def cut(self, why: Cut) -> list[LeftOut]:
        return [left for left in self.left_out if left.cut == why]

    def stopped(self) -> list[str]:
        """The labels of the ops whose comparison the time budget stopped."""
        return [c.label for c in self.compared if c.stopped] + [r.label for r in self.replayed if r.stopped]


_SAID = {Change.KERNEL: "kernel {} changed", Change.JIT_HELPER: "jit helper {} {}", Change.KERNEL_ADDED: "kernel {} added",
         Change.KERNEL_REMOVED: "kernel {} no longer launched", Change.LAUNCH: "launch of {}: {}",
         Change.HELPER: "helper {} {}", Change.CONSTANT: "constant {} {}", Change.OWN_CODE: "its own code ({}) {}"}


def changed_text(what: tuple[What, ...]) -> str:
    """What changed in what an op runs, said as the review's and the headline's words."""
    said = [_SAID[w.kind].format(w.name, w.detail or "changed").strip() for w in what]
    if what and not any(w.kind in (Change.KERNEL, Change.JIT_HELPER) and not w.detail for w in what):
        said.insert(0, "launcher only, no launched kernel's code changed")
    return "; ".join(dict.fromkeys(said)) or "nothing"


def title(c) -> str:
    t = c.target
    return f"{t.module}:{t.callable} in family {t.family} (changed: {changed_text(t.what)}; {t.how})"


def changed_kernels(target) -> str:
    """The kernels (and jit helpers) of `target` whose code changed, as module:name; the op itself where none
    did (a launcher's change)."""
    names = [w.name if ":" in w.name else f"{target.module}:{w.name}" for w in target.what if w.kind in CODE]
    return ", ".join(dict.fromkeys(names)) or f"{target.module}:{target.callable}"


def lines(review: Review, per_op: bool = True) -> list[tuple[str, str]]:
    """(level, text) of what the review found, apart from each op's report; `per_op` False leaves out each
    compared op's own line (what changed in it, a replayed op's answer), said with the op's answer."""
    ch = review.changes
    span = f"{review.base_rev} ({review.base[:7]}) and {review.head_rev} ({review.head[:7]})"
    ran = [c for c in review.compared if c.report is not None]
    unsure = ch.unreadable or ch.unresolved
    if not ch.changed and not ch.ops and not ch.added and not ch.removed:
        only = " (only tests or benchmark scripts did)" if ch.tests else ""
        out = [("warn" if unsure else "ok", f"no op or Triton kernel changed between {span}{only}" +
                (" in what could be read (below)" if unsure else ""))]
    else:
        n, k = len(ch.ops), len(ch.changed)
        compared = [c.label for c in ran] + [r.label for r in review.replayed if r.verdict not in NOT_REPLAYED]
        stopped = review.stopped()
        compared = [label for label in compared if label not in stopped]
        out = [("info", f"{n} op{'s' if n != 1 else ''} changed between {span} ({k} changed kernel{'s' if k != 1 else ''} "
                        f"among what {'they run' if n != 1 else 'it runs'}); {len(compared)} compared: "
                        f"{', '.join(compared) or 'none'}" +
                (f"; {len(stopped)} stopped by the time budget: {', '.join(stopped)}" if stopped else "") + "".join(
                            f"; {len(review.cut(cut))} {'left out by the time budget' if cut == Cut.TIME_BUDGET else cut}"
                            for cut in Cut if review.cut(cut)))]
    needs, habits = _environment(review)
    out = needs + out + habits + [("info", d.line()) for d in review.dtypes_left_out]
    if review.control:
        out.append(("info", f"A/A control (--aa): each op at {review.base_rev} compared against itself; any difference "
                            "reported is the measurement's own"))
    if per_op:
        out += [("info", f"{c.label}: {changed_text(c.target.what)}") for c in ran]
        out += [replay_render.summary(r, _hint(review, r)) for r in review.replayed if r.verdict not in NOT_REPLAYED]
        out += [("info", f"{r.label}: {replay_render.timed_line(r)}") for r in review.replayed
                if r.verdict not in NOT_REPLAYED]
    # a replayed op that ran no call has no answer of its own: its line stays here
    out += replay_render.not_replayed([r for r in review.replayed if r.verdict in NOT_REPLAYED],
                                      lambda r: _hint(review, r))
    out += [("fail", f"{changed_kernels(c.target)}: changed; {c.target.module}:{c.target.callable} could not be "
                     f"compared: {_why_not(c)}") for c in review.compared if c.report is None and not c.stopped]
    out += [("info", _judged_through(review, j)) for j in review.judged_through]
    out += _budget_lines(review)
    out += [("warn", f"{u.kernel}: changed, not compared: {u.why}" + (
        "; compare its op by hand: compare --variant NAME=git:REV:PATH::OP(ARGS)" if u.mapped else
        f"; no line of {TABLE} maps it ({u.refused}); compare its op by hand: compare --variant "
        "NAME=git:REV:PATH::OP(ARGS)" if u.refused else
        f"; a line of {TABLE} (in the repository's pyproject.toml, or a --mapping file) would map it: {u.fix}"))
        for u in review.unmapped]
    out += [("info", f"renamed: {a.key} -> {b.key} (the same code; not compared)") for a, b in ch.renamed]
    out += [("info", f"added: {k.key} (no version at {review.base_rev} to compare with)") for k in ch.added]
    out += [("info", f"removed: {k.key}") for k in ch.removed]
    if ch.tests:
        out.append(("info", f"{len(ch.tests)} test or benchmark file{'s' if len(ch.tests) != 1 else ''} changed "
                            f"(calls of ops, not ops): {', '.join(p for p, _ in ch.tests)}"))
    out += [("warn", f"not read (does not parse): {u}") for u in ch.unreadable]
    out += [("warn", f"a kernel that cannot be read statically: {u}") for u in ch.unresolved]
    return out


def _judged_through(review: Review, j: JudgedThrough) -> str:
    """The line of an op judged through others; where those were not compared (as the review's count says),
    that is said too, so the line does not read as a comparison that did not happen."""
    compared = {c.target.key for c in review.compared if c.report is not None and not c.stopped}
    compared |= {r.op for r in review.replayed if r.verdict not in NOT_REPLAYED and not r.stopped}
    missing = [k for k in j.through if k not in compared]
    through, see = " and ".join(j.through), "its line" if len(missing) == 1 else "their lines"
    said = f"{j.op}: not compared on its own: what changed in it ({changed_text(j.what)}) is "
    if not missing:
        return f"{said}compared through {through}"
    if len(missing) == len(j.through):
        return f"{said}left to {through}, not compared either (see {see})"
    return f"{said}left to {through} ({' and '.join(missing)} not compared: see {see})"


def _budget_lines(review: Review) -> list[tuple[str, str]]:
    """What the time budget stopped or left out, a line each, and the ops --op did not name, in one line."""
    out = [("warn", review.budget.stopped(c.label)) for c in review.compared if c.stopped] if review.budget else []
    out += [("warn", review.budget.line(left)) for left in review.cut(Cut.TIME_BUDGET)] if review.budget else []
    others = review.cut(Cut.NOT_NAMED)
    if others:
        out.append(("info", f"{len(others)} other changed op{'s' if len(others) != 1 else ''} not compared "
                            f"({Cut.NOT_NAMED}): {', '.join(left.label for left in others)}"))
    return out


def _environment(review: Review) -> tuple[list, list]:
    """Once each, (level, text): a package the libraries need that this environment lacks (the review's first
    line), and what their imports do alike at every revision (their own habits, in no op's report again)."""
    reports = [c.report for c in review.compared if c.report is not None]
    needs = [n for c in review.compared for n in c.needs] + [v.needs for r in reports for v in r.variants if v.needs]
    habits = [library for r in reports for library in r.library]
    return [("fail", n.text()) for n in dict.fromkeys(needs)], [("info", h.line()) for h in dict.fromkeys(habits)]


def _why_not(c) -> str:
    if c.needs:
        return f"its import {', '.join(f'needs package {n.package}' for n in dict.fromkeys(c.needs))} (above)"
    return c.error


def _in_review(report):
    """An op's report as the review shows it: its libraries' habits said once, in the review's lines (no
    record decided from the report reads them: the copy and the report share theirs)."""
    return shared(report, dataclasses.replace(report, library=()))


def unjudged(review: Review) -> list[str]:
    """A line per changed kernel whose change no comparison judged (gates cannot pass on it)."""
    return [f"{u.kernel} changed and was not compared ({u.why})" for u in review.unmapped] + \
           [f"{changed_kernels(c.target)} changed and could not be compared" for c in review.compared
            if c.report is None and not c.stopped] + \
           [f"{r.op} changed and its replay judged nothing ({r.verdict})" for r in review.replayed
            if r.verdict in NOT_REPLAYED | {ReplayVerdict.BOTH_FAIL}] + \
           [f"{label} changed and the time budget stopped its comparison" for label in review.stopped()] + \
           [f"{left.op} changed and was not compared ({left.cut})" for left in review.left_out]


def replay_failures(review: Review) -> list[str]:
    """A line per replayed op whose HEAD brought a difference beyond tolerance or a failure (--fail-on-numerics)."""
    return [replay_render.summary(r)[1] for r in review.replayed if r.verdict in NUMERICS_FAILURES]


def _how(c) -> str:
    """How an op was compared and what changed in it, in a line for its answer."""
    r = c.report
    pairs = " and ".join(f"`{b}` against `{a}`" for a, b in dict.fromkeys(
        (p.baseline, p.variant) for p in headline(r).pairs))
    return (f"compared through the {r.family} family (preset `{r.preset}`, {r.dtype}): {pairs or 'no pair judged'}; "
            f"{changed_text(c.target.what)}")


def markdown(review: Review, full_written: bool = False) -> str:
    """The review's comment; `full_written`: each op's report-full.md is written with it (--out). The
    answer first (the review's lines, then each op's: how it was compared and its verdicts), then each op's
    section: what was compared, the headline's lines, the details folded, cut to share the comment's room."""
    from compare.model import glance
    from compare.render import markdown as md
    ran = [c for c in review.compared if c.report is not None]
    replayed = [r for r in review.replayed if r.verdict not in NOT_REPLAYED]
    text = [f"{md.TITLE}review of {review.base_rev}..{review.head_rev}", ""]
    text += [f"- {_MARKS[level]}{line}" for level, line in lines(review, per_op=False)]
    for c in ran:
        rows = glance.rows(c.report)
        text += ["", f"**`{c.label}`**: {_how(c)}", ""]
        for pair in headline(c.report).pairs:
            text += md.glance_table(rows, pair.variant)
    for r in replayed:
        level, line = replay_render.summary(r, _hint(review, r))
        text += ([] if text[-1] == "" else [""]) + [f"- {_MARKS[level]}{line}"]
    room = max(md.COMMENT_LIMIT - len("\n".join(text) + "\n"), 2000) // max(len(ran) + len(replayed), 1)
    for c in ran:
        t = c.target
        shown = _in_review(c.report)
        said = ["", f"### `{c.label}`", "", f"`{t.module}:{t.callable}` in family {t.family}: {t.how}", "",
                *md.verdicts(shown, glance_shown=False)]
        # what is said above the details, and the newlines joining them, count against the room too
        body = md.details(shown, room - len("\n".join(["", *said, ""])), full_written)
        text += [*said, body]
    for r in replayed:
        section = [""] + replay_render.markdown(r, room // 2 if r.report is not None else room - 400)
        if r.report is not None:   # its timing and compiled code on the recorded calls
            shown = _in_review(r.report)
            section += [*md.verdicts(shown, glance_shown=False)]
            section += [md.details(shown, room - len("\n".join(section)), False)]
        text += section
    return "\n".join(text) + "\n"


def _hint(review: Review, op: ReplayedOp) -> str:
    """How to compare `op` whole, where the review's time budget stopped it."""
    return review.budget.hint(op.label) if op.stopped and review.budget else ""


def _json(review: Review) -> str:
    from compare.model.jsonform import encode
    from compare.render.json_report import as_data
    from compare.command_line.output_files import REVIEW_MARKER
    from compare.model.results import MARKER_KEY
    data = {MARKER_KEY: REVIEW_MARKER, "base": review.base, "head": review.head,
            "lines": [{"level": level, "text": text} for level, text in lines(review)],
            "compared": [{"label": c.label, "target": encode(c.target), "error": c.error, "stopped": c.stopped,
                          "report": as_data(c.report) if c.report is not None else None} for c in review.compared],
            "replayed": [{**encode(dataclasses.replace(r, report=None)), "report": as_data(r.report)
                          if r.report is not None else None} for r in review.replayed],
            "left_out": [encode(left) for left in review.left_out],
            "judged_through": [encode(j) for j in review.judged_through],
            "budget": encode(review.budget) if review.budget else None,
            "dtypes_left_out": [encode(d) for d in review.dtypes_left_out]}
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def _terminal(review: Review, verbose: bool = False, stream=None) -> None:
    from rich.text import Text
    from compare.render import terminal
    console = terminal.make_console(stream)
    console.rule(Text(f"kernel-ab review of {review.base_rev}..{review.head_rev}"))
    for level, line in lines(review):   # the review's own answer first, then each op's report
        terminal.verdict_line(console, level, line)
    for c in review.compared:
        if c.report is not None:
            console.rule(Text(f"review: {c.label}"))
            console.print(Text(title(c)))   # whole, wrapped: a rule's title is cut to one line
            terminal.render(_in_review(c.report), console, verbose=verbose)
    for r in review.replayed:
        if r.report is not None:
            console.rule(Text(f"review: {r.label} (replayed: timing and compiled code on its recorded calls)"))
            terminal.render(_in_review(r.report), console, verbose=verbose)


def check_outputs(args, labels=(), timed: bool = False) -> None:
    """UsageError (before any comparison, as compare's) unless --json, --markdown and --out can take the files
    `finish` writes: --out's report.md and, for each op's `labels`, that op's folder of compare's files
    (its timing files too when `timed`); a file there that kernel-ab did not write is refused unless --force."""
    from compare.command_line import usage
    usage.outputs(args.json, args.markdown, None, force=args.force)
    from compare.command_line.output_files import REPORT_MD, folder_files
    from variants.variant import MODES   # each op's folder takes compare's files, its timed passes' among them
    if args.out is None:
        return
    with usage.usable_paths():
        usage.not_blank("--out", args.out, "a folder")
        out = Path(args.out)
        folders = [out] + [out / label for label in labels]
        for folder in folders:
            usage.output_folder(f"--out {folder}", folder)
        singles = usage.single_files(args.json, args.markdown)
        usage.no_file_where_folders_go(singles, out, folders)
        files = [(flag, path, "path") for flag, path in singles] + [(f"--out {out}", out / REPORT_MD, "folder")]
        modes = MODES if timed else ()
        files += [(f"--out {out / label}", p, "folder") for label in labels for p in folder_files(out / label, modes)]
        usage.replaceable(files, args.force)


def finish(review: Review, args) -> int:
    """Print the review, write its files, and return the exit code (gates as compare's, and a changed kernel
    no comparison judged is a gate that could not be judged)."""
    from compare.model import gates
    from compare.runtime.written import planned
    from compare.command_line import output_files as files
    to_stdout = args.json == "-"   # --json -: the JSON on standard output, the screen on standard error
    _terminal(review, args.verbose, sys.stderr if to_stdout else None)
    if to_stdout:
        sys.stdout.write(_json(review))
    written, unwritten = [], 0
    outputs = [(args.markdown, lambda: markdown(review, bool(args.out))),
               (None if to_stdout else args.json, lambda: _json(review))]
    if args.out:
        outputs.append((str(Path(args.out) / files.REPORT_MD), lambda: markdown(review, True)))
    planned(path for path, _ in outputs if path)   # a stop's line says which of them came out
    if args.out:
        for c in review.compared:
            if c.report is not None:
                said, failed = files.write(c.report, out=Path(args.out) / c.label)
                written += said
                unwritten += failed
    for path, text in outputs:
        if path:
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                files.write_atomic(Path(path), text().encode())
                written.append(f"wrote {path}")
            except OSError as exc:
                unwritten += 1
                written.append(f"kernel-ab: error: could not write {path} ({exc.strerror or exc})")
    for line in written:
        print(line, file=sys.stderr)
    reports = [c.report for c in review.compared] + [r.report for r in review.replayed]
    decided = [g for report in reports if report is not None for g in report.gates]
    more = replay_failures(review) if args.fail_on_numerics else []
    if (args.fail_on_numerics or args.fail_if_slower is not None) and not args.accept_unjudged:
        more += [f"review could not judge: {line}" for line in unjudged(review)]
    for line in [line for g in decided for line in gates.reasons(g)] + more:
        print(f"kernel-ab: gate failed: {line}", file=sys.stderr)
    return after_report(unwritten, decided, failed=bool(more))
