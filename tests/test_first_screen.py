"""The answer on the first screen: piped at COLUMNS=80, `compare` and `review` print the title and the glance
table (check, verdict, how much, where) within the first 24 lines, no line wider than 80 or ending in a space;
the sections come with --verbose. The title's next line says where the kernels ran."""
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
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
    assert lines[1] == "ran on Triton's CPU interpreter (no GPU)"   # where the kernels ran, on the first screen
    assert lines[2] == "explicit_offset against pointer_mutation (baseline):"
    at, rows = _glance_at(lines)
    assert at == 3
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
    assert at == 3 and numerics > at and "Environment" in text


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


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _in_a_terminal(argv: list[str], columns: int = 80, rows: int = 24) -> list[str]:
    """What `main.py argv` shows in a pseudo-terminal of `columns` x `rows` (stdout and stderr both), as the
    screen's lines: escape sequences out, split wherever the cursor goes back to the line's start."""
    pid, fd = pty.fork()
    if pid == 0:   # the child: a terminal of that size, no COLUMNS to go by
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, str(ROOT / "main.py"), *argv], {**env, "PYTHONPATH": str(ROOT)})
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:   # the child closed the terminal: it has ended
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out.decode(errors="replace")
    text = ANSI.sub("", out.decode(errors="replace"))
    return [part for line in text.split("\n") for part in line.split("\r")]


def test_compare_in_an_80_by_24_terminal_names_the_interpreter_shows_the_verdicts_and_fits():
    """Progress bar included (no --quiet): every line the terminal shows fits its 80 columns."""
    lines = _in_a_terminal(["compare", "--shape", "2,8,2,16", "--trials", "1", "--inputs", "normal",
                            "--check", "numerics"])
    assert "ran on Triton's CPU interpreter (no GPU)" in lines
    verdict = next(line for line in lines if line.split()[:2] == ["OK", "numerics"])
    assert "identical bits" in verdict and "1 of 1 case" in verdict
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)


def test_a_variant_alone_gets_its_verdicts_against_the_reference_and_torch_on_the_first_screen():
    kernel = "variants/group_norm/explicit_offset.py::group_norm_forward"
    text = _run("compare", "--variant", f"mine={kernel}", "--shape", "2,8,2,16", "--trials", "1", "--inputs",
                "normal", "--check", "numerics", "--quiet")
    _plain(text)
    lines = text.splitlines()
    assert lines[2] == "mine against the float64 reference and torch:"
    at, rows = _glance_at(lines)
    assert rows["numerics no"][:4] == ["OK", "numerics", "no", "problems"]
    assert rows["numerics as"][:6] == ["OK", "numerics", "as", "accurate", "as", "torch"]
