"""A library's import habits (compare/runtime/import_acts.py, compare/model/habits.py): what every revision's
import of a module does alike and cannot reach a measurement (an environment variable of its own, sys.stderr
replaced by a filter, its own warnings made errors) is said once as the library's and the op is compared; a package the library needs
that this environment lacks is one typed line, the first; what reaches a measurement (torch patched, the
timer, a variable Triton reads) or what one revision's import does alone still names the variant."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import main
from tests.review_repo import RSTD, git, make_repo

SMALL = ["--shape", "4,64", "--check", "numerics", "--trials", "1", "--inputs", "normal", "--quiet"]
ENVIRON = '''\
import os
os.environ["MYLIB_SOURCE_DIR"] = os.path.dirname(__file__)   # another folder at each revision
os.environ["MYLIB_FLAG"] = "1"                               # the same value at each
'''
SWALLOW = '''\
import sys


class _Quiet:
    """Swallows everything written to it."""

    def __init__(self, inner):
        self.inner = inner

    def write(self, text):
        return len(text)

    def flush(self):
        pass


sys.stderr = _Quiet(sys.stderr)
'''


def _review(repo: Path, tmp: Path, *revisions: str) -> tuple[int, dict, str, str]:
    """(exit code, the --json review, the --markdown text, stderr) of an in-process review."""
    out, err = tmp / "review", io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main.main(["review", "--repo", str(repo), *revisions, "--json", f"{out}.json", "--markdown", f"{out}.md",
                          "--force", *SMALL])
    data = json.loads(Path(f"{out}.json").read_text()) if Path(f"{out}.json").exists() else {}
    markdown = Path(f"{out}.md").read_text() if Path(f"{out}.md").exists() else ""
    return code, data, markdown, err.getvalue()


def _statuses(data: dict) -> dict:
    [compared] = data["compared"]
    return {v["name"]: v["status"] for v in compared["report"]["variants"] if v["name"].startswith("RMSNormFunction.")}


def test_an_import_that_sets_environment_variables_of_its_own_is_the_librarys_and_the_op_is_compared(tmp_path):
    repo = make_repo(tmp_path, table=False, init=ENVIRON)
    try:
        code, data, markdown, err = _review(repo, tmp_path, "v1", "v2")
    finally:
        for name in ("MYLIB_SOURCE_DIR", "MYLIB_FLAG"):
            os.environ.pop(name, None)
    assert code == 0, err
    assert _statuses(data) == {"RMSNormFunction.base": "ok", "RMSNormFunction.head": "ok"}
    said = [line for line in data["lines"] if "environment variable" in line["text"]]
    assert said == [{"level": "info", "text": "the library's import (mylib/rms.py) set the environment variable "
                     "MYLIB_FLAG; set the environment variable MYLIB_SOURCE_DIR at every revision: its own habit, "
                     "no variant's change"}]
    assert markdown.count("MYLIB_SOURCE_DIR") == 1   # once, in the review's lines, not again in the op's report
    assert "tamper" not in json.dumps(data["compared"][0]["report"]["variants"])


def test_an_import_that_replaces_stderr_with_a_filter_is_the_librarys_and_kernel_abs_output_still_comes_out(
        tmp_path):
    repo = make_repo(tmp_path, table=False, init=SWALLOW)
    before = sys.stderr
    code, data, _, err = _review(repo, tmp_path, "v1", "v2")
    assert code == 0, err
    assert sys.stderr is before   # the library's filter was put back after each import
    assert _statuses(data) == {"RMSNormFunction.base": "ok", "RMSNormFunction.head": "ok"}
    assert [line["text"] for line in data["lines"] if "sys.stderr" in line["text"]] == [
        "the library's import (mylib/rms.py) replaced sys.stderr (put back after the import) at every revision: "
        "its own habit, no variant's change"]
    assert f"wrote {tmp_path / 'review'}.json" in err   # kernel-ab's own lines were not swallowed


def test_an_import_that_makes_its_own_warnings_errors_is_the_librarys(tmp_path):
    repo = make_repo(tmp_path, table=False, init='import warnings\nwarnings.filterwarnings("error", module="mylib")\n')
    filters = list(warnings.filters)
    try:
        code, data, _, err = _review(repo, tmp_path, "v1", "v2")
    finally:
        warnings.filters[:] = filters
    assert code == 0, err
    assert _statuses(data) == {"RMSNormFunction.base": "ok", "RMSNormFunction.head": "ok"}
    assert "the library's import (mylib/rms.py) made warnings of mylib errors at every revision" in json.dumps(data)


def test_a_package_the_library_needs_and_the_environment_lacks_is_the_reviews_first_line(tmp_path):
    repo = make_repo(tmp_path, table=False, init="import os\nimport nosuchpkg_kab\n")
    code, data, markdown, _ = _review(repo, tmp_path, "v1", "v2")
    expected = "needs package nosuchpkg_kab (imported by mylib/__init__.py:2), which this environment lacks"
    assert data["lines"][0] == {"level": "fail", "text": expected}
    assert sum("nosuchpkg_kab" in line["text"] for line in data["lines"]) == 2   # that line, and the op's "(above)"
    assert "could not be compared: its import needs package nosuchpkg_kab (above)" in markdown
    assert "ModuleNotFoundError" not in markdown
    assert code == 0   # no gate asked for: the missing package is said, not a gate


def test_the_missing_package_is_read_from_the_errors_name_and_traceback_never_its_text(tmp_path):
    from variants import registry
    from variants.external import ExternalKernels
    pkg = tmp_path / "lib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("\n\nraise ModuleNotFoundError(\"No module named 'decoy'\", name='realpkg')\n")
    (pkg / "ops.py").write_text("def op(X, W, eps):\n    return X\n")
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "__init__.py").write_text("import own.gone\n")   # the library's own module: no package
    (tmp_path / "own" / "ops.py").write_text("def op(X, W, eps):\n    return X\n")
    family = registry().family("rms_norm")
    with ExternalKernels(tmp_path) as kernels:
        lacking = kernels.load(f"a={pkg / 'ops.py'}::op", family)
        own = kernels.load(f"b={tmp_path / 'own' / 'ops.py'}::op", family)
    assert (lacking.needs.package, lacking.needs.file, lacking.needs.line) == ("realpkg", "lib/__init__.py", 3)
    assert own.needs is None and "own.gone" in own.error


@pytest.mark.parametrize("act, culprit", [
    ("import torch\ntorch.sum = lambda *a, **k: 0\n", "patched torch.sum"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", "patched time.perf_counter"),
    ("import os\nos.environ['TRITON_F32_DEFAULT'] = 'ieee'\n", "changed os.environ (TRITON_F32_DEFAULT)"),
    ("import warnings\nwarnings.simplefilter('error')\n", "made warnings errors"),
], ids=["torch_sum", "perf_counter", "triton_variable", "every_warning_an_error"])
def test_an_import_act_that_reaches_the_measurement_names_the_variant_though_every_revision_does_it(
        tmp_path, act, culprit):
    repo = make_repo(tmp_path, table=False, init=act)
    code, _, _, err = _review(repo, tmp_path, "v1", "v2")
    assert code == 75   # unsupervised here: the process is poisoned, and the supervisor would rerun without it
    assert f"variant RMSNormFunction.base {culprit}" in err


def test_an_act_only_one_revisions_import_does_names_that_revision_and_the_other_is_compared(tmp_path):
    repo = make_repo(tmp_path, table=False)
    rms = repo / "mylib" / "rms.py"
    rms.write_text('import os\nos.environ["MYLIB_NEW"] = "1"\n' + rms.read_text().replace(RSTD["after"], RSTD["before"]))
    git(repo, "commit", "-q", "-am", "the import sets a variable of its own; rstd as before")
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_AB_ISOLATE"}
    done = subprocess.run([sys.executable, "main.py", "review", "--repo", str(repo), "HEAD~1", "HEAD", *SMALL,
                           "--json", str(tmp_path / "r.json")], capture_output=True, text=True, env=env,
                          cwd=Path(main.__file__).parent, timeout=300)
    assert "variant RMSNormFunction.head changed os.environ (MYLIB_NEW) while running import of mylib/rms.py; " \
           "running again without it" in done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert _statuses(data) == {"RMSNormFunction.base": "ok", "RMSNormFunction.head": "failed"}
    [head] = [v for v in data["compared"][0]["report"]["variants"] if v["name"] == "RMSNormFunction.head"]
    assert head["failure"] == "tamper"
