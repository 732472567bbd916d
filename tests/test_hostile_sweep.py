"""benchmarks/hostile_sweep.py without running it: the invocations it makes, the hostile files it
writes, and how it classifies what an invocation did (synthetic outcomes)."""
from collections import Counter

import pytest
import torch

from benchmarks import hostile_cases as hc
from benchmarks import hostile_variants as hv
from benchmarks.hostile_classify import classify, primary
from benchmarks.hostile_sweep import make_files


def test_the_sweep_makes_at_least_300_distinct_invocations_in_every_category():
    cases = hc.all_cases()
    assert len(cases) >= 300
    assert len({c.key() for c in cases}) == len(cases) and len({c.id for c in cases}) == len(cases)
    per = Counter(c.category for c in cases)
    assert set(per) == set(hc.CATEGORIES) and min(per.values()) >= 50, per


def test_the_hostile_cases_try_every_act_at_every_place_and_every_mutation_in_every_family():
    files = [spec for c in hc.hostile_cases() for spec in c.files.values()]
    places = {(s[2], s[3]) for s in files if s[0] == "op"}
    assert {(a, p) for a in hv.ACTS for p in hv.PLACES} <= places
    for family in hc.FAMILIES:
        mine = {s[2] for s in files if s[1] == family}
        assert set(hv.MUTATIONS) | set(hv.WRONG_RETURNS) | set(hv.KERNEL_ACTS) <= mine
    harmless = [c for c in hc.hostile_cases() if not c.must_flag]
    assert harmless and all(any(a in c.id for a in hv.HARMLESS_ACTS) for c in harmless)


def test_signals_go_to_the_process_and_its_group_at_each_moment():
    sent = {tuple(c.signal) for c in hc.signal_cases()}
    assert {(s, t, d) for s in hc.SIGNALS for t in ("process", "group") for d in (0.3, 1.0, 3.0)} <= sent


def test_the_variant_timeout_flag_is_passed_only_where_the_tool_has_it():
    without = hc.hostile_cases(frozenset({"--json"}))
    with_flag = hc.hostile_cases(frozenset({"--json", "--variant-timeout"}))
    assert not any("--variant-timeout" in c.argv for c in without)
    assert all(c.argv[-2:] == ["--variant-timeout", hc.VARIANT_TIMEOUT] for c in with_flag)


def test_every_hostile_file_the_sweep_writes_is_python(tmp_path):
    params = {f: [("Y_ptr", False), ("X_ptr", False), ("BLOCK_SIZE", True)] for f in hc.FAMILIES}
    for n, case in enumerate(c for c in hc.all_cases() if any(s[0] in ("op", "kernel") for s in c.files.values())):
        make_files(case, tmp_path / str(n), tmp_path, params)
        for rel, spec in case.files.items():
            text = (tmp_path / str(n) / rel).read_text()
            compile(text, rel, "exec")
            if spec[0] == "op":   # the spec's fields land where op_source takes them, unnamed ones at their defaults
                family, act, place, statement, when, returns = (spec[1:] + [None] * 3)[:6]
                assert text == hv.op_source(family, act, place, statement=statement or "", when=when or "before",
                                            returns=returns or "y")


ARGS = {"group_norm": lambda X, W, B: (X, W, B, 4, 2, 1e-5), "layer_norm": lambda X, W, B: (X, W, B, 1e-5),
        "rms_norm": lambda X, W, B: (X, W, 1e-6, 1.0, "gemma")}
TORCH = {"group_norm": lambda X, W, B: torch.nn.functional.group_norm(X, 2, W, B, 1e-5),
         "layer_norm": lambda X, W, B: torch.nn.functional.layer_norm(X, (X.shape[-1],), W, B, 1e-5),
         "rms_norm": lambda X, W, B: X * torch.rsqrt(X.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + W)}


@pytest.mark.parametrize("family", hc.FAMILIES)
def test_the_hostile_op_is_correct_but_for_its_act_which_it_reaches(family):
    def op(place, statement):
        namespace = {}
        exec(hv.op_source(family, "probe", place, statement=statement), namespace)
        return namespace["op"]

    g = torch.Generator().manual_seed(0)
    x = torch.randn(*((2, 4, 3) if family == "group_norm" else (3, 8)), dtype=torch.float64, generator=g)
    w, b = (torch.randn(x.shape[1], dtype=torch.float64, generator=g) for _ in range(2))
    grads = []
    for fn in (lambda *t: op("forward", "pass")(*ARGS[family](*t)), TORCH[family]):
        leaves = [t.clone().requires_grad_() for t in (x, w, b)]
        y = fn(*leaves)
        y.backward(torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape))
        grads.append([y] + [t.grad for t in leaves[:2]])
    for mine, torch_s in zip(*grads):
        torch.testing.assert_close(mine, torch_s)
    with pytest.raises(RuntimeError, match="reached at forward"):
        op("forward", "raise RuntimeError('reached at forward')")(*ARGS[family](x, w, b))
    y = op("backward", "raise RuntimeError('reached at backward')")(*ARGS[family](x.requires_grad_(), w, b))
    with pytest.raises(RuntimeError, match="reached at backward"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="reached at import"):
        op("import", "raise RuntimeError('reached at import')")


