"""A review's time budget (`--budget`), its order and `--op`, and the dtypes it compares by default: ops are
compared most changed first, the one running when the budget runs out is stopped and reports what finished,
the rest are listed as left out in every renderer; on a GPU float32 and bfloat16, on the CPU float32."""
from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import types

import pytest
import torch

import main
from compare.model.budget import BudgetUse, Cut, DtypesLeftOut, LeftOut
from compare.review import budget as budgets, command
from compare.review.ops_changed import Change, What
from compare.review.replay import share
from compare.runtime.backend import Backend
from compare.runtime.deadline import deadline
from compare.runtime.supervisor import OutOfTime
from tests import budget_library
from tests.review_repo import make_repo

SMALL = ["--shape", "4,64", "--check", "numerics", "--trials", "1", "--inputs", "normal", "--quiet"]


class _Clock:
    """Seconds that pass only when a comparison ends (`step` each), never with the wall clock."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now


def _on_clock(monkeypatch, clock: _Clock) -> list[str]:
    """Reviews from now count `clock`'s seconds; each real comparison advances it. The labels compared, in order."""
    real_budget, real_compare, order = budgets.Budget, command._compare, []
    monkeypatch.setattr(budgets, "Budget", lambda seconds, started=None: real_budget(seconds, 0.0, clock))

    def compare_then_tick(target, label, *more, **named):
        order.append(label)
        try:
            return real_compare(target, label, *more, **named)
        finally:
            clock.now += clock.step
    monkeypatch.setattr(command, "_compare", compare_then_tick)
    return order


