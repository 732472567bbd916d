"""Exit codes: each one the command line can reach cheaply, run as a user runs it (`python3 main.py`, through
the supervisor for compare), against the one table in docs/reports-and-gates.md; --version; no abbreviation."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compare.runtime.exit_codes import ExitCode
from tests.sampled import sampled

ROOT = Path(__file__).resolve().parent.parent
TINY = ["compare", "pointer_mutation", "explicit_offset", "--shape", "2,8,2,16", "--trials", "1",
        "--inputs", "normal", "--check", "numerics", "--quiet"]


def run(argv, tmp_path, shim: str = "", **env):
    """`python3 main.py ARGV` in a fresh process; `shim` is a sitecustomize run at its start (and its child's)."""
    path = [str(ROOT)]
    if shim:
        (tmp_path / "shim").mkdir(exist_ok=True)
        (tmp_path / "shim" / "sitecustomize.py").write_text(shim)
        path.insert(0, str(tmp_path / "shim"))
    env = {**{k: v for k, v in os.environ.items() if k != "KERNEL_AB_DEBUG"}, "PYTHONPATH": os.pathsep.join(path),
           "TMPDIR": str(tmp_path), **env}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *argv], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)


def documented() -> dict[int, str]:
    text = (ROOT / "docs" / "reports-and-gates.md").read_text()
    table = text[text.index("## Exit codes"):].split("\n## ")[0]
    rows = re.findall(r"^\| ([0-9, ]+) \| (.+) \|$", table, re.M)
    return {int(code): when for codes, when in rows for code in codes.split(",")}


def test_the_documented_table_is_the_exit_code_enum():
    assert sorted(documented()) == sorted(int(c) for c in ExitCode)


def test_mains_docstring_names_every_code_but_the_quiet_pipe():
    import main
    for code in ExitCode:
        if code is not ExitCode.SIGPIPE:
            assert re.search(rf"\b{int(code)}\b", main.__doc__), code


def test_every_gate_holding_exits_0_and_a_gate_failing_exits_1(tmp_path):
    held = run(TINY, tmp_path)
    assert held.returncode == ExitCode.OK, held.stderr
    failed = run([*TINY, "--fail-if-slower", "2"], tmp_path)
    assert failed.returncode == ExitCode.GATE_FAILED, failed.stderr
    assert "kernel-ab: gate failed: --fail-if-slower could not be judged" in failed.stderr


@pytest.mark.parametrize("argv, said", sampled([
    (["compare", "--dtype", "float99"], "float99"),
    (["list", "--family", "nope"], "unrecognized arguments: --family nope"),   # not --family-path
    (["compare", "--fail-if", "2"], "unrecognized arguments: --fail-if"),    # not --fail-if-slower
    (["review", "A", "B", "--rep", "."], "unrecognized arguments: --rep"),
], fast=2, several=True))
def test_bad_input_and_an_abbreviated_option_are_one_line_and_exit_2(tmp_path, argv, said):
    r = run(argv, tmp_path)
    assert r.returncode == ExitCode.USAGE
    assert len(r.stderr.strip().splitlines()) == 1 and said in r.stderr, r.stderr
    assert r.stderr.startswith("kernel-ab: error:")


HIDE_TABULATE = "import sys\nsys.modules['tabulate'] = None   # `import tabulate` raises ModuleNotFoundError\n"


@pytest.mark.parametrize("argv", [["list"], TINY], ids=["list", "compare-supervised"])
def test_a_missing_dependency_is_one_line_naming_it_and_the_traceback_file_and_exit_3(tmp_path, argv):
    r = run(argv, tmp_path, shim=HIDE_TABULATE)
    assert r.returncode == ExitCode.INTERNAL
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kernel-ab: internal error: missing dependency: no module named 'tabulate'"), r.stderr
    kept = Path(line.rpartition("traceback in ")[2])
    assert kept.parent == tmp_path and "ModuleNotFoundError" in kept.read_text()
    assert "Traceback" not in r.stderr


