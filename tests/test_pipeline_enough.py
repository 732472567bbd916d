"""`pipeline.execute(..., enough=)`: after each check, a caller may find the rest not worth running (review: an op
its family does not fit); those checks are then skipped with its reason, never run, and the report says so."""
from compare.comparison import pipeline, plan
from tests.test_check_protocol import BACKEND, Finite, WithOverflow
from variants import registry

ASKED = []


def _execute(enough):
    request = plan.Request(variants=("mine", "overflows"), family="fake_scale", checks=("numerics", "finite"))
    the_plan = plan.build(request, registry(extra=(WithOverflow(),)), plan.Options(), extra_checks=(Finite(),))
    return pipeline.execute(the_plan, BACKEND, enough=enough)


def _after_numerics(found):
    ASKED.append(found.numerics is not None)
    return "not run: numerics said enough" if found.numerics is not None else None


def test_checks_after_the_one_found_enough_are_skipped_with_its_reason():
    ASKED.clear()
    report = _execute(_after_numerics)
    assert ASKED == [True]   # asked once, after numerics: the check after it never ran
    assert report.numerics is not None and report.checks == ()
    assert [(s.check, s.why) for s in report.skipped if s.check == "finite"] == [("finite", "not run: numerics said enough")]


def test_without_a_reason_every_check_runs():
    report = _execute(lambda found: None)
    assert [c.check for c in report.checks] == ["finite"]
    assert not [s for s in report.skipped if s.check == "finite"]


def test_compiled_code_skipped_as_not_worth_it_leaves_the_next_comparisons_compiles_running():
    """Skipping the IR check ends its compile workers: the next comparison in the process (a review's next op)
    still compiles its kernels (it was refused: "IR worker not started: the run is stopping")."""
    def run(enough):
        request = pipeline.Request(("pointer_mutation", "explicit_offset"), family="group_norm", shape="2,8,2,4",
                                   trials=1, inputs="normal", checks=("numerics", "ir"))
        with pipeline.planned(request, registry()) as (the_plan, _):
            return pipeline.execute(the_plan, BACKEND, enough=enough)
    skipped = run(lambda found: "not worth it" if found.numerics is not None else None)
    assert [s.why for s in skipped.skipped if s.check == "ir"] == ["not worth it"] and not skipped.ir_sections
    compiled = run(None)
    assert [s.part for s in compiled.skipped if s.check == "ir"] == ["backward"]   # one backward kernel: not compiled
    assert [section.kernel for section in compiled.ir_sections] == ["forward"]
    assert [(v.variant, v.error) for v in compiled.ir_sections[0].variants] == [("pointer_mutation", ""),
                                                                                ("explicit_offset", "")]