def _review(repo, out, *more: str, revisions=("v1", "v2")) -> tuple[int, dict, str, str, str]:
    """(exit code, --json, --markdown, stdout (the terminal's report), stderr) of an in-process review."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main.main(["review", "--repo", str(repo), *revisions, *more, "--json", str(out / "r.json"),
                          "--markdown", str(out / "r.md")])
    data = json.loads((out / "r.json").read_text()) if (out / "r.json").exists() else {}
    md = (out / "r.md").read_text() if (out / "r.md").exists() else ""
    return code, data, md, stdout.getvalue(), stderr.getvalue()


# ---------------------------------------------------------------- order, shares, defaults
def test_ops_are_ordered_by_changed_kernel_code_then_by_their_other_changes():
    kernel, helper = (lambda n: What(Change.KERNEL, n)), (lambda n: What(Change.CONSTANT, n))
    ops = {"a": (kernel("k1"), helper("C")), "b": (kernel("k2"), kernel("k3")), "c": (helper("D"),),
           "d": (kernel("k4"), What(Change.KERNEL_ADDED, "k5"), helper("E")), "e": (kernel("k6"),)}
    assert budgets.change_size(ops["d"]) == (2, 1)
    assert budgets.most_changed_first(list(ops), ops.get) == ["d", "b", "a", "e", "c"]


def test_a_recording_stopped_by_its_share_of_the_budget_says_the_share_and_one_past_its_own_limit_says_that():
    from compare.review.replay_recording import notes
    [shared] = notes({}, None, "", True, 17.6)
    assert shared.startswith("the recording was stopped at its share of the review's time budget (18 s;")
    [own] = notes({}, None, "", False, 240.0)
    assert own == "the recording ran past its 240 s limit and was stopped (its calls kept)"


def test_each_replay_process_gets_its_own_limit_or_its_share_of_what_the_budget_leaves():
    assert share(240.0, 3000.0, 3) == (240.0, False)
    assert share(240.0, 90.0, 3) == (30.0, True)
    assert share(75.0, -4.0, 2) == (0.0, True)


def test_on_a_gpu_float32_and_bfloat16_are_compared_by_default_on_the_cpu_float32_and_asked_dtypes_as_given():
    from variants import registry
    family = registry().family("rms_norm")
    assert budgets.dtypes(None, True, family) == ("float32,bfloat16", None)
    dtype, left = budgets.dtypes(None, False, family)
    assert dtype == "float32" and left.line() == "bfloat16 not compared on the CPU: --dtype float32,bfloat16 adds it"
    assert budgets.dtypes("float16", True, family) == ("float16", None)
    assert budgets.dtypes("float32", False, family) == ("float32", None)
    own = types.SimpleNamespace(name="f32only", dtypes={"float32": torch.float32})
    dtype, left = budgets.dtypes(None, True, own)
    assert dtype == "float32" and left.line() == "bfloat16 not compared in family f32only (it has no bfloat16)"


def test_a_review_on_a_gpu_asks_its_ops_comparison_for_float32_and_bfloat16(tmp_path, monkeypatch):
    """The simulated GPU backend's request, as the review hands it to compare's pipeline (not run here)."""
    from variants import registry
    from compare.review.revisions import Repository
    asked = []

    def keep_request(target, label, request, *_, **__):
        asked.append(request)
        return command.Compared(target, label, None, "the test keeps the request")
    monkeypatch.setattr(command, "_compare", keep_request)
    repo = make_repo(tmp_path, False)
    reviewed = Repository(repo)
    found = command.changes(reviewed, reviewed.commit("v1", "BASE"), reviewed.commit("v2", "HEAD"))
    [target], _, _ = command.mapping.plan(found, {}, registry().families)
    for argv, backend, dtype in ((["--budget", "60"], Backend("cuda", False, "simulated"), "float32,bfloat16"),
                                 ([], Backend("cpu", True, ""), "float32"),
                                 (["--dtype", "float16"], Backend("cuda", False, "simulated"), "float16")):
        args = main._parser("main.py").parse_args(["review", "v1", "v2", "--repo", str(repo), "--quiet", *argv])
        work = command._Work(args, registry(), backend, budgets.Budget(60.0), str(repo))
        work.compare(target, "RMSNormFunction", "v1", "v2")
        assert asked[-1].dtype == dtype
        assert bool(work.dtypes_left_out) == (dtype == "float32")


def test_a_budget_that_is_no_positive_number_of_seconds_is_refused_in_one_line(tmp_path, capsys):
    repo = make_repo(tmp_path, False)
    for bad in ("0", "-5", "nan"):
        assert main.main(["review", "--repo", str(repo), "v1", "v2", "--budget", bad, *SMALL]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--budget" in err and "positive number of seconds" in err
    assert budgets.seconds(None, gpu=True) < 60 < budgets.seconds(None, gpu=False)


# ---------------------------------------------------------------- the deadline
def test_a_deadline_stops_running_code_and_is_put_off_until_an_import_ends(tmp_path):
    with pytest.raises(OutOfTime, match="out of time"):
        with deadline(0.05, "out of time"):
            while True:
                sum(range(1000))
    (tmp_path / "slow_to_import_budget.py").write_text("import time\ntime.sleep(0.4)\nDONE = True\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(OutOfTime):
            with deadline(0.05, "out of time"):
                import slow_to_import_budget   # noqa: F401 - imported whole, then stopped
                while True:
                    sum(range(1000))
        assert sys.modules["slow_to_import_budget"].DONE
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("slow_to_import_budget", None)
    with deadline(5.0, "out of time"):
        pass
    import signal
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)   # disarmed at the block's end


# ---------------------------------------------------------------- reviews of the test library
def test_the_budget_compares_the_most_changed_ops_first_and_lists_the_rest_as_left_out(tmp_path, monkeypatch):
    repo = budget_library.make(tmp_path)
    order = _on_clock(monkeypatch, _Clock(step=600.0))
    code, data, md, terminal, err = _review(repo, tmp_path, "--budget", "1000", "--fail-on-numerics", *SMALL)
    assert order == ["norm_three", "norm_two"]   # the third op's turn came after 1200 of the 1000 s
    assert [c["label"] for c in data["compared"]] == order and not any(c["stopped"] for c in data["compared"])
    assert data["left_out"] == [{"op": "normlib.norms:norm_one", "label": "norm_one", "cut": "time budget"}]
    use = BudgetUse.made(1000.0, 1200.0, 2, 1)
    assert data["budget"] == {"seconds": 1000.0, "used": 1200.0, "suggested": use.suggested}
    first = data["lines"][0]["text"]
    assert first.startswith("3 ops changed") and first.endswith(
        "2 compared: norm_three, norm_two; 1 left out by the time budget")
    said = use.line(LeftOut("normlib.norms:norm_one", "norm_one", Cut.TIME_BUDGET))
    assert said == f"norm_one: not compared: time budget; --budget {use.suggested} or --op norm_one compares it"
    assert {"level": "warn", "text": said} in data["lines"]
    assert said in md and first in md
    assert "norm_one: not compared: time budget" in " ".join(terminal.split())
    assert {"level": "info", "text": DtypesLeftOut(("bfloat16",), "on the CPU", "float32,bfloat16").line()} \
        in data["lines"]
    assert code == 1 and "review could not judge: normlib.norms:norm_one changed and was not compared" in err


def test_a_pull_request_of_thirty_ops_ends_within_its_budget_with_every_op_compared_or_left_out(tmp_path, monkeypatch):
    repo = budget_library.make_many(tmp_path, 30)
    order = _on_clock(monkeypatch, _Clock(step=40.0))
    code, data, md, terminal, _ = _review(repo, tmp_path, "--budget", "100", *SMALL)
    left = [op["label"] for op in data["left_out"]]
    assert code == 0 and len(order) == 3 and [c["label"] for c in data["compared"]] == order
    assert sorted(order + left) == [f"op_{i:02d}" for i in range(1, 31)] and len(left) == 27
    assert {op["cut"] for op in data["left_out"]} == {"time budget"}
    assert all(f"{label}: not compared: time budget" in md for label in left)
    assert data["lines"][0]["text"].endswith("3 compared: " + ", ".join(order) + "; 27 left out by the time budget")


def test_op_compares_only_the_named_ops_and_says_the_others_in_one_line(tmp_path, capsys):
    repo = budget_library.make(tmp_path)
    code, data, md, _, _ = _review(repo, tmp_path, "--op", "norm_one", "--op", "normlib.norms:norm_two", *SMALL)
    assert code == 0 and [c["label"] for c in data["compared"]] == ["norm_two", "norm_one"]
    assert data["left_out"] == [{"op": "normlib.norms:norm_three", "label": "norm_three", "cut": "not named by --op"}]
    line = "1 other changed op not compared (not named by --op): norm_three"
    assert {"level": "info", "text": line} in data["lines"] and line in md
    assert main.main(["review", "--repo", str(repo), "v1", "v2", "--op", "norm_four", *SMALL]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--op norm_four" in err and "norm_one, norm_three, norm_two" in err


def test_the_op_running_when_the_budget_runs_out_is_stopped_and_reports_what_finished(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, False)
    _on_clock(monkeypatch, _Clock(step=0.0))   # no second passes but the deadline's own
    code, data, md, terminal, err = _review(repo, tmp_path, "--budget", "0.5", "--fail-on-numerics", "--quiet")
    [compared] = data["compared"]
    assert compared["stopped"] and compared["label"] == "RMSNormFunction"
    if compared["report"] is not None:   # stopped in its checks: what finished, and what did not, said
        stop = (compared["report"].get("interrupted") or {}).get("stop", "")
        assert "time budget (0.5 s) ran out" in stop or \
            any("time budget (0.5 s) ran out" in s["why"] for s in compared["report"]["skipped"])
    assert data["lines"][0]["text"].endswith("0 compared: none; 1 stopped by the time budget: RMSNormFunction")
    said = "RMSNormFunction: stopped when the time budget (0.5 s) ran out; what finished is reported"
    assert any(line["text"].startswith(said) for line in data["lines"]) and said in md
    assert said in " ".join(terminal.split())
    assert code == 1 and "the time budget stopped its comparison" in err


@pytest.mark.slow
def test_a_budget_spent_during_the_replay_stops_its_processes_and_no_call_is_taken_for_a_failure(tmp_path):
    """Wherever the budget runs out (the recording, a play), each op is compared on the calls both sides ran,
    or said to be stopped with how to compare it whole; a call the budget cut is no side's failure."""
    from tests import replay_library
    top = replay_library.make(tmp_path)
    code, data, md, _, _ = _review(top, tmp_path, "--budget", "12", "--quiet", revisions=("HEAD~1", "HEAD"))
    ops = {op["label"]: op for op in data["replayed"]}
    assert code == 0 and data["budget"]["seconds"] == 12.0
    # where the budget falls depends on the machine's speed: what must hold wherever it falls is asserted below
    assert ops and data["budget"]["used"] >= 0
    for label, op in ops.items():
        failures = [f for c in op["calls"] for f in c["failures"]]
        assert all(f["error"] != "the replaying process ended before this call" for f in failures), label
        if op["stopped"]:
            hint = f"--budget {data['budget']['suggested']} or --op {label} compares it whole"
            # replayed in part, or not at all ("X: changed, not compared: no family fits it, and the ... budget ran out")
            assert any(line["text"].startswith(f"{label}: ") and hint in line["text"] for line in data["lines"])
            assert hint in md
        # a recording the budget stopped says the share it had, which is within the budget
        shares = [re.search(r"the recording was stopped at its share of the review's time budget \((\d+) s;", n)
                  for n in op["notes"] if n.startswith("the recording was stopped")]
        assert all(m is not None and int(m.group(1)) <= 12 for m in shares), op["notes"]
