"""The --variant specs review builds as records (compare/review/mapping.py `Target.variant`, command.py
`_replay_timed`) are the records variants/spec.py parses from the same spec typed by hand, and they reach a
timing process through its request's JSON unchanged."""
from __future__ import annotations

import dataclasses

import pytest

from compare.comparison import timing_run
from compare.comparison.plan import Request
from compare.checks.timing_config import TimingConfig
from compare.review.calls import ArgRef, Call, Entry
from compare.review.mapping import Target
from variants.spec import CallMap, Literal, Spec, of, parse


def _target(callable_: str, call: Call | None) -> Target:
    return Target("lib/ops.py", "lib.ops", callable_, call, "cross_entropy", "by a table", ("lib.ops:_k",))


def _by_position(*values) -> tuple[Entry, ...]:
    return tuple(Entry(None, ArgRef(v) if isinstance(v, str) else v) for v in values)


CE = Call(_by_position("X", "target", Literal(None), "ignore_index", Literal(0.0), "label_smoothing",
                       Literal("mean")), 0)
NORM = Call((*_by_position("X", "W", Literal(-1)), Entry("eps", ArgRef("eps")), Entry("cast", Literal(False))))

CASES = [
    (_target("layer_norm", None), "n.head=git:abc123:lib/ops.py::layer_norm"),
    (_target("LigerCrossEntropyFunction.apply", CE),
     "ce.head=git:abc123:lib/ops.py::LigerCrossEntropyFunction.apply(X, target, None, ignore_index, 0.0, "
     "label_smoothing, 'mean')[0]"),
    (_target("RMSNorm.apply", NORM), "n.head=git:abc123:lib/ops.py::RMSNorm.apply(X, W, -1, eps=eps, cast=False)"),
    (_target("norm", Call(())), "n.head=git:abc123:lib/ops.py::norm()"),
]


@pytest.mark.parametrize("target, typed", CASES)
def test_a_targets_spec_is_the_record_its_typed_spec_parses_to(target, typed):
    name = typed.partition("=")[0]
    built = target.variant(name, "abc123")
    assert built == parse(typed)
    assert target.spec(name, "abc123") == typed   # the text a user types to compare it by hand


def test_a_calls_keywords_come_after_its_positional_entries_in_the_record():
    call = NORM.as_call_map()
    assert call == CallMap(("X", "W", Literal(-1)), (("eps", "eps"), ("cast", Literal(False))), None)
    assert call.text() == NORM.text()


def test_a_replayed_ops_spec_is_the_record_its_typed_spec_parses_to():
    from variants.recorded_build import call_of
    call = call_of((("x", "factor"), ("eps",)), 0)
    built = Spec.made("ScaleFunction.head", "toylib/ops.py", "ScaleFunction.apply", "abc123", call)
    assert built == parse("ScaleFunction.head=git:abc123:toylib/ops.py::ScaleFunction.apply(x, factor, eps=eps)[0]")


@pytest.mark.parametrize("target, typed", CASES)
def test_a_built_spec_reaches_a_timing_process_as_the_same_record(target, typed):
    built = target.variant(typed.partition("=")[0], "abc123")
    assert of(dataclasses.asdict(built)) == built
    request = Request(variants=("a",), shape="2,8", external=(built, "a=x.py::f"), loaded_specs=(built,),
                      timing=TimingConfig(modes=("forward",), rounds=12))
    again = timing_run.request_from_json(timing_run.request_json(request), Request, TimingConfig)
    assert again == request and isinstance(again.external[0], Spec) and again.external[1] == "a=x.py::f"
