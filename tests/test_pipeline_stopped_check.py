"""A stop that comes while a check that is not the partial one runs (compare/comparison/pipeline.py): what that
check finished before it (CheckStopped's findings, as the timing processes keep the dtypes timed) is in the
report, and the stop's line does not call the check "not run"; a check that kept nothing still is."""
import signal

import pytest

from compare.checks.check import CheckStopped, Findings, Ready
from compare.comparison import pipeline, plan
from compare.model.check_sections import CheckRow, judged
from compare.runtime import supervisor
from compare.runtime.backend import configure
from tests.test_check_protocol import Finite
from variants import registry


class StoppedAfterOne(Finite):
    """The "finite" check, stopped by a signal after its first case; `keeps`: whether it keeps that case."""

    keeps = True

    def begin(self, the_plan, backend, step, warm=None):
        def work():
            stop = supervisor.Stopped(signal.SIGINT)
            if not self.keeps:
                raise stop
            rows = (CheckRow(the_plan.variants[1].name, "float32 R5 H24", True),)
            raise CheckStopped(Findings(sections=(judged(self.name, "Finite outputs", rows,
                                                         the_plan.variants[0].name),)), stop)
        return Ready(work)


@pytest.mark.parametrize("keeps", [True, False])
def test_a_check_stopped_with_what_it_finished_keeps_it_and_is_not_said_not_run(keeps):
    check = StoppedAfterOne()
    check.keeps = keeps
    request = plan.Request(variants=("mine", "torch"), family="fake_scale", checks=("numerics", "finite"))
    from tests.fake_family import Scale
    the_plan = plan.build(request, registry(extra=(Scale(),)), plan.Options(), extra_checks=(check,))
    with pytest.raises(pipeline.Interrupted) as stopped:
        pipeline.execute(the_plan, configure("auto"))
    report = stopped.value.report
    assert [s.title for s in report.checks] == (["Finite outputs"] if keeps else [])
    assert ("finite" in report.interrupted.not_run) is not keeps
