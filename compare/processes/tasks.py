"""A comparison split into independent tasks, and what a worker process does with one: a task is one case of a
check (compare/checks/check.py: numerics, one pass, dtype, input kind and shape with every variant; timing, one
dtype, shape and pass on a GPU of its own; the IR, one variant's own kernels). Each carries the request as JSON
and answers with its result's JSON form, merged into the one report a single process makes (distributed.py)."""
from __future__ import annotations

import os

from compare.checks.task import LOAD, THREAD_ENV, TIME, Task
from compare.comparison import timing_run
from compare.model.results import to_dict


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


def execute(task: Task, step=None) -> dict:
    """The task's result in JSON form: its case run by its check (compare/checks/check.py), or a timing
    process's LOAD or TIME (compare/processes/timing_tasks.py; `step`: where its progress goes)."""
    if task.kind in (LOAD, TIME):
        from compare.processes import timing_tasks
        return timing_tasks.load(task) if task.kind == LOAD else timing_tasks.time(task, step)
    from compare.runtime.backend import configure
    from compare.runtime import supervisor
    from compare.runtime.progress import Step
    supervisor.set_limit(task.limit_s)
    if task.threads:
        import torch
        torch.set_num_threads(task.threads)
    backend = configure(task.device)
    if task.gpu and backend.gpu:   # its GPU's copy bandwidth, measured before the request's variants are imported
        from compare.comparison import timing_check   # (a variant's import may start work that slows copies)
        timing_check.place()
    plan = _context(task.request)
    check = next(c for c in plan.runs if c.name == task.kind)
    return to_dict(check.run(task.case, plan, backend, Step()))
