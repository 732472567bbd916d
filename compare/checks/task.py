"""One task for a worker process (compare/processes/task_worker.py), as it travels there: one JSON line. A case of
a check (compare/checks/check.py), which a task runner or Dask sends; or one of a timing process's two tasks,
which compare.comparison.timing_run sends: LOAD a comparison's variants while the run's numerics go on, then
TIME every case of its dtype, its launches written to the run's status file the task names."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

from compare.checks.check import Case

LOAD = "load"   # a timing process's first task: plan the request and load its variants, time nothing yet
TIME = "time"   # its second: time the loaded request's cases (status, token, copy_gbs say how), then let them go
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
WORKER = Path(__file__).resolve().parents[1] / "processes" / "task_worker.py"   # the one worker program, run by path


@dataclasses.dataclass(frozen=True)
class Task:
    key: str                  # unique in a run, e.g. "numerics forward float32 normal 16,64,8,4x4"
    kind: str                 # the name of the check whose case it is (Check.name), or LOAD or TIME
    request: str              # the worker's request as JSON (compare.comparison.timing_run.request_json)
    device: str               # "cuda" or "cpu": the coordinator's backend, which every worker must have
    case: Optional[Case] = None
    limit_s: float = 300.0    # one launch at most this long (--variant-timeout)
    threads: int = 0          # torch's CPU threads where the run started, and its thread settings (THREAD_ENV):
    env: tuple = ()           # CPU reductions (torch's backward) sum in an order that depends on them, and Dask
                              # starts its workers with OMP_NUM_THREADS=1
    gpu: bool = False         # it needs a GPU of its own (timing: never two at once on one GPU)
    group: str = "cases"      # tasks of another group never share a worker process (each dtype timed in a fresh one)
    status: str = ""          # TIME: the run's status file its launches are written to, and the token they carry
    token: str = ""
    copy_gbs: float = 0.0     # TIME: the copy bandwidth an earlier timing process measured (0: the worker's own)

    @property
    def fresh(self) -> tuple:
        """Tasks with another value here never share a worker process."""
        return (self.group, self.env)

    def as_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Task":
        data = json.loads(text)
        case = Case.from_dict(data["case"]) if data["case"] is not None else None
        return cls(**{**data, "case": case, "env": tuple(tuple(e) for e in data["env"])})


def progress_line(text: str) -> str:
    """A timing process's progress between its answers, as it travels on its answer pipe: one JSON line."""
    return json.dumps({"progress": text})


def progress_of(line: str) -> str | None:
    """What a `progress_line` says; None where `line` is none (a task's answer, read whole by its reader)."""
    if not line.startswith('{"progress": '):   # an answer's JSON is not parsed twice
        return None
    try:
        return str(json.loads(line)["progress"])
    except (ValueError, KeyError, TypeError):
        return None
