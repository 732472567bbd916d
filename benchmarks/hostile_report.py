"""sweep.md and sweep.json of benchmarks/hostile_sweep.py: the command that makes them again, the
environment, the five counts kernel-ab must hold at 0, a table of classes per category and every case that failed its
expectation with its command and the first lines of its stderr."""
from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
from pathlib import Path

from benchmarks.hostile_cases import CATEGORIES
from benchmarks.hostile_classify import PRIORITY, primary

ROOT = Path(__file__).resolve().parents[1]
# what the sweep holds kernel-ab to: "0 wrong verdicts, 0 runs that end without a report of the others, 0 hangs,
# 0 files destroyed, 0 tracebacks"
HEADLINE = (("wrong_verdict", "wrong verdicts"), ("no_report", "runs that end without a report of the others"),
            ("hang", "hangs"), ("file_destroyed", "files destroyed"), ("traceback", "tracebacks"))
STDERR_LINES = 6


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def environment(features: frozenset) -> dict:
    return {"python": platform.python_version(), "torch": _version("torch"), "triton": _version("triton"),
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "commit": _git("rev-parse", "HEAD"),
            "tree_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "tool_flags": {f: f in features for f in ("--variant-timeout", "--force")},
            "time_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}


def _entry(index, case, outcome, problems) -> dict:
    return {"index": index, "id": case.id, "category": case.category, "expect": case.expect,
            "command": outcome.get("command", "python3 main.py " + " ".join(case.argv)),
            "signal": case.signal or None, "rc": outcome.get("rc"), "seconds": outcome.get("seconds"),
            "class": primary(problems), "problems": problems, "note": outcome.get("note", ""),
            "stderr_head": _head(outcome.get("stderr") or "")}


def _head(stderr: str) -> list[str]:
    """The first lines of stderr; of a longer one (a traceback), its first and its last lines."""
    lines = [line[:300] for line in stderr.splitlines()]
    if len(lines) <= STDERR_LINES:
        return lines
    return lines[:2] + [f"... ({len(lines) - STDERR_LINES} lines) ..."] + lines[-(STDERR_LINES - 2):]


def summary(entries: list[dict]) -> dict:
    """Per category: cases counted under each class, and cases with each class among their problems."""
    out = {}
    for category in CATEGORIES:
        mine = [e for e in entries if e["category"] == category]
        if mine:
            out[category] = {"cases": len(mine),
                             "primary": {c: sum(e["class"] == c for e in mine) for c in ("ok", *PRIORITY)},
                             "any": {c: sum(any(p[0] == c for p in e["problems"]) for e in mine) for c in PRIORITY}}
    return out


def _markdown(header: dict, entries: list[dict], totals: dict, sums: dict) -> str:
    env = header["environment"]
    flags = ", ".join(f"{f} {'present' if on else 'absent'}" for f, on in env["tool_flags"].items())
    lines = ["# kernel-ab hostile sweep", "",
             f"Made by `{header['command']}` from the repository root ({header['cases_run']} of "
             f"{header['cases_total']} invocations{', a partial run' if header['partial'] else ''}, "
             f"{header['seconds']:.0f} s). Each invocation is `python3 main.py ...` under the tool's supervisor, "
             "run from a scratch folder of its own (main.py there links to the repository's) with its own TMPDIR.",
             "",
             f"Environment: Python {env['python']}, torch {env['torch']}, triton {env['triton']}, "
             f"{env['cpu_count']} CPUs, {env['platform']}; kernel-ab commit {env['commit'][:12]}"
             f"{' (working tree changed)' if env['tree_dirty'] else ''}; tool flags: {flags}; {env['time_utc']}.",
             "", "**The sweep: " + ", ".join(f"{totals[c]} {words}" for c, words in HEADLINE) + "**; "
             f"{sum(e['class'] == 'ok' for e in entries)} of {len(entries)} cases ok.", "",
             "Classes: a case is counted under its first problem in the order "
             f"{', '.join(PRIORITY)}; *with* counts every case that has the problem at all.", ""]
    for category, s in sums.items():
        lines += [f"## {category} ({s['cases']} cases)", "", "| class | cases | with |", "|---|---:|---:|"]
        lines += [f"| {c} | {n} | {s['any'].get(c, '')} |" for c, n in s["primary"].items() if n or s["any"].get(c)]
        bad = [e for e in entries if e["category"] == category and e["class"] != "ok"]
        lines.append("")
        for e in bad:
            lines += [f"### {e['index']:03d} {e['id']}: {e['class']}", ""]
            lines += [f"- {cls}: {detail}" for cls, detail in e["problems"]]
            sig = f" ({e['signal'][0]} to the {e['signal'][1]} at {e['signal'][2]} s)" if e["signal"] else ""
            lines += ["", f"exit code {e['rc']}, {e['seconds']} s{sig}" + (f"; {e['note']}" if e["note"] else ""),
                      "", "```", e["command"], *(e["stderr_head"] or ["(stderr empty)"]), "```", ""]
    return "\n".join(lines) + "\n"


def write_reports(folder: Path, results, features: frozenset, total: int, partial: bool, seconds: float,
                  command: list[str]) -> tuple[Path, Path]:
    entries = [_entry(*r) for r in results]
    sums = summary(entries)
    totals = {c: sum(s["any"][c] for s in sums.values()) for c in PRIORITY}
    header = {"command": shlex.join(command), "environment": environment(features), "cases_run": len(entries),
              "cases_total": total, "partial": partial, "seconds": round(seconds, 1)}
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / "sweep.md", folder / "sweep.json"
    md.write_text(_markdown(header, entries, totals, sums))
    js.write_text(json.dumps({"header": header, "totals": totals, "summary": sums, "cases": entries}, indent=1) + "\n")
    return md, js