def test_kernel_ab_debug_prints_the_traceback_after_the_line(tmp_path):
    r = run(["list"], tmp_path, shim=HIDE_TABULATE, KERNEL_AB_DEBUG="1")
    assert r.returncode == ExitCode.INTERNAL
    first, *rest = r.stderr.splitlines()
    assert first.startswith("kernel-ab: internal error: missing dependency") and "traceback in" not in first
    assert rest[0] == "Traceback (most recent call last):" and "ModuleNotFoundError" in rest[-1]
    assert not list(tmp_path.glob("kernel-ab-traceback-*"))


def test_an_unexpected_exception_in_kernel_abs_code_exits_3_not_1(tmp_path, monkeypatch, capsys):
    import main

    def broken(argv, prog):
        raise RuntimeError("an invariant kernel-ab keeps does not hold\nsecond line")
    monkeypatch.setattr(main, "_main", broken)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("KERNEL_AB_DEBUG", raising=False)
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)   # read TMPDIR again
    assert main.main(["list"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("kernel-ab: internal error: RuntimeError: an invariant kernel-ab keeps does not hold "
                          "(at test_exit_codes.py:")
    assert len(err.strip().splitlines()) == 1
    assert "second line" in next(tmp_path.glob("kernel-ab-traceback-*.txt")).read_text()


FULL_DISK = """import errno, os
def _full(real):   # a file's last step: a new one is linked into place, an old one replaced (command_line/output_files.py)
    def step(src, dst, *a, **k):
        if str(dst).endswith('.json'):
            raise OSError(errno.ENOSPC, 'No space left on device')
        return real(src, dst, *a, **k)
    return step
os.replace, os.link = _full(os.replace), _full(os.link)
"""


def test_a_report_that_cannot_be_written_exits_74_through_the_supervisor(tmp_path):
    r = run([*TINY, "--json", str(tmp_path / "r.json")], tmp_path, shim=FULL_DISK)
    assert r.returncode == ExitCode.WRITE_FAILED, r.stderr
    assert f"kernel-ab: error: could not write {tmp_path / 'r.json'} (No space left on device)" in r.stderr


def test_version_prints_the_version_and_the_checkouts_commit_without_a_command(tmp_path):
    r = run(["--version"], tmp_path)
    assert r.returncode == 0, r.stderr
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    version = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    commit = f"commit {head.stdout.strip()}" if head.returncode == 0 else "commit unknown"
    assert r.stdout == f"kernel-ab {version} ({commit})\n"


def test_version_outside_a_checkout_says_the_commit_is_unknown(tmp_path):
    from compare.runtime import version
    (tmp_path / "site").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)   # a venv inside some other repository
    assert version.commit(tmp_path / "site") == ""
    assert version.line(tmp_path / "site").endswith("(commit unknown)")


def _exit_literals(path: Path) -> list[tuple[int, int]]:
    """(line, value) of each integer written as an exit code in `path`: returned by a function, given to
    sys.exit or os._exit, compared with or given to a `code` (or compared with an `rc`), or a constant named *_EXIT."""
    import ast
    found = []

    def ints(node):
        return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Return) and node.value is not None and isinstance(node.value, ast.Constant):
            found += ints(node.value)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("exit", "_exit"):
            found += [n for a in node.args for n in ints(a)]
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in ("code", "rc"):
            found += [n for c in node.comparators for n in ints(c)]
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "").endswith("_EXIT") for t in node.targets):
            found += ints(node.value)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                any(getattr(t, "id", "") == "code" for t in node.targets):
            found += ints(node.value)
    return [(n.lineno, n.value) for n in found]


def test_every_exit_code_the_command_line_and_the_supervisor_give_is_in_the_enum_and_so_in_the_table():
    """A code written as a number outside ExitCode would be missing from the documented table."""
    files = [ROOT / "main.py", *ROOT.glob("compare/**/supervis*.py"), *ROOT.glob("compare/**/task_*.py")]
    assert any(f.name == "supervision.py" for f in files)
    members = {int(c) for c in ExitCode}
    stray = [(f.name, line, value) for f in files for line, value in _exit_literals(f) if value not in members]
    assert stray == []
    from compare.runtime import supervisor
    assert supervisor.POISONED_EXIT is ExitCode.POISONED
    assert {int(supervisor.Stopped(s).exit_code) for s in supervisor.STOP_CODES} == \
        {ExitCode.SIGINT, ExitCode.SIGTERM, ExitCode.SIGHUP}
    assert set(documented()) >= members   # the table has a row for each, 75 among them
