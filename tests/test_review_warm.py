"""A review's ops share warm processes (compare/review/command.py `_Warm`): the reviewed library is imported once
per revision in each kind of process (the review's own, its compile worker; on a GPU each dtype's timing
process: tests/test_timing_run.py), however many ops it compares; an op whose call kills its process is that
op's failure, and the other ops are still compared."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import main
from tests import warm_library

SMALL = ["--shape", "4,64", "--trials", "1", "--inputs", "normal", "--check", "numerics", "--check", "ir", "--quiet"]


def _changed_kernels(compared: list[dict]) -> dict[str, list[str]]:
    """Op -> the kernels whose compiled code its report says changed between BASE and HEAD."""
    return {c["label"]: [k["kernel"] for k in c["report"]["ir"]["kernels"] if k["status"] == "changed"]
            for c in compared}


@pytest.mark.slow
def test_a_review_of_three_ops_imports_each_revision_once_per_process_kind(tmp_path):
    log = tmp_path / "imports.log"
    repo = warm_library.make(tmp_path, log)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main.main(["review", "--repo", str(repo), "v1", "v2", *SMALL, "--json", str(tmp_path / "r.json")])
    compared = json.loads((tmp_path / "r.json").read_text())["compared"]
    assert code == 0 and [c["label"] for c in compared] == ["norm_three", "norm_two", "norm_one"]
    # each op's compiled code compared: its changed kernels (6 in all) compiled at both revisions, in one worker
    assert _changed_kernels(compared) == {"norm_three": ["_k4", "_k5", "_k6"], "norm_two": ["_k2", "_k3"],
                                          "norm_one": ["_k1"]}
    found = warm_library.imports(log)
    here, elsewhere = found.pop(os.getpid()), list(found.values())
    # this process imported each revision once (a tree per revision), the compile worker the same two: not 2 per op
    assert len(here) == 2 and len(set(here)) == 2
    assert len(elsewhere) == 1 and sorted(elsewhere[0]) == sorted(here)


@pytest.mark.slow
def test_an_op_that_aborts_its_process_fails_alone_and_the_other_ops_are_compared(tmp_path):
    log = tmp_path / "imports.log"
    repo = warm_library.make(tmp_path, log, ending="norm_two")
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_AB_ISOLATE"}
    done = subprocess.run([sys.executable, "main.py", "review", "--repo", str(repo), "v1", "v2", *SMALL,
                           "--json", str(tmp_path / "r.json")], capture_output=True, text=True, env=env,
                          cwd=Path(main.__file__).parent, timeout=600)
    assert "variant norm_two.head crashed the process (SIGABRT)" in done.stderr, done.stderr[-2000:]
    assert "left running" not in done.stderr   # the idle warm workers ended with the process, unnamed
    compared = {c["label"]: c for c in json.loads((tmp_path / "r.json").read_text())["compared"]}
    status = {label: {v["name"]: v["status"] for v in c["report"]["variants"]} for label, c in compared.items()}
    assert status == {"norm_three": {"norm_three.base": "ok", "norm_three.head": "ok"},
                      "norm_two": {"norm_two.base": "ok", "norm_two.head": "failed"},
                      "norm_one": {"norm_one.base": "ok", "norm_one.head": "ok"}}
    assert _changed_kernels([compared["norm_three"], compared["norm_one"]]) == {"norm_three": ["_k4", "_k5", "_k6"],
                                                                               "norm_one": ["_k1"]}
    # the review's process ran twice (the second without norm_two.head), each importing each revision once
    found = warm_library.imports(log)
    assert sorted(len(folders) for folders in found.values()) == [2, 2, 2, 2], found
