"""A comparison split into independent tasks, and what a worker process does with one: a task is one case of a
check (compare/checks/check.py: numerics, one pass, dtype, input kind and shape with every variant; timing, one
dtype, shape and pass on a GPU of its own; the IR, one variant's own kernels). Each carries the request as JSON
and answers with its result's JSON form, merged into the one report a single process makes (distributed.py)."""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

from compare.checks.check import Case
from compare.comparison import timing_run
from compare.model.results import to_dict


@dataclasses.dataclass(frozen=True)
class Task:
    key: str                  # unique in a run, e.g. "numerics forward float32 normal 16,64,8,4x4"
    kind: str                 # the name of the check whose case it is (Check.name)
    request: str              # the worker's request as JSON (compare.comparison.timing_run.request_json)
    device: str               # "cuda" or "cpu": the coordinator's backend, which every worker must have
    case: Optional[Case] = None
    limit_s: float = 300.0    # one launch at most this long (--variant-timeout)
    threads: int = 0          # torch's CPU threads where the run started, and its thread settings (THREAD_ENV):
    env: tuple = ()           # CPU reductions (torch's backward) sum in an order that depends on them, and Dask
                              # starts its workers with OMP_NUM_THREADS=1
    gpu: bool = False         # it needs a GPU of its own (timing: never two at once on one GPU)
    group: str = "cases"      # tasks of another group never share a worker process (each dtype timed in a fresh one)

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


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def plan_tasks(plan, backend) -> list[Task]:
    """Every case of every check as a task, in the report's order; those needing a GPU of their own last."""
    import torch
    from compare.runtime import supervisor
    text = timing_run.request_json(timing_run.worker_request(plan))
    limit, threads = supervisor.limit_s(), torch.get_num_threads()
    env = tuple((k, os.environ.get(k, "")) for k in THREAD_ENV)
    return [Task(case.key, check.name, text, backend.device, case, limit, threads, env, check.exclusive, check.group(case))
            for check in sorted(plan.runs, key=lambda c: c.exclusive) for case in check.cases(plan, backend)]


# ---------------------------------------------------------------- in the worker
def _context(text: str):
    """The plan of a task's request, its variants loaded (once per worker: compare/runtime/process_keep.py)."""
    from compare.runtime import process_keep

    def load():
        from compare.comparison import pipeline, plan
        from compare.runtime import run_context
        from compare.checks.timing import TimingConfig
        from variants import registry
        request = timing_run.request_from_json(text, plan.Request, TimingConfig)
        return pipeline.planned(request, registry(), excluded=run_context.culprits())
    return process_keep.entered(("request", text), load)[0]


def execute(task: Task) -> dict:
    """The task's result in JSON form: its case run by its check (compare/checks/check.py)."""
    from compare.runtime.backend import configure
    from compare.runtime import supervisor
    from compare.runtime.progress import Step
    supervisor.set_limit(task.limit_s)
    if task.threads:
        import torch
        torch.set_num_threads(task.threads)
    backend = configure(task.device)
    plan = _context(task.request)
    check = next(c for c in plan.runs if c.name == task.kind)
    return to_dict(check.run(task.case, plan, backend, Step()))
