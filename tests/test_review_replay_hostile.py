"""An op whose call at HEAD exits its process, one whose call hangs, and an honest op, in one library: the test
that ends the recording, and the call that ends a play, are left out and named; the process starts again
without them, so the honest op is recorded, replayed and judged as if they were not there."""
from __future__ import annotations

import json
import subprocess

import pytest

from compare.review import replay_process
from compare.review.replay_process import Ended, Ran, Started
from compare.review.replay_recording import left_out, notes
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


def test_a_process_over_its_time_is_stopped_and_one_over_its_hang_time_is_named_for_what_it_ran(tmp_path):
    import time
    marker, log = tmp_path / replay_process.MARKER, tmp_path / "log"
    log.write_text("")
    slow = Started(subprocess.Popen(["sleep", "30"], start_new_session=True), log)
    assert replay_process.finish(slow, time.monotonic() + 0.3, marker, hung_s=60) == Ran(None, "", None)
    marker.write_text(json.dumps({"what": "t.py::test_a", "since": time.time() - 10, "stage": ""}))
    stuck = Started(subprocess.Popen(["sleep", "30"], start_new_session=True), log)
    assert replay_process.finish(stuck, time.monotonic() + 20, marker, hung_s=5) == Ran(
        None, "", Ended("t.py::test_a", "ran past 5 s and was stopped"))


def test_a_process_started_again_says_its_own_last_lines_not_the_earlier_ones_in_the_same_log(tmp_path):
    log = tmp_path / "play.log"
    log.write_text("Traceback of the first process\nSystemExit: 3\n")
    since = log.stat().st_size
    with log.open("a") as sink:
        again = subprocess.Popen(["sh", "-c", "echo its own line; exit 4"], stdout=sink, start_new_session=True)
    ran = replay_process.finish(Started(again, log, since), 1e12)
    assert ran == Ran(4, "its own line")


def test_a_recording_whose_last_end_is_a_named_test_says_it_once_not_again_as_its_process_end():
    assert list(notes({}, None, "", False, 120.0, named=True)) == []
    assert list(notes({}, None, "", False, 120.0)) == ["the recording ran past its 120 s limit and was stopped (its "
                                                       "calls kept)"]
    assert list(notes({}, 3, "boom", False, 120.0)) == ["the recording process ended with exit code 3: boom"]


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


@pytest.mark.slow   # about 80 s: a hang is found at half of each process's 50 s limit (room for restarts under load)
def test_an_op_that_exits_and_one_that_hangs_take_no_other_ops_calls_down(tmp_path):
    from compare.model.replay import CallFailure, Pass, ReplayVerdict, Side
    from compare.review.replay import Limits, OpToReplay, Replayer
    from compare.review.replay_render import summary
    from compare.review.revisions import Repository
    top = replay_library.commit(tmp_path / "lib", {side: {
        "hl/__init__.py": "", "hl/ops.py": OPS.format(**fill), "tests/test_ops.py": TESTS}
        for side, fill in (("BASE", BASE), ("HEAD", HEAD))})
    base, head = (subprocess.run(["git", "-C", str(top), "rev-parse", rev], capture_output=True, text=True,
                                 check=True).stdout.strip() for rev in ("HEAD~1", "HEAD"))
    replayer = Replayer(Repository(str(top)), base, head, "cpu", Limits(record_s=50, play_s=50))
    try:
        ops = {op.label: op for op in replayer.replay(
            [OpToReplay(f"hl.ops:{name}", name, "hl/ops.py", "hl.ops", name) for name in ("exits", "hangs", "honest")])}
    finally:
        replayer.close()
    assert ops["honest"].verdict == ReplayVerdict.IDENTICAL and len(ops["honest"].calls) == 1, ops["honest"]
    assert summary(ops["honest"])[1].startswith("honest: replayed (no family fits it), 1 call recorded from "
                                                "tests/test_ops.py: identical bits")
    assert ops["exits"].calls[0].failures == (CallFailure(Side.HEAD, Pass.FORWARD, "exit code 3", True),)
    assert ops["hangs"].calls[0].failures == (CallFailure(Side.HEAD, Pass.FORWARD, "ran past 25 s and was stopped",
                                                          True),)
    for label in ("exits", "hangs"):
        assert ops[label].verdict == ReplayVerdict.HEAD_FAILS
        assert f"{label}: replayed (no family fits it), 1 call recorded from tests/test_ops.py: its forward ends " \
               "the replaying process at HEAD" in summary(ops[label])[1]
        assert any(n.startswith(f"the test tests/test_ops.py::test_{label} ended the recording process")
                   for n in ops[label].notes), ops[label].notes
