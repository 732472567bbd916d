"""Sealed variants (compare/runtime/sealing.py, compare/runtime/supervisor.py, compare/processes/supervision.py): what one variant
does to its inputs or its process never changes another's result, and is reported as its own."""
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from compare.comparison import pipeline

from compare.runtime import sealing
from compare.checks import timing
from compare.runtime.backend import configure
from compare.model.headline import headline
from tests import op_package
from tests.simulated_device import CONFIG
from variants import registry

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(shape="2,8,2,16", trials=1, inputs="normal", checks=("numerics", "backward"))

PLANTED = '''\
import torch.nn.functional as F


def scales_x_and_w(X, W, B, num_channels, num_groups, eps):
    """A correct y, then X and W scaled in place: a write into the inputs no caller asked for."""
    y = F.group_norm(X, num_groups, W, B, eps)
    X.detach().mul_(2)
    W.detach().mul_(3)
    return y
'''


def _report(tmp_path, names, specs):
    request = pipeline.Request(variants=tuple(names), external=tuple(specs), **TINY)
    with pipeline.loaded(request, registry()) as (request, reg, failed):
        return pipeline.run(request, reg, configure("auto"), failed=failed)


def _by_name(case):
    return {v.variant: v for v in case.variants}


def test_sealed_copies_count_changed_bits_and_restore_in_place():
    x = torch.tensor([1.0, float("nan"), 3.0, -0.0])
    inputs = {"x": x, "seed": 0}
    copy = sealing.sealed_copy(inputs)
    assert copy["x"] is not x and copy["seed"] == 0
    assert sealing.writes(inputs, copy) == ()
    copy["x"][1] = float("nan")        # the same NaN bits again: no change
    copy["x"][3] = 0.0                 # -0.0 to +0.0: other bits, a change
    copy["x"][0] = 5.0
    (w,) = sealing.writes(inputs, copy)
    assert (w.input, w.changed, w.numel) == ("x", 2, 4)
    address = copy["x"].data_ptr()
    leaf = copy["x"].detach().requires_grad_(True)   # a leaf an op saved for its backward (shares the version)
    version = leaf._version
    sealing.restore(copy, inputs)
    assert sealing.writes(inputs, copy) == () and copy["x"].data_ptr() == address
    assert leaf._version == version   # autograd still accepts what it saved


def test_an_op_that_writes_into_dy_is_identical_to_itself_under_three_names(tmp_path):
    op_package.write(tmp_path, "grouped")
    spec = f"{tmp_path / 'normlib' / 'norm.py'}::GroupNormDyInPlace.apply"
    report = _report(tmp_path, (), [f"{n}={spec}" for n in ("a", "b", "c")])
    for case in report.numerics.cases:
        ran = _by_name(case)
        assert all(ran[n].status == "pass" for n in "abc"), case
        among = [p for p in case.pairs if {p.a, p.b} <= set("abc")]
        assert len({(p.a, p.b) for p in among}) == 3 and all(p.n_diff == 0 for p in among)
        writes = {n: {w.input for w in ran[n].writes} for n in "abc"}
        assert writes == {n: ({"dy"} if case.direction == "backward" else set()) for n in "abc"}
    head = headline(report)
    assert all(line.level == "ok" for pair in head.pairs for line in pair.lines if line.topic == "numerics")
    assert any("writes into its input in backward dy" in line for line in head.shared) and head.kept == ()


def test_the_op_that_scales_x_and_w_in_place_is_the_one_reported(tmp_path):
    (tmp_path / "planted.py").write_text(PLANTED)
    report = _report(tmp_path, ("pointer_mutation", "planted", "explicit_offset"),
                     [f"planted={tmp_path / 'planted.py'}::scales_x_and_w"])
    forward = next(c for c in report.numerics.cases if c.direction == "forward")
    ran = _by_name(forward)
    assert ran["explicit_offset"].status == ran["pointer_mutation"].status == "pass"
    assert {(w.input, w.changed) for w in ran["planted"].writes} == {("x", 2 * 8 * 16), ("weight", 8)}
    assert ran["pointer_mutation"].writes == ran["explicit_offset"].writes == ()
    same = [p for p in forward.pairs if {p.a, p.b} == {"pointer_mutation", "explicit_offset"}]
    assert same and all(p.n_diff == 0 for p in same)
    by_variant = {p.variant: p for p in headline(report).pairs}
    assert "writes into its input on normal inputs" in by_variant["planted"].lines[0].text
    assert any("writes into its input in forward x, weight" in line
               for line in by_variant["planted"].problems_introduced)
    assert any("writes into its input" in g for g in by_variant["planted"].introduced)
    assert by_variant["explicit_offset"].lines[0].level == "ok"


