"""The task worker process's loop (compare/processes/task_worker.py): one TaskAnswer line per task; an error is
its task's line and the loop goes on; a fatal device error is answered naming its variants, and the worker ends."""
import io

from compare.model.states import Failure
from compare.model.task_answers import TaskAnswer, TaskState
from compare.processes import task_worker, tasks
from compare.processes.tasks import Task
from compare.runtime import supervisor


def _task(key: str) -> str:
    return Task(key, "numerics", "{}", "cpu").as_json()


def _answers(out: io.StringIO) -> list[TaskAnswer]:
    return [TaskAnswer.from_json(line) for line in out.getvalue().splitlines()]


def test_each_task_is_answered_by_one_line_its_result_or_its_error(monkeypatch):
    def execute(task):
        if task.key == "bad":
            raise ValueError("no such dtype")
        return {"key": task.key}
    monkeypatch.setattr(tasks, "execute", execute)
    out = io.StringIO()
    assert task_worker.serve(out, [_task("good"), "\n", _task("bad"), _task("again")]) == 0
    good, bad, again = _answers(out)
    assert good == TaskAnswer.ok({"key": "good"}) and again == TaskAnswer.ok({"key": "again"})
    assert bad.state is TaskState.ERROR and bad.line.startswith("bad: ") and "no such dtype" in bad.line


def test_a_poisoned_context_is_answered_with_its_variants_and_ends_the_worker(monkeypatch):
    def execute(task):
        raise supervisor.ContextPoisoned("a, b", "changed os.environ", supervisor.TAMPER, "numerics forward")
    monkeypatch.setattr(tasks, "execute", execute)
    out = io.StringIO()
    assert task_worker.serve(out, [_task("first"), _task("never")]) == supervisor.POISONED_EXIT
    (answer,) = _answers(out)
    assert answer.state is TaskState.CRASHED
    assert answer.crash.variants == ("a", "b") and answer.crash.what == "numerics forward"
    assert answer.crash.why == "changed os.environ" and answer.crash.failure is Failure.TAMPER
