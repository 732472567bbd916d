"""The answer on the first screen: piped at COLUMNS=80, `compare` and `review` print the title and the glance
table (check, verdict, how much, where) within the first 24 lines, no line wider than 80 or ending in a space;
the sections come with --verbose."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.review_repo import make_repo

ROOT = Path(__file__).resolve().parent.parent
HEADER = ["check", "verdict", "how", "much", "where"]


def _run(*argv: str, cwd=ROOT) -> str:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), *argv], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _glance_at(lines: list[str], start: int = 0) -> tuple[int, dict[str, list[str]]]:
    """The line of the glance's header from `start`, and its rows by check (the words after the mark)."""
    at = next(i for i in range(start, len(lines)) if lines[i].split() == HEADER)
    rows = {}
    for line in lines[at + 2:]:
        words = line.split()
        if not words or not line.startswith(" " * 3) and words[0] not in ("OK", "FAIL", "WARN", "SKIP"):
            break
        marked = words[0] in ("OK", "FAIL", "WARN", "SKIP")
        rows.setdefault(" ".join(words[1:3] if marked else words[:2]), words)
    return at, rows


def _plain(text: str) -> None:
    for line in text.splitlines():
        assert len(line) <= 80 and not line.endswith(" "), repr(line)


def test_compare_puts_the_title_and_every_checks_row_on_the_first_screen():
    text = _run("compare", "--shape", "2,8,2,16", "--trials", "1", "--check", "numerics", "--check", "backward",
                "--check", "ir", "--quiet")
    lines = text.splitlines()
    _plain(text)
    assert "kernel-ab: group_norm, preset custom, float32, baseline pointer_mutation" in lines[0]
    assert lines[1] == "explicit_offset against pointer_mutation (baseline):"
    at, rows = _glance_at(lines)
    assert at == 2
    # the default pair: every bit the same, the loop's carried pointers gone (docs/findings.md)
    assert rows["numerics identical"][:4] == ["OK", "numerics", "identical", "bits"]
    assert rows["backward identical"][:4] == ["OK", "backward", "identical", "bits"]
    assert rows["timing not"][:4] == ["SKIP", "timing", "not", "measured"]
    assert " ".join(rows["compiled code"]).startswith("compiled code changed carried pointers 2 -> 0")
    last = max(i for i, line in enumerate(lines) if "carried pointers" in line)
    assert last < 24 and len(lines) <= 24, text   # the sections are behind --verbose
    assert "Numerics" not in text and "Environment" not in text


def test_verbose_gives_the_glance_then_every_section():
    text = _run("compare", "--shape", "2,8,2,16", "--trials", "1", "--check", "numerics", "--quiet", "--verbose")
    _plain(text)
    lines = text.splitlines()
    at, rows = _glance_at(lines)
    numerics = next(i for i, line in enumerate(lines) if " Numerics " in line)
    assert at == 2 and numerics > at and "Environment" in text


def test_review_puts_its_summary_and_each_ops_table_on_the_first_screen(tmp_path):
    repo = make_repo(tmp_path, table=True)
    text = _run("review", "--repo", str(repo), "v1", "v2", "--shape", "4,64", "--check", "numerics", "--trials", "1",
                "--inputs", "normal", "--quiet", cwd=tmp_path)
    _plain(text)
    lines = text.splitlines()
    assert "kernel-ab review of v1..v2" in lines[0] and "1 op changed between v1" in lines[1]
    at, rows = _glance_at(lines)
    assert at < 24 and any(check.startswith("numerics") for check in rows)
    assert max(i for i, line in enumerate(lines) if "numerics" in line.split()[:2]) < 24
