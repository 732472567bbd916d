"""Decisions `compare` and `review` share are made in one place, so the two never disagree: which output
paths are refused, the defaults of the options they share, the exit code a finished run gets from its gates,
and the timing verdict's confidence."""
from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

import main
from compare.command_line import outcome, usage
from compare.comparison import plan
from compare.model import gates as gate_rules
from compare.model import vocabulary
from compare.model.errors import UsageError
from compare.model.results import Gate
from compare.model.states import GateOutcome
from compare.review import render
from compare.review.kernels import Changes
from compare.runtime.exit_codes import ExitCode
from tests.fixed_report import fixed_report

ROOT = Path(__file__).resolve().parent.parent


def _message(check) -> str:
    with pytest.raises(UsageError) as refused:
        check()
    return str(refused.value)


@pytest.mark.parametrize("json_at, md_at, out_at", [("q", None, "q"), ("q", None, "q/sub"), (None, "r", "r/a/b")])
def test_compare_and_review_refuse_a_file_where_out_needs_a_folder_in_the_same_words(tmp_path, json_at, md_at, out_at):
    at = (lambda name: None if name is None else str(tmp_path / name))
    said = _message(lambda: usage.outputs(at(json_at), at(md_at), at(out_at)))
    args = argparse.Namespace(json=at(json_at), markdown=at(md_at), out=at(out_at), force=False)
    assert _message(lambda: render.check_outputs(args)) == said
    assert "needs a folder; give a file elsewhere" in said


def test_review_refuses_a_file_where_an_ops_folder_goes_as_compare_refuses_one_where_out_goes(tmp_path):
    args = argparse.Namespace(json=None, markdown=str(tmp_path / "op"), out=str(tmp_path), force=False)
    said = _message(lambda: render.check_outputs(args, ["op"]))
    assert said == f"--markdown {tmp_path / 'op'} is where --out {tmp_path} needs a folder; give a file elsewhere"
    render.check_outputs(args, ["other"])   # no op's folder there: nothing refused


def _fake_defaults(monkeypatch):
    """Request and Options whose shared defaults differ from the real ones: whoever restates them is found."""
    request = dataclasses.make_dataclass("Request", [("repo", str, "elsewhere"), ("eps", float, 2e-5),
                                                     ("trials", int, 7), ("seed", int, 11)], bases=(plan.Request,),
                                         frozen=True)
    options = dataclasses.make_dataclass("Options", [("device", str, "cpu"), ("variant_timeout", float, 42.5)],
                                         bases=(plan.Options,), frozen=True)
    monkeypatch.setattr(plan, "Request", request)
    monkeypatch.setattr(plan, "Options", options)
    return request(), options()


def test_reviews_defaults_are_the_ones_compare_resolves(monkeypatch):
    d, o = _fake_defaults(monkeypatch)
    parser = main._parser("kernel-ab")
    review = parser.parse_args(["review", "A", "B"])
    assert (review.repo, review.trials, review.seed, review.device, review.variant_timeout) == \
        (d.repo, d.trials, d.seed, o.device, o.variant_timeout)
    helped = " ".join(parser._subparsers._group_actions[0].choices["review"].format_help().split())
    assert f"(default {d.eps:g})" in helped and f"(default {o.variant_timeout:g})" in helped
    assert f"(default {d.trials})" in helped and f"(default {d.seed})" in helped


def test_review_passes_compare_the_values_compare_would_take_itself():
    parser = main._parser("kernel-ab")
    from compare.command_line.arguments import as_compare, from_args
    mine, compares = as_compare(parser.parse_args(["review", "A", "B"])), from_args(parser.parse_args(["compare"]))
    for name in ("trials", "seed", "eps", "repo"):
        assert getattr(mine[0], name) == getattr(compares[0], name), name
    for name in ("device", "variant_timeout"):
        assert getattr(mine[1], name) == getattr(compares[1], name), name


GATES = {"none": (), "held": (Gate("--fail-on-numerics", None, GateOutcome.PASSED, ("fine",)),),
         "failed": (Gate("--fail-if-slower", 2.0, GateOutcome.FAILED, ("timing: B is slower",)),),
         "unjudged": (Gate("--fail-if-slower", 2.0, GateOutcome.NOT_JUDGED, ("timing was not measured",)),),
         "accepted": (Gate("--fail-if-slower", 2.0, GateOutcome.NOT_JUDGED, ("no GPU",), accepted=True),),
         "failed, no line": (Gate("--fail-on-numerics", None, GateOutcome.FAILED),)}


@pytest.mark.parametrize("which", list(GATES))
def test_compare_and_review_give_one_exit_code_for_the_same_gates(which, monkeypatch, capsys):
    report = dataclasses.replace(fixed_report(), gates=GATES[which])
    monkeypatch.setattr(gate_rules, "decided", lambda r, *_, **__: r)   # the gates as given, decided already
    compared = outcome.finish(report, plan.Options(), None)
    target = SimpleNamespace(module="lib.ops", callable="op", family="group_norm", how="by its table", what=())
    review = render.Review("v1", "v2", "a" * 40, "b" * 40, Changes(),
                           (SimpleNamespace(target=target, label="op", report=report, error="", needs=(),
                                            stopped=False),), ())
    args = argparse.Namespace(json=None, markdown=None, out=None, verbose=False, fail_on_numerics=False,
                              fail_if_slower=None, accept_unjudged=False)
    reviewed = render.finish(review, args)
    capsys.readouterr()
    assert reviewed == compared
    assert compared == (ExitCode.GATE_FAILED if any(g.fails for g in GATES[which]) else ExitCode.OK)


def _floats(path: Path) -> list[tuple[int, float]]:
    return [(n.lineno, n.value) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and type(n.value) is float]


def test_the_timing_confidence_is_written_once():
    found = [(str(p.relative_to(ROOT)), line) for p in (ROOT / "compare").rglob("*.py")
             for line, value in _floats(p) if value == vocabulary.CONFIDENCE]
    assert [where for where, _ in found] == ["compare/model/vocabulary.py"], found
