"""A task runner's worker process (compare/processes/task_runner.py) is started, fed and read as every kernel-ab
worker is (compare.runtime.warm_worker.WarmWorker): its answer comes whole on the pipe it is given, however
long; what it prints goes where the run's own error output goes; an end outside any launch is said with its
exit code."""
from compare.model.task_answers import TaskState
from compare.processes import task_runner
from compare.processes.tasks import Task

# A stand-in for task_worker.py: per task line, prints a note, then answers with a long result, or exits 7
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
    answers.write(TaskAnswer.ok({{"blob": "x" * 300000, "key": task["key"]}}).as_json() + chr(10))
    answers.flush()
'''


def _runner(tmp_path, monkeypatch):
    from pathlib import Path
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
