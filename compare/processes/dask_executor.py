"""Tasks on a Dask distributed cluster (`--scheduler ADDRESS`, the extra `kernel-ab[dask]`): numerics and IR
tasks on any worker, each timing task with resources {"GPU": 1} once every case task is done. In each Dask
worker a task runs in a persistent task worker process (task_runner.py), so a crash or hang is reported as
in one process; a lost Dask worker's task is retried elsewhere and the incidents say so. The --variant
sources travel with the tasks (shipping.py)."""
from __future__ import annotations

import atexit
import threading
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compare.model.task_answers import TaskAnswer

TOPIC = "kernel-ab-task"


def run_task(task_json: str, sources: dict | None, *after) -> TaskAnswer:
    """In a Dask worker: run one task; `after` are the tasks it waits for (their results are unused)."""
    from distributed import get_worker

    from compare.model.task_answers import TaskState
    from compare.processes.task_runner import Runner
    from compare.processes.tasks import Task
    worker = get_worker()
    task = Task.from_json(task_json)
    worker.log_event(TOPIC, {"key": str(worker.get_current_task()), "task": task.key, "worker": worker.address})
    if sources is not None:
        import dataclasses
        from compare.processes import shipping
        task = dataclasses.replace(task, request=shipping.unpacked(sources, sources["request"]))
    from compare.runtime import process_keep
    # a Dask worker ends without a word to its tasks: its runners and the trees shipped to it go at its exit
    process_keep.kept("released at exit", lambda: atexit.register(process_keep.release))
    runner = process_keep.kept(("runner", threading.get_ident()), Runner, Runner.close)
    answer = runner.run(task)
    if answer.state is TaskState.LOST:   # its worker process ended outside any launch: once more, in a fresh one
        answer = runner.run(task)
    return answer


def _entry():
    """What a worker is sent to call: run_task, by a name it imports. Installed, kernel-ab's `compare` is
    importable only through kernel_ab (kernel_ab/__init__.py), so the call goes through kernel_ab's own."""
    import sys
    package = sys.modules.get("kernel_ab")
    return package.dask_task if package is not None else run_task


class DaskExecutor:
    def __init__(self, address: str, connect: bool = True):
        self.address = address
        self.client = None
        self._run = uuid.uuid4().hex[:8]
        self._sources: dict = {}
        self._cases: list = []
        self._futures: list = []
        from distributed import Client
        from compare.model.errors import UsageError
        try:
            self.client = Client(address, timeout=30 if connect else 5)
        except (OSError, TimeoutError, ValueError) as exc:
            if connect:   # --dry-run plans without the cluster when it cannot be reached
                raise UsageError(f"--scheduler {address}: no Dask scheduler answered there ({exc}); give the "
                                 "address `dask scheduler` printed, such as tcp://10.0.0.1:8786") from None

    def where(self) -> str:
        return f"the Dask cluster at {self.address}"

    def _shipped(self, request_text: str):
        if request_text not in self._sources:
            import json
            from compare.processes import shipping
            if not json.loads(request_text)["external"]:
                self._sources[request_text] = None
            else:
                self._sources[request_text] = self.client.scatter([shipping.bundle(request_text)], broadcast=True)[0]
        return self._sources[request_text]

    def submit(self, task):
        after = list(self._cases) if task.gpu else []
        future = self.client.submit(_entry(), task.as_json(), self._shipped(task.request), *after,
                                    key=f"kernel-ab-{self._run}-{task.key.replace(' ', '-')}-{len(self._futures)}",
                                    pure=False, resources={"GPU": 1} if task.gpu else None)
        if not task.gpu:
            self._cases.append(future)
        self._futures.append((task.key, future))
        return future

    def incidents(self) -> tuple[str, ...]:
        """A task started on more than one worker: the first was lost and Dask ran it again."""
        started: dict[str, list[str]] = {}
        names = {}
        for _, event in self.client.get_events(TOPIC):
            if f"-{self._run}-" in event["key"]:
                started.setdefault(event["key"], []).append(event["worker"])
                names[event["key"]] = event["task"]
        return tuple(f"task {names[key]}: started on Dask worker {', '.join(w[:-1])}, which was lost; ran again on "
                     f"{w[-1]}" for key, w in started.items() if len(w) > 1)

    def cancel(self) -> None:
        self.client.cancel([f for _, f in self._futures if not f.done()])
        self._futures.clear()
        self._cases.clear()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def placement(self, tasks) -> list[tuple[str, str]]:
        """(task, where) for --dry-run, from the workers the scheduler knows (any, when not connected)."""
        workers = self.client.scheduler_info()["workers"] if self.client else {}
        gpus = [a for a, w in workers.items() if w.get("resources", {}).get("GPU")]
        rows = []
        for task in tasks:
            if not task.gpu:
                rows.append((task.key, f"any of {len(workers)} Dask workers" if workers else "any Dask worker"))
            else:
                where = f"one of {len(gpus)} workers with GPU=1 ({', '.join(gpus)})" if gpus else \
                    "a worker with resources GPU=1 (none connected now: it waits for one)"
                rows.append((task.key, where + ", after every case task"))
        return rows