def _case(expect, **kw):
    return hc.Case("synthetic", "values", ["compare"], expect, **kw)


REPORT = {"schema_version": 2,
          "variants": [{"name": "good", "status": "ok", "error": ""},
                       {"name": "bad", "status": "failed", "error": "os._exit(7) while running forward"}],
          "numerics": {"cases": [{"direction": d, "variants": [{"variant": "good", "status": "pass"}]}
                                 for d in ("forward", "backward")]}}


def _report_case(**kw):
    return _case("report", good="good", hostile="bad", must_flag=True, **kw)


@pytest.mark.parametrize("expect_case, outcome, expected", [
    (_case("usage_error"), {"rc": 2, "stderr": "kernel-ab: error: --trials must be at least 1\n", "seconds": 1}, "ok"),
    (_case("usage_error"), {"rc": 1, "stderr": "Traceback (most recent call last):\n  ...\nValueError\n"}, "traceback"),
    (_case("usage_error"), {"rc": 0, "stderr": "", "stdout": "a report", "seconds": 9}, "wrong_exit"),
    (_case("usage_error"), {"rc": 2, "stderr": "kernel-ab: error: x\n", "seconds": 99}, "other"),
    (_case("usage_error"), {"timed_out": True, "rc": -9, "leftovers": ["$TMPDIR/kernel-ab-status-x"]}, "hang"),
    (_case("refused"), {"rc": 0, "stderr": "wrote x\n", "changed": {"precious.json": "bytes changed"}},
     "file_destroyed"),
    (_case("refused"), {"rc": 2, "stderr": "kernel-ab: error: x\n", "leftovers": ["same"]}, "leftover_file"),
    (_case("written", written=["a.json"]), {"rc": 0, "written": {"a.json": {"exists": True, "valid": True,
                                                                          "new_inode": True}}}, "ok"),
    (_case("written", written=["a.json"]), {"rc": 0, "written": {"a.json": {"exists": True, "valid": True,
                                                                          "new_inode": False}}}, "other"),
    (_case("written", written=["a.json"]), {"rc": 0, "written": {"a.json": {"exists": True, "valid": False}}},
     "file_destroyed"),
    (_report_case(), {"rc": 0, "report": REPORT}, "ok"),
    (_report_case(), {"rc": 0, "report": REPORT, "orphans": ["pid 7: sleep 600"]}, "orphan"),
    (_report_case(), {"rc": 7, "report": None, "report_error": "missing"}, "no_report"),
    (_report_case(), {"rc": 0, "report": {**REPORT, "numerics": {"cases": REPORT["numerics"]["cases"][:1]}}},
     "no_report"),
    (_report_case(), {"rc": 0, "report": {**REPORT, "numerics": {"cases": [
        {"direction": d, "variants": [{"variant": "good", "status": "fail"}]} for d in ("forward", "backward")]}}},
     "wrong_verdict"),
    (_report_case(), {"rc": 0, "report": {**REPORT, "variants": [REPORT["variants"][0],
                                                                {"name": "bad", "status": "ok", "error": ""}]}},
     "wrong_verdict"),
    (_report_case(), {"rc": 0, "report": {**REPORT, "numerics": {"cases": [  # the hostile one's write reached torch
        {"direction": d, "variants": [{"variant": "good", "status": "pass"}, {"variant": "bad", "status": "pass"},
                                      {"variant": "torch", "status": "fail" if d == "forward" else "pass"}]}
        for d in ("forward", "backward")]}}}, "wrong_verdict"),
    (_report_case(expect_rc=1), {"rc": 0, "report": REPORT}, "wrong_exit"),
    (_case("signal", signal=["SIGINT", "group", 1.0]), {"rc": 130, "stderr": "kernel-ab: interrupted\n"}, "ok"),
    (_case("signal", signal=["SIGHUP", "group", 1.0]), {"rc": -1, "stderr": "kernel-ab: hung up\n"}, "ok"),
    (_case("signal", signal=["SIGTERM", "process", 1.0]), {"rc": 0, "stderr": "kernel-ab: terminated\n"},
     "wrong_exit"),
    (_case("signal", signal=["SIGTERM", "process", 1.0]), {"rc": 143, "stderr": ""}, "other"),
    (_case("usage_error"), {"setup_error": "no fixture"}, "other"),
])
def test_the_classifier_names_what_went_wrong(expect_case, outcome, expected):
    assert primary(classify(expect_case, outcome)) == expected


def test_a_hostile_variant_that_leaves_the_numbers_right_may_pass():
    passing = {**REPORT, "variants": [REPORT["variants"][0], {"name": "bad", "status": "ok", "error": ""}]}
    assert classify(_case("report", good="good", hostile="bad", must_flag=False), {"rc": 0, "report": passing}) == []
