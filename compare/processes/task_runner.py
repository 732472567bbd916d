"""One persistent task worker process (compare/processes/task_worker.py), started, fed and ended as every
kernel-ab worker is (compare.runtime.warm_worker.WarmWorker), and watched as the supervisor watches a run
(compare/processes/supervision.py): a task whose variant ends, crashes or hangs the worker is answered with
that variant and why, and the next task starts a fresh worker. Used by every executor, on this machine
and inside each Dask worker, so crash isolation and hang limits hold wherever a task runs."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import sys
import tempfile

from compare.checks.task import WORKER as _WORKER
from compare.processes import supervision
from compare.runtime import status_records, supervisor
from compare.runtime.run_context import EXCLUDED_ENV, NO_TIMING_ENV, STATUS_ENV, TOKEN_ENV
from compare.runtime.warm_worker import WarmWorker
from compare.model import scratch
from compare.model.task_answers import TaskAnswer, TaskState

_HANG_POLL_S = 0.1   # how often the status file is read for a launch past its limit while a task runs


class Runner:
    """Runs tasks one at a time in a worker process it keeps; `env` is added to the worker's environment."""

    def __init__(self, env: dict | None = None, cwd: str | None = None):
        self.env, self.cwd = dict(env or {}), cwd
        self.worker: WarmWorker | None = None
        self.fresh = None
        # the worker's records carry it: one a variant writes without it is its forgery, never another's end
        self.token = secrets.token_hex(16)
        fd, self.status = tempfile.mkstemp(prefix="kernel-ab-task-status-", dir=scratch.folder())
        os.close(fd)

    def _start(self, task) -> None:
        env = {k: v for k, v in os.environ.items() if k not in (EXCLUDED_ENV, NO_TIMING_ENV)}
        for name, value in task.env:   # the thread settings of the run that made the task (unset: unset)
            env.pop(name, None)
            if value:
                env[name] = value
        env.update(self.env)
        env[STATUS_ENV], env[TOKEN_ENV] = self.status, self.token
        # no folder: its error output goes where this process's does (a variant's prints, a Dask worker's log)
        self.worker = WarmWorker([sys.executable, str(_WORKER)], None, "task", env, self.cwd)

    def run(self, task) -> TaskAnswer:
        """The task's answer: its result, its error, the variants that crashed its worker, or the worker lost."""
        if self.worker is None or not self.worker.alive() or self.fresh != task.fresh:
            self.stop()
            self._start(task)
            self.fresh = task.fresh
        open(self.status, "w").close()
        self.worker.send(dataclasses.asdict(task))
        hung: dict = {}
        while (said := self.worker.word(None if hung else _HANG_POLL_S)) is not None:
            if said:
                answer = TaskAnswer.from_json(said)
                if answer.state is TaskState.CRASHED:   # a fatal device error: the worker exits
                    self.stop()
                return answer
            hung = status_records.hung(self._records())
            if hung:
                self.worker.kill()
        return self._ended(hung)

    def _records(self) -> list[dict]:
        return status_records.read(self.status, self.token)

    def _ended(self, hung: dict) -> TaskAnswer:
        """How the worker's end is said, as the supervisor says a child's (compare.processes.supervision)."""
        rc = self.worker.failure().exit_code
        self.stop()
        # the run's stop reaches its workers too; one that came to no other process was a variant's own
        crash = supervision.failed_by(self._records(), rc, hung, own_stop=supervisor.own_stop(rc))
        if crash.variants:
            return TaskAnswer.crashed(crash)
        return TaskAnswer.lost(f"its worker process {crash.why}")

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.close(wait_s=10)
            self.worker = None

    def close(self) -> None:
        self.stop()
        with contextlib.suppress(OSError):
            os.unlink(self.status)
