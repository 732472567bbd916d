"""A task runner's worker process (compare/processes/task_runner.py) is started, fed and read as every kernel-ab
worker is (compare.runtime.warm_worker.WarmWorker): its answer comes whole on the pipe it is given, however
long; what it prints goes where the run's own error output goes; an end outside any launch is said with its
exit code; its status records count only with the runner's token, so a variant that forges one is named for
it, never the variant it names (as a supervised child's: compare/processes/supervision.py)."""
from pathlib import Path

import pytest

from compare.model.task_answers import TaskState
from compare.processes import task_runner
from compare.processes.tasks import Task

# A stand-in for task_worker.py: per task line, prints a note, then answers with a long result, or exits 7, or
# forges a launch record naming ok after its own (bad's) and exits 1
_FAKE = '''
import json, os, sys
sys.path.insert(0, {root!r})
from compare.model.task_answers import TaskAnswer
answers = os.fdopen(int(sys.argv[1]), "w")
for line in sys.stdin:
    task = json.loads(line)
    print("printed by " + task["key"], file=sys.stderr, flush=True)
    if task["key"] == "ends":
        sys.exit(7)
    if task["key"] == "forges":   # bad's launch, with the token; then a record without it, naming ok; an exit
        with open(os.environ["KERNEL_AB_STATUS_FILE"], "a") as status:
            status.write(json.dumps({{"variants": ["bad"], "what": "case s", "token": os.environ["KERNEL_AB_RUN_TOKEN"]}}) + chr(10))
            status.write(json.dumps({{"variants": ["ok"], "what": "case s"}}) + chr(10))
        os._exit(1)
    answers.write(TaskAnswer.ok({{"blob": "x" * 300000, "key": task["key"]}}).as_json() + chr(10))
    answers.flush()
'''


def _runner(tmp_path, monkeypatch):
    fake = tmp_path / "worker.py"
    fake.write_text(_FAKE.format(root=str(Path(task_runner.__file__).resolve().parents[2])))
    monkeypatch.setattr(task_runner, "_WORKER", fake)
    return task_runner.Runner()


def _task(key: str) -> Task:
    return Task(key, "numerics", "{}", "cpu")


def test_a_long_answer_comes_whole_and_the_workers_prints_go_to_the_runs_error_output(tmp_path, monkeypatch, capfd):
    runner = _runner(tmp_path, monkeypatch)
    try:
        first, second = runner.run(_task("one")), runner.run(_task("two"))
        starts = runner.worker.starts
    finally:
        runner.close()
    assert first.state is TaskState.OK and first.result == {"blob": "x" * 300000, "key": "one"}
    assert second.result["key"] == "two" and starts == 1   # the same process answered both
    err = capfd.readouterr().err
    assert "printed by one" in err and "printed by two" in err


def test_a_worker_that_ends_outside_any_launch_is_lost_with_its_exit_code_and_the_next_task_starts_a_fresh_one(
        tmp_path, monkeypatch):
    runner = _runner(tmp_path, monkeypatch)
    try:
        lost, after = runner.run(_task("ends")), runner.run(_task("after"))
    finally:
        runner.close()
    assert lost.state is TaskState.LOST and "exit code 7" in lost.line, lost
    assert after.state is TaskState.OK and after.result["key"] == "after"


def test_a_status_record_without_the_runners_token_names_the_variant_that_wrote_it_not_the_one_it_names(
        tmp_path, monkeypatch):
    runner = _runner(tmp_path, monkeypatch)
    try:
        answer = runner.run(_task("forges"))
    finally:
        runner.close()
    assert answer.state is TaskState.CRASHED and answer.crash.variants == ("bad",), answer
    assert answer.crash.why.startswith("forged kernel-ab's status") and answer.crash.failure == "tamper"


# a launch record naming ok, written without the run's token, then an exit (tests/test_process_guard.py's variant)
FORGES = """\
    with open(sys.modules["compare.runtime.run_context"]._CHANNEL["status"], "a") as status:
        status.write(json.dumps({"variants": ["ok"], "what": "numerics forward float32 normal"}) + "\\n")
    os._exit(1)"""


@pytest.mark.slow   # about 5 s each: a run of the CLI
@pytest.mark.parametrize("jobs", [(), ("--jobs", "2")])
def test_a_variant_that_forges_a_record_naming_another_is_named_itself_in_one_process_and_in_workers(tmp_path, jobs):
    from tests.test_process_guard import _bad, _compare, _hostile
    r, report = _compare(tmp_path, "--variant", f"bad={_hostile(tmp_path, FORGES, 'call')}::op", *jobs)
    assert r.returncode == 1, r.stderr   # --fail-on-numerics: never passes beside a culprit
    variants = {v["name"]: v for v in report["variants"]}
    assert variants["ok"]["status"] == "ok" and _bad(report)["failure"] == "tamper"
    assert _bad(report)["error"].startswith("forged kernel-ab's status"), _bad(report)
