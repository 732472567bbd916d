"""compare/comparison/plan.py: the command line's defaults and checks in one place, and a request resolved once
into a Plan that the stages read (no stage asks the registry again)."""
import dataclasses

import pytest

import main
from compare.comparison import pipeline, plan
from compare.command_line import arguments
from compare.runtime.backend import configure
from compare.model.results import Report, ShapeParams
from compare.checks.timing_config import TimingConfig
from compare.model.errors import UsageError
from variants import registry

BACKEND = configure("auto")


def _args(*argv: str):
    return main._parser("main.py").parse_args(list(argv))


def test_the_command_line_has_no_defaults_of_its_own():
    parser = main._parser("main.py")
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in ("compare", "ir"):
        given = {a.dest: a.default for a in commands[name]._actions
                 if a.dest not in ("help", "variants") and not isinstance(a.default, bool)}
        assert given and all(v is None for v in given.values()), given


def test_a_plain_compare_gets_the_request_and_timing_defaults():
    request, options = arguments.from_args(_args("compare"))
    assert request == plan.Request(timing=TimingConfig(min_rounds=10))
    assert options == plan.Options()


def test_plain_values_give_what_the_command_line_of_the_same_values_gives():
    assert arguments.from_values() == arguments.from_args(_args("compare"))
    assert arguments.from_values(command="ir", dtype="float16", stages=["ptx"]) == \
        arguments.from_args(_args("ir", "--dtype", "float16", "--stage", "ptx"))
    with pytest.raises(UsageError, match="--trials must be at least 1"):
        arguments.from_values(trials=0)


def test_the_ir_command_runs_the_ir_alone_on_one_trial():
    request, _ = arguments.from_args(_args("ir", "--stage", "ptx"))
    assert (request.checks, request.trials, request.stages) == (("ir",), 1, ("ptx",))


@pytest.mark.parametrize("argv, line", [
    (("compare", "--trials", "0"), "--trials must be at least 1 and at most 10000, got 0"),
    (("ir", "--target", "sm_1"), "--target/--stage: "),
    (("compare", "--rounds", "5", "--max-seconds", "0"), "--max-seconds takes a finite number > 0, got 0.0"),
])
def test_a_bad_value_is_refused_before_the_registry_is_asked(argv, line):
    with pytest.raises(UsageError, match=line.replace("(", r"\(").replace(")", r"\)")):
        arguments.from_args(_args(*argv))


def test_a_blank_shape_names_the_form_of_the_family_compared():
    reg = registry()
    for family in ("group_norm", "layer_norm"):
        with pytest.raises(UsageError) as e:
            plan.build(plan.Request(family=family, shape=" "), reg)
        assert str(e.value) == f"--shape is empty; give {reg.family(family).shape_help}"


class _Counting:
    """A registry that counts the lookups of variants made through it."""

    def __init__(self, reg):
        self.reg, self.gets = reg, 0

    def get(self, *a, **k):
        self.gets += 1
        return self.reg.get(*a, **k)

    def __getattr__(self, name):
        return getattr(self.reg, name)


def test_the_stages_read_the_plan_and_never_the_registry():
    counting = _Counting(registry())
    request = plan.Request(variants=("pointer_mutation", "explicit_offset"), shape="2,8,2,16",
                           checks=("numerics",), trials=1, inputs="normal")
    the_plan = plan.build(request, counting)
    asked = counting.gets
    assert [v.name for v in the_plan.variants] == ["pointer_mutation", "explicit_offset"]
    assert the_plan.accuracy_reference.name == "torch" and the_plan.directions == ("forward",)
    counting.reg = None   # any later lookup would fail
    report = pipeline.execute(the_plan, BACKEND)
    assert counting.gets == asked
    assert report.numerics.added_reference == "torch" and len(report.numerics.cases) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        the_plan.checks = ()


def test_leaving_a_variant_out_plans_the_timed_passes_again():
    reg = registry()
    request = plan.Request(variants=("pointer_mutation", "explicit_offset", "torch"), checks=("timing",))
    the_plan = plan.build(request, reg)
    assert the_plan.timing.modes == ("forward", "backward", "full")   # torch's code is not known
    kept = the_plan.keeping(the_plan.variants[:2])
    assert kept.timing.modes == ("forward",) and kept.timing_left_out   # the pair shares its backward kernel
    assert kept.request is the_plan.request


def test_the_family_says_where_x_is_read_twice_and_the_report_carries_it():
    reg = registry()
    edge = plan.build(plan.Request(preset="edge"), reg)
    assert edge.reads_x_twice == (False, False, True, False)   # its third shape's group does not fit on chip
    assert plan.build(plan.Request(family="layer_norm"), reg).reads_x_twice[0] is None   # the family does not say
    params = tuple(ShapeParams(pipeline._shape_params(s, t)) for s, t in zip(edge.preset.shapes, edge.reads_x_twice))
    report = Report("group_norm", "edge", "float32", "a", (), None, shape_params=params)
    assert report.reads_x_twice == (False, False, True, False)


def test_a_timing_process_is_handed_the_planned_passes_and_plans_the_same(monkeypatch):
    from compare.checks.check import Findings
    from compare.comparison import timing_run
    from compare.runtime.backend import Backend
    from compare.runtime.progress import Step
    reg = registry()
    the_plan = plan.build(plan.Request(variants=("pointer_mutation", "explicit_offset"), checks=("timing",),
                                       dtype="float32,float16"), reg)
    handed = {}

    class Processes:
        def __init__(self, request, dtypes, workers=None):
            handed.update(request=request, dtypes=dtypes, workers=workers)

        def run(self, step):
            return Findings()
    monkeypatch.setattr(timing_run, "in_fresh_processes", lambda gpu: True)
    monkeypatch.setattr(timing_run, "TimingProcesses", Processes)
    backend = Backend("cuda", False, "test")
    found = pipeline._timing(the_plan, backend, Step(), pipeline._timing_processes(the_plan, backend))
    assert handed["dtypes"] == ("float32", "float16") and found.skipped == the_plan.timing_left_out
    assert handed["workers"] is None   # a comparison of its own: its own processes
    sent = timing_run.request_from_json(timing_run.request_json(handed["request"]), plan.Request, TimingConfig)
    again = plan.build(sent, reg)   # what the worker plans in its own process
    assert again.timing == the_plan.timing == dataclasses.replace(the_plan.timing, modes=("forward",))
    assert [v.name for v in again.variants] == ["pointer_mutation", "explicit_offset"]
