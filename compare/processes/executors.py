"""Where tasks run with `--jobs N`: N persistent worker processes here (task_runner.Runner). Case tasks go to
any free worker; timing tasks wait for every case task, then run one per visible GPU (worker i pinned to
GPU i mod the GPU count; only the first min(N, GPUs) workers time), so two never share a GPU. A worker lost
outside any variant's launch is started again and its task run again; the report's incidents say so."""
from __future__ import annotations

import collections
import concurrent.futures
import os
import threading

from compare.model.task_answers import TaskState
from compare.processes.task_runner import Runner

_RETRIES = 2


class LocalExecutor:
    """`jobs` worker processes on this machine; `gpus`: the GPUs visible here (0 on a CPU backend)."""

    def __init__(self, jobs: int, gpus: int = 0):
        self.jobs, self.gpus = jobs, gpus
        self.timers = min(jobs, gpus)
        self._cond = threading.Condition()
        self._cases: collections.deque = collections.deque()
        self._timing: collections.deque = collections.deque()
        self._busy = 0
        self._closed = False
        self._incidents: list[str] = []
        self._runners = [Runner({"CUDA_VISIBLE_DEVICES": str(i % gpus)} if gpus else {}, os.getcwd())
                         for i in range(jobs)]
        self._threads = [threading.Thread(target=self._serve, args=(i,), daemon=True,
                                          name=f"kernel-ab worker {i + 1}") for i in range(jobs)]
        for t in self._threads:
            t.start()

    def where(self) -> str:
        return f"{self.jobs} worker process{'es' if self.jobs > 1 else ''} on this machine"

    def submit(self, task) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            (self._timing if task.gpu else self._cases).append((task, future, []))
            self._cond.notify_all()
        return future

    def _next(self, i: int):
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._cases:
                    self._busy += 1
                    return self._cases.popleft()
                if self._timing and i < self.timers and not self._busy:
                    return self._timing.popleft()
                self._cond.wait()

    def _serve(self, i: int) -> None:
        while True:
            item = self._next(i)
            if item is None:
                return
            task, future, lost = item
            answer, error = None, None
            try:
                answer = self._runners[i].run(task) if not future.cancelled() else None
            except BaseException as exc:  # noqa: BLE001 - the coordinator raises it where it reads the result
                error = exc
            with self._cond:
                if not task.gpu:
                    self._busy -= 1
                if answer is not None and answer.state is TaskState.LOST and len(lost) < _RETRIES:
                    lost.append(f"worker {i + 1}: {answer.line}")
                    (self._timing if task.gpu else self._cases).appendleft((task, future, lost))
                    self._cond.notify_all()
                    continue
                if lost:
                    self._incidents.append(f"task {task.key}: {'; '.join(lost)}; ran again on worker {i + 1}")
                self._cond.notify_all()
            if future.cancelled() or future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(answer)

    def incidents(self) -> tuple[str, ...]:
        with self._cond:
            return tuple(self._incidents)

    def cancel(self) -> None:
        """Forget the tasks not started (a variant crashed: the comparison runs again without it)."""
        with self._cond:
            for _, future, _ in [*self._cases, *self._timing]:
                future.cancel()
            self._cases.clear()
            self._timing.clear()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for runner in self._runners:
            runner.close()

    def placement(self, tasks) -> list[tuple[str, str]]:
        """(task, where it is expected to run) for --dry-run: case tasks in turn, timing tasks by GPU."""
        rows = [(task.key, f"worker {n % self.jobs + 1} (or the first free)")
                for n, task in enumerate(t for t in tasks if not t.gpu)]
        for timed, task in enumerate(t for t in tasks if t.gpu):
            slot = timed % self.timers
            rows.append((task.key, f"worker {slot + 1} on GPU {slot % self.gpus}, after every case task"))
        return rows
