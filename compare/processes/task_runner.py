"""One persistent task worker process (compare/processes/task_worker.py), watched as the supervisor watches a
run (compare/processes/supervision.py): a task whose variant ends, crashes or hangs the worker is answered with
that variant and why, and the next task starts a fresh worker. Used by every executor, on this machine
and inside each Dask worker, so crash isolation and hang limits hold wherever a task runs."""
from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

from compare.processes import supervision
from compare.runtime import status_records
from compare.runtime.run_context import EXCLUDED_ENV, NO_TIMING_ENV, STATUS_ENV
from compare.runtime.supervisor import POISONED_EXIT
from compare.model import scratch
from compare.model.states import Failure
from compare.model.task_answers import CrashedVariants, TaskAnswer, TaskState

_ROOT = Path(__file__).resolve().parents[2]


class Runner:
    """Runs tasks one at a time in a worker process it keeps; `env` is added to the worker's environment."""

    def __init__(self, env: dict | None = None, cwd: str | None = None):
        self.env, self.cwd = dict(env or {}), cwd
        self.proc: subprocess.Popen | None = None
        self.fresh = None
        fd, self.status = tempfile.mkstemp(prefix="kernel-ab-task-status-", dir=scratch.folder())
        os.close(fd)

    def _start(self, task) -> None:
        env = {k: v for k, v in os.environ.items() if k not in (EXCLUDED_ENV, NO_TIMING_ENV)}
        for name, value in task.env:   # the thread settings of the run that made the task (unset: unset)
            env.pop(name, None)
            if value:
                env[name] = value
        env.update(self.env)
        env[STATUS_ENV] = self.status
        self.proc = subprocess.Popen([sys.executable, str(_ROOT / "compare" / "processes" / "task_worker.py")], env=env,
                                     cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, task) -> TaskAnswer:
        """The task's answer: its result, its error, the variants that crashed its worker, or the worker lost."""
        if self.proc is None or self.proc.poll() is not None or self.fresh != task.fresh:
            self.stop()
            self._start(task)
            self.fresh = task.fresh
        open(self.status, "w").close()
        try:
            self.proc.stdin.write((task.as_json() + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        hung: dict = {}
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                if line:
                    answer = TaskAnswer.from_json(line)
                    if answer.state is TaskState.CRASHED:   # a fatal device error: the worker exits
                        self.stop()
                    return answer
                return self._ended(hung)
            if not hung:
                hung = self._hang()

    def _hang(self) -> dict:
        hung = status_records.hung(status_records.read(self.status))
        if hung:
            self.proc.kill()
        return hung

    def _ended(self, hung: dict) -> TaskAnswer:
        rc = self.proc.wait()
        self.proc = None
        last = status_records.ended_in(status_records.read(self.status), rc == POISONED_EXIT)
        why = supervision._why(rc, last, hung)
        if hung or last.get("variants"):
            return TaskAnswer.crashed(CrashedVariants(tuple(last.get("variants") or hung.get("variants", [])), why,
                                                      last.get("what") or hung.get("what", ""),
                                                      Failure(last.get("failure", ""))))
        return TaskAnswer.lost(f"its worker process {why}")

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def close(self) -> None:
        self.stop()
        try:
            os.unlink(self.status)
        except OSError:
            pass
