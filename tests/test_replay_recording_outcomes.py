"""An op whose tests ran and recorded no call of it says why (compare/runtime/replay_worker.py counts each test
file's outcomes and keeps its first failure; compare/review/replay_recording.no_call_why says them): the
reviewer reads "24 failed, the first: TypeError ... (raised at src/lib/utils.py:71)", not "no call recorded"."""
from types import SimpleNamespace

from compare.review.replay_recording import no_call_why
from compare.runtime.replay_worker import Recorder


def _report(nodeid: str, when: str, outcome: str, crash=None):
    return SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, passed=outcome == "passed",
                           failed=outcome == "failed", longrepr=SimpleNamespace(reprcrash=crash))


def test_each_test_files_outcomes_and_first_failure_are_kept_and_said_for_an_op_with_no_call(tmp_path):
    recorder = Recorder({"out": str(tmp_path), "calls": 6, "per_dtypes": 2, "bytes": 1 << 20,
                         "rootdir": str(tmp_path)})
    crash = SimpleNamespace(path=str(tmp_path / "src" / "lib" / "utils.py"), lineno=71,
                            message="TypeError: __init__() got an unexpected keyword argument 'device'\nmore")
    later = SimpleNamespace(path="/elsewhere/x.py", lineno=3, message="ValueError: odd")
    for report in [_report("t/test_a.py::test_1", "setup", "passed"),
                   _report("t/test_a.py::test_1", "call", "failed", crash),
                   _report("t/test_a.py::test_1", "teardown", "passed"),
                   _report("t/test_a.py::test_2", "call", "failed", later),
                   _report("t/test_a.py::test_3", "setup", "skipped"),
                   _report("t/test_b.py::test_1", "call", "passed")]:
        recorder.outcome(report)
    found = recorder.manifest
    assert found["outcomes"]["t/test_a.py"] == {"passed": 0, "failed": 2, "skipped": 1, "first": {
        "test": "t/test_a.py::test_1", "error": "TypeError: __init__() got an unexpected keyword argument 'device'",
        "where": "src/lib/utils.py:71"}}
    assert no_call_why(found, ["t/test_a.py"]) == (
        "no test of t/test_a.py called it (2 failed, the first: TypeError: __init__() got an unexpected "
        "keyword argument 'device' (raised at src/lib/utils.py:71); 1 skipped)")
    assert no_call_why(found, ["t/test_b.py"]) == "no test of t/test_b.py called it (1 passed)"
    assert no_call_why(found, ["t/test_c.py"]) == ""   # none of its tests ran: nothing to say