def test_timing_restores_a_writers_inputs_before_each_call_and_no_other_entry_sees_them(clock):
    drawn = {"dy": torch.arange(4.0)}
    seen_by_others: list[bool] = []
    writer_started_clean: list[bool] = []

    def bench_call(variant, inputs, shape, mode, buffers=None):
        def call():
            clean = torch.equal(inputs["dy"], drawn["dy"])
            if variant.name == "writer":
                writer_started_clean.append(clean)
                inputs["dy"].mul_(-1)
            else:
                seen_by_others.append(clean)
            clock.now += 1.0
        call.timed_code = variant.name
        return call
    entries = [types.SimpleNamespace(name=n) for n in ("base", "writer", "other")]
    calls, control = timing.case_calls(bench_call, entries, drawn, None, "forward", 3)
    case = timing.time_case(calls, 1000, 1.0, "S", "forward", CONFIG, control=control, inputs=drawn)
    assert seen_by_others and all(seen_by_others)
    assert writer_started_clean[1:] and all(writer_started_clean[1:])   # the first call's write is how it is found
    variants = {v.variant: v for v in case.variants}
    assert [w.input for w in variants["writer"].writes] == ["dy"] and variants["other"].writes == ()
    assert "writer wrote into its inputs" in case.note
    assert torch.equal(drawn["dy"], torch.arange(4.0))


HOSTILE = '''\
import os, signal, subprocess, sys, threading, time
import torch.nn.functional as F
{at_import}

def exits(X, W, B, num_channels, num_groups, eps):
    os._exit(0)

def raises_system_exit(X, W, B, num_channels, num_groups, eps):
    sys.exit(3)

def raises_keyboard_interrupt(X, W, B, num_channels, num_groups, eps):
    raise KeyboardInterrupt

def sleeps(X, W, B, num_channels, num_groups, eps):
    time.sleep(3600)

def is_killed(X, W, B, num_channels, num_groups, eps):
    os.kill(os.getpid(), signal.SIGKILL)

def leaves_a_thread(X, W, B, num_channels, num_groups, eps):
    threading.Thread(target=time.sleep, args=(3600,), name="stray").start()
    return F.group_norm(X, num_groups, W, B, eps)

def leaves_a_process(X, W, B, num_channels, num_groups, eps):
    subprocess.Popen(["sleep", "3600"])
    return F.group_norm(X, num_groups, W, B, eps)
'''


@pytest.mark.slow
def test_every_way_out_of_a_variant_is_its_result_and_the_others_come_out(tmp_path):
    (tmp_path / "hostile.py").write_text(HOSTILE.format(at_import=""))
    (tmp_path / "exits_at_import.py").write_text(HOSTILE.format(at_import="os._exit(7)"))
    names = ("exits", "raises_system_exit", "raises_keyboard_interrupt", "sleeps", "is_killed", "leaves_a_thread",
             "leaves_a_process")
    specs = [f"--variant={n}={tmp_path / 'hostile.py'}::{n}" for n in names]
    specs.append(f"--variant=on_import={tmp_path / 'exits_at_import.py'}::exits")
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "pointer_mutation", *specs, "--shape", "2,8,2,16",
                        "--check", "numerics", "--inputs", "normal", "--trials", "1", "--quiet", "--variant-timeout",
                        "3", "--fail-on-numerics", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 1, r.stderr            # the gate fails: variants failed; the report came out
    assert "Traceback" not in r.stderr + r.stdout
    report = json.loads(out.read_text())
    failed = {v["name"]: v["error"] for v in report["variants"] if v["status"] == "failed"}
    assert failed["exits"].startswith("ended the process (exit code 0, no report) while running numerics forward")
    assert failed["on_import"].startswith("ended the process (exit code 7, no report) while running import of")
    assert failed["sleeps"].startswith("did not return within 3 s (--variant-timeout)")
    assert failed["is_killed"].startswith("crashed the process (SIGKILL")
    (case,) = report["numerics"]["cases"]
    status = {v["variant"]: (v["status"], v["reasons"]) for v in case["variants"]}
    assert status["pointer_mutation"][0] == status["leaves_a_thread"][0] == status["leaves_a_process"][0] == "pass"
    assert status["raises_system_exit"] == ("error", ["SystemExit: 3"])
    assert status["raises_keyboard_interrupt"][0] == "error"
    assert any(line.startswith("leaves_a_thread left thread 'stray'") for line in report["incidents"])
    assert any(line.startswith("leaves_a_process left process sleep") for line in report["incidents"])
    assert "kernel-ab: stopped what the run left running: sleep" in r.stderr
    assert not subprocess.run(["pgrep", "-f", "sleep 3600"], capture_output=True).stdout
