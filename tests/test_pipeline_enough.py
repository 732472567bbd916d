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
