"""What a variant does to the process it shares, in its call, is named alike when the case runs as a task in a
worker process (`--jobs 2`: compare/processes/task_runner.py, task_worker.py) as in the supervised child
(tests/test_process_guard.py): a stop signal it sends its own worker is its act, not a crash; a process it
double-forks out of its session is seen by the worker (a subreaper, as the child is) and named for it."""
import pytest

from compare.model.results import Failure
from tests.test_process_guard import ACTS, _bad, _compare, _hostile, clean  # noqa: F401 (the fixture)

IN_CALL = [a for a in ACTS if a[2] == "call"]
QUICK = {"sigterm"}


@pytest.mark.parametrize("name, act, when, said", [
    pytest.param(*a, marks=() if a[0] in QUICK else pytest.mark.slow, id=a[0]) for a in IN_CALL])
def test_a_variant_that_changes_its_task_workers_process_is_named_as_in_one_process(name, act, when, said,
                                                                                  tmp_path, clean):  # noqa: F811
    bad = _hostile(tmp_path, act, when)
    r, report = _compare(tmp_path, "--variant", f"bad={bad}::op", "--jobs", "2")
    assert r.returncode == 1, r.stderr
    info = _bad(report)
    assert (info["status"], info["failure"]) == ("failed", Failure.TAMPER.value), info
    assert info["error"].startswith(said), info["error"]
    assert report["numerics"]["cases"] == clean
    assert f"variant bad tampered with the process: {said}" in r.stderr
