"""An op whose call at HEAD exits its process, one whose call hangs, and an honest op, in one library: the test
that ends the recording, and the call that ends a play, are left out and named; the process starts again
without them, so the honest op is recorded, replayed and judged as if they were not there."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compare.review import replay_process
from compare.review.replay_process import Ended, Ran
from compare.review.replay_recording import left_out
from tests import replay_library

OPS = '''\
import os, time
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) + {one}, mask=offs < n)


def _run(x):
    y = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


def exits(x):
{exits}    return _run(x) * 2


def hangs(x):
{hangs}    return _run(x) * 3


def honest(x):
    return _run(x)
'''
TESTS = "import torch\nfrom hl.ops import exits, hangs, honest\n\n" + "".join(
    f"\ndef test_{name}():\n    assert {name}(torch.ones(100)).sum() > 0\n\n" for name in ("exits", "hangs", "honest"))
BASE = {"one": "1.0", "exits": "", "hangs": ""}
HEAD = {"one": "(0.5 + 0.5)", "exits": "    os._exit(3)\n", "hangs": "    while True:\n        time.sleep(1)\n"}


def test_what_a_process_ended_in_is_read_from_its_marker(tmp_path):
    marker = tmp_path / replay_process.MARKER
    marker.write_text(json.dumps({"what": "t.py::test_a", "since": 1.0, "stage": ""}))
    assert replay_process.ended_in(Ran(3, ""), marker) == Ended("t.py::test_a", "exit code 3")
    assert replay_process.ended_in(Ran(-11, ""), marker) == Ended("t.py::test_a", "SIGSEGV")
    assert replay_process.ended_in(Ran(0, ""), marker) is None           # it ended well
    assert replay_process.ended_in(Ran(None, ""), marker) is None        # stopped at its limit, no hang
    marker.write_text(json.dumps({"what": "", "since": 0, "stage": ""}))
    assert replay_process.ended_in(Ran(3, ""), marker) is None           # ended outside any test
    hung = Ended("call_1.pt", "ran past 5 s and was stopped", "backward")
    assert replay_process.ended_in(Ran(None, "", hung), marker) == hung


def test_a_play_goes_on_after_the_call_that_ended_it_with_the_calls_not_played(tmp_path):
    (tmp_path / "played_0.pt").write_text("")
    go = {"ops": [{"module": "m", "name": "a", "calls": ["call_0.pt", "call_1.pt"]},
                  {"module": "m", "name": "b", "calls": ["call_2.pt", "call_3.pt"]}]}
    assert replay_process._after(go, "call_1.pt", tmp_path) == {
        "ops": [{"module": "m", "name": "a", "calls": []}, {"module": "m", "name": "b", "calls": ["call_2.pt", "call_3.pt"]}]}


def test_a_test_that_ended_the_recording_is_said_for_the_op_whose_call_it_was_in():
    found = {"calls": [{"op": "m:a", "test": "t.py::test_a", "result": {}},
                       {"op": "m:b", "test": "t.py::test_b"}]}
    assert left_out(found, [Ended("t.py::test_b", "exit code 3"), Ended("t.py::test_c", "SIGKILL")]) == [
        "m:b: the test t.py::test_b ended the recording process (exit code 3) in a call of it, kept; the other "
        "tests were recorded again without it",
        "the test t.py::test_c ended the recording process (SIGKILL); the other tests were recorded again without it"]


@pytest.mark.slow   # about 60 s: a hang is found at half of each process's share of the 60 s budget
def test_an_op_that_exits_and_one_that_hangs_take_no_other_ops_calls_down(tmp_path):
    top = replay_library.commit(tmp_path / "lib", {side: {
        "hl/__init__.py": "", "hl/ops.py": OPS.format(**fill), "tests/test_ops.py": TESTS}
        for side, fill in (("BASE", BASE), ("HEAD", HEAD))})
    out = tmp_path / "review.json"
    r = subprocess.run([sys.executable, "main.py", "review", "HEAD~1", "HEAD", "--repo", str(top), "--budget", "60",
                        "--quiet", "--json", str(out)], capture_output=True, text=True, timeout=300,
                       cwd=Path(__file__).resolve().parents[1])
    ops = {op["label"]: op for op in json.loads(out.read_text())["replayed"]}
    said = " ".join(r.stdout.split())
    assert ops["honest"]["verdict"] == "identical" and len(ops["honest"]["calls"]) == 1, r.stdout + r.stderr
    for label, how in (("exits", "exit code 3"), ("hangs", "and was stopped")):
        [call] = ops[label]["calls"]
        [failure] = call["failures"]
        assert failure["side"] == "HEAD" and failure["ended_process"] and how in failure["error"], failure
        assert ops[label]["verdict"] == "fails at HEAD only"
        assert f"{label}: replayed (no family fits it), 1 call recorded from tests/test_ops.py: its forward ends " \
               "the replaying process at HEAD" in said
        assert any(f"the test tests/test_ops.py::test_{label} ended the recording process" in n
                   for n in ops[label]["notes"])
    assert "honest: replayed (no family fits it), 1 call recorded from tests/test_ops.py: identical bits" in said
