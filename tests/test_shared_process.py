"""What one variant does to the process it shares with the others ends as that variant's failure, in one line,
the report written (compare/runtime/supervisor.py, process_guard.py, standard_streams.py; the supervisor's side,
compare/processes/supervision.py): an exception that cannot be printed, a closed standard stream, a fork whose
copy goes on, sys.modules replaced, numpy's error handling changed; a crash after the report fails the run; a
family package whose import ends the process is bad input; a variant's end leaves no temporary tree behind."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.op_package import git

ROOT = Path(__file__).resolve().parent.parent
SHAPE = "1,2,1,4"
OP = '''\
import os, sys, types, weakref
import numpy
import torch.nn.functional as F
{at_import}

def op(X, W, B, num_channels, num_groups, eps):
    y = F.group_norm(X, num_groups, W, B, eps)
    {at_call}
    return y
'''


def _op(folder: Path, name: str, at_call: str = "pass", at_import: str = "") -> Path:
    path = folder / f"{name}.py"
    path.write_text(OP.format(at_call=at_call, at_import=at_import))
    return path


def _compare(folder: Path, *extra: str, env: dict | None = None, timeout: int = 180):
    """torch against an honest op (`ok`) and `extra`'s variants, numerics on normal inputs: the run and its
    report (None where none was written)."""
    out = folder / "r.json"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "compare", "torch", "--variant",
                        f"ok={_op(folder, 'ok')}::op", *extra, "--shape", SHAPE, "--check", "numerics",
                        "--inputs", "normal", "--trials", "1", "--quiet", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    return r, json.loads(out.read_text()) if out.exists() else None


def _statuses(report) -> dict:
    (case,) = report["numerics"]["cases"]
    return {v["variant"]: v["status"] for v in case["variants"]}


def _bad(report) -> dict:
    return next(v for v in report["variants"] if v["name"] == "bad")


def test_an_exception_whose_str_raises_is_the_variants_error(tmp_path):
    bad = _op(tmp_path, "bad", "raise Unprintable()", at_import='''
class Unprintable(Exception):
    def __str__(self):
        raise ValueError("no text")
''')
    r, report = _compare(tmp_path, "--variant", f"bad={bad}::op")
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    (case,) = report["numerics"]["cases"]
    mine = next(v for v in case["variants"] if v["variant"] == "bad")
    assert mine["status"] == "error"
    assert mine["reasons"] == ["Unprintable: (its message could not be printed: its __str__ raised ValueError)"]
    assert _statuses(report) == {"torch": "pass", "ok": "pass", "bad": "error"}


ACTS = [   # (the variant's act in its call, how its failure starts)
    ("sys.stdout.close()", "closed standard output (sys.stdout.close())"),
    pytest.param("os.close(2)", "closed standard error (os.close(2))", marks=pytest.mark.slow),
    pytest.param("sys.stderr.close()", "closed standard error (sys.stderr.close())", marks=pytest.mark.slow),
    pytest.param("os.close(1)", "closed standard output (os.close(1))", marks=pytest.mark.slow),
    pytest.param('sys.modules["json"] = types.ModuleType("json")', "replaced sys.modules['json']",
                 marks=pytest.mark.slow),
    pytest.param('sys.modules["variants"] = types.ModuleType("variants")', "replaced sys.modules['variants']",
                 marks=pytest.mark.slow),
    pytest.param('sys.modules["compare"] = types.ModuleType("compare")', "replaced sys.modules['compare']",
                 marks=pytest.mark.slow),   # kernel-ab's own package, which the rest of the run imports from
    pytest.param('numpy.seterr(all="raise")', "changed numpy's floating-point error handling (numpy.seterr: "
                 "divide=raise, invalid=raise, over=raise, under=raise)", marks=pytest.mark.slow),
    ("os.fork()", "forked the process (os.fork) and its copy went on into kernel-ab's code"),
]


@pytest.mark.parametrize("act, said", ACTS)
def test_a_variant_that_breaks_the_shared_process_is_named_and_the_report_comes_out(act, said, tmp_path):
    bad = _op(tmp_path, "bad", act)
    r, report = _compare(tmp_path, "--variant", f"bad={bad}::op", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    info = _bad(report)
    assert (info["status"], info["failure"]) == ("failed", "tamper"), info
    assert info["error"].startswith(f"{said} while running numerics forward"), info["error"]
    assert _statuses(report) == {"torch": "pass", "ok": "pass"}
    assert f"kernel-ab: variant bad {said} while running" in r.stderr
    # one writer of the outputs (a forked copy writes none): no report kept beside another
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report-full.md", "report.json", "report.md"]


def test_a_crash_after_the_report_fails_the_run_in_one_sentence_and_keeps_the_report(tmp_path):
    bad = _op(tmp_path, "bad", at_import="weakref.finalize(types.SimpleNamespace, os.abort)   # as the process ends")
    r, report = _compare(tmp_path, "--variant", f"bad={bad}::op")
    assert r.returncode == 128 + 6, r.stderr   # SIGABRT
    assert r.stderr.splitlines()[-1] == ("kernel-ab: the report was written (exit code 0), but the process then was "
                                         "ended by SIGABRT as it exited (a finalizer or thread a variant left?); "
                                         "exit code 134")
    assert _statuses(report) == {"torch": "pass", "ok": "pass", "bad": "pass"}


@pytest.mark.parametrize("act, why", [
    ("os._exit(0)", "ended the process (exit code 0, no report)"),
    pytest.param("os.kill(os.getpid(), 11)", "crashed the process (SIGSEGV)", marks=pytest.mark.slow)])
def test_a_family_package_whose_import_ends_the_process_is_bad_input(tmp_path, act, why):
    (tmp_path / "fams" / "quits").mkdir(parents=True)
    (tmp_path / "fams" / "quits" / "__init__.py").write_text(f"import os\n{act}\n")
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "list", "--family-path", str(tmp_path / "fams")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == [f"kernel-ab: error: the import of --family-path {tmp_path / 'fams'} {why}; fix "
                                     "the package that does it or leave its folder out"]


@pytest.mark.parametrize("act, why", [
    pytest.param("os._exit(7)", "ended the process (exit code 7, no report)", marks=pytest.mark.slow),
    pytest.param("os.kill(os.getpid(), 11)", "crashed the process (SIGSEGV)", marks=pytest.mark.slow),
    pytest.param("import time; time.sleep(600)", "did not return within 5 s", marks=pytest.mark.slow)])
def test_a_git_variant_that_ends_its_process_leaves_no_tree_behind(tmp_path, act, why):
    repo = tmp_path / "repo"
    repo.mkdir()
    _op(repo, "gn", act)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the op")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r, report = _compare(tmp_path, "--repo", str(repo), "--variant", "bad=git:HEAD:gn.py::op",
                         "--variant-timeout", "5", env={**os.environ, "TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    assert _bad(report)["error"].startswith(why), _bad(report)
    assert _statuses(report) == {"torch": "pass", "ok": "pass"}
    assert list(tmp.iterdir()) == []   # no kernel-ab-byok-* tree, no status file


def test_loading_makes_its_trees_in_the_scratch_folder_the_supervisor_empties():
    from compare.model import scratch
    from variants import external
    assert external.SCRATCH_ENV == scratch.SCRATCH_ENV   # one name: loading imports no comparison code
