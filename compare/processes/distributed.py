"""A comparison distributed over worker processes (`--jobs N`) or a Dask cluster (`--scheduler ADDRESS`):
its cases run as tasks (compare/processes/tasks.py) and merge into the one report a single process makes (the
same report whatever ran where, timings aside; each timing case says on which GPU it ran). A variant
that ends or hangs a worker is reported as failed and the comparison runs again without it, as the
supervisor does in one process (compare/processes/supervision.py)."""
from __future__ import annotations

import dataclasses
import threading

from compare.processes import tasks as tasks_mod
from compare.model.reruns import Blamed, Ending, Ran, run_excluding
from compare.model.results import decode
from compare.model.states import Failure
from compare.model.task_answers import TaskState


class VariantCrashed(Exception):
    """A task's variant ended or hung its worker: (names, why, what it was running)."""

    def __init__(self, names: list[str], why: str, what: str, kind: Failure = Failure.NONE):
        super().__init__(f"{', '.join(names)} {why} while running {what}")
        self.names, self.why, self.what, self.kind = names, why, what, kind   # kind: TAMPER or NONE


class TaskFailed(RuntimeError):
    """A task failed outside any variant (a bug, a worker that cannot run it): the run ends, one line."""


class Distribution:
    """Starts a comparison's tasks on an executor (compare.processes.executors, compare.processes.dask_executor)."""

    def __init__(self, executor):
        self.executor = executor

    def start(self, plan, backend, step) -> "Started":
        return Started(self.executor, tasks_mod.plan_tasks(plan, backend), plan, backend, step)


class Started:
    """The tasks of one run, submitted; each check waits for its own tasks (`pending`)."""

    def __init__(self, executor, planned, plan, backend, step):
        self.executor, self.tasks, self.plan, self.backend, self.step = executor, planned, plan, backend, step
        self._lock = threading.Lock()   # the count a progress line shows is the one its own task's end made
        self.futures = {t.key: executor.submit(t) for t in planned}
        for task in planned:   # said as each ends, wherever it ran (a worker thread, Dask's callback thread)
            self.futures[task.key].add_done_callback(lambda future, task=task: self._ended(task, future))
        self.left_behind: dict[str, None] = {}

    def _ended(self, task, future) -> None:
        """Each task's end advances the progress by one (its total: count_steps) and is said by the task's key; the
        progress line gives the units done of all, the time so far and the time left (compare/runtime/progress.py)."""
        if future.cancelled():
            return
        with self._lock:
            self.step.advance()
            self.step(f"done: {task.key}")

    def _answer(self, task) -> dict:
        """The task's result (the JSON form of its check's result_type); raises where it has none."""
        try:
            answer = self.futures[task.key].result()
        except Exception as exc:  # noqa: BLE001 - a cluster's error (a worker without kernel-ab): one line
            from compare.model.errors import summarize
            raise TaskFailed(f"{task.key}: {summarize(exc)}") from None
        if answer.state is TaskState.CRASHED:
            c = answer.crash
            raise VariantCrashed(list(c.variants), c.why, c.what, c.failure)
        if answer.state is TaskState.ERROR:
            raise TaskFailed(answer.line)
        if answer.state is TaskState.LOST:
            raise TaskFailed(f"{task.key}: {answer.line}")
        self.left_behind.update(dict.fromkeys(answer.left_behind))   # a variant's threads in a worker
        return answer.result

    def pending(self, check):
        """`check` begun as tasks: its findings, collected from its tasks' results where the run started."""
        from compare.checks.check import Ready
        return Ready(lambda: check.collect(self.plan, self.backend, self.step, Results(self, check)))

    def incidents(self) -> tuple[str, ...]:
        return tuple(self.left_behind) + tuple(self.executor.incidents())


class Results:
    """The results of one check's tasks, in the plan's order, as its records (Check.result_type)."""

    def __init__(self, started: Started, check):
        self.started, self.check = started, check
        self.tasks = [t for t in started.tasks if t.kind == check.name]

    def all(self) -> list:
        return [decode(self.check.result_type, self.started._answer(t)) for t in self.tasks]

    def finished(self) -> list:
        """Those whose tasks answered (the run was stopped: the rest are not, and none starts now)."""
        self.started.executor.cancel()
        done = []
        for t in self.tasks:
            future = self.started.futures[t.key]
            if future.done() and not future.cancelled() and future.exception() is None \
                    and future.result().state is TaskState.OK:
                done.append(decode(self.check.result_type, future.result().result))
        return done


def count_steps(plan, backend) -> int:
    """The progress units of a distributed run: one per task, and those of what each check collects where the run
    started (the IR's summary)."""
    return len(tasks_mod.plan_tasks(plan, backend)) + sum(c.collect_steps for c in plan.runs)


def compare(plan, backend, step, failed, distribution: Distribution):
    """pipeline.execute through `distribution`, again without each variant that ended or hung a worker."""
    from compare.comparison import pipeline
    from compare.processes.supervision import without_culprit

    def attempt(culprits):
        crashed = [c for c in culprits if c.name]
        no_timing = next((c.reason for c in reversed(culprits) if not c.name), "")
        asked, asked_failed = pipeline.without_crashed(plan, failed, crashed, no_timing) if culprits \
            else (plan, failed)
        try:
            return Ran(pipeline.execute(asked, backend, step, failed=asked_failed, distributed=distribution))
        except VariantCrashed as exc:
            distribution.executor.cancel()
            culprit = without_culprit(exc.names, exc.why, exc.what, exc.kind)
            return Blamed(culprit, culprit.name)
    reruns = run_excluding(attempt)
    if reruns.ending is Ending.RAN:
        return reruns.result
    raise TaskFailed("too many variants ended their worker processes")


def dry_run(plan, backend, executor, gpus: int) -> list[str]:
    """The plan's lines: every task and where it is expected to run (nothing runs). `gpus` > 0 plans
    the timing tasks of a GPU machine with that many GPUs."""
    if gpus:
        backend = dataclasses.replace(backend, device="cuda", interpreted=False)
    planned, skipped = tasks_mod.plan_tasks(plan, backend), plan.timing_left_out
    counts = {k: sum(t.kind == k for t in planned) for k in dict.fromkeys(t.kind for t in planned)}
    lines = [f"plan: {len(planned)} tasks ({', '.join(f'{n} {k}' for k, n in counts.items() if n)}) on "
             f"{executor.where()}; nothing was run (--dry-run)"]
    lines += [f"  {key}: {where}" for key, where in executor.placement(planned)]
    lines += [f"  not timed: {line}" for line in skipped]
    return lines
