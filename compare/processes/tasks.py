"""A comparison split into independent tasks, and what a worker process does with one: a task is one case of a
check (compare/checks/check.py: numerics, one pass, dtype, input kind and shape with every variant; timing, one
dtype, shape and pass on a GPU of its own; the IR, one variant's own kernels), answered with its result's JSON
form and merged into the one report a single process makes (distributed.py). A timing process (task_worker.py
--timing: `prepare`) times comparison after comparison in two tasks each, LOAD (`load`) and TIME (`time`)."""
from __future__ import annotations

import contextlib
import os

from compare.checks.task import LOAD, THREAD_ENV, TIME, Task, progress_line
from compare.comparison import timing_run
from compare.model.results import to_dict
from compare.runtime import process_keep, run_context
from compare.runtime.progress import Step

_LOADED = "timing: the loaded request"
_FLOOR = "timing: the copy bandwidth, measured before any variant was imported"


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

    def make():
        from compare.comparison import pipeline, plan
        from compare.checks.timing import TimingConfig
        from variants import registry
        request = timing_run.request_from_json(text, plan.Request, TimingConfig)
        return pipeline.planned(request, registry(), excluded=run_context.culprits())
    return process_keep.entered(("request", text), make)[0]


def execute(task: Task, step=None) -> dict:
    """The task's result in JSON form: its case run by its check (compare/checks/check.py), or a timing
    process's LOAD or TIME (`step`: where its progress goes)."""
    if task.kind in (LOAD, TIME):
        return load(task) if task.kind == LOAD else time(task, step)
    from compare.runtime.backend import configure
    from compare.runtime import supervisor
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


# ---------------------------------------------------------------- in a timing process
# `load` runs while the run's numerics go on, writing no status (each repository's revisions are imported once for
# the process's life); `time` writes its launches to the run's status file (a supervisor sees them)
def prepare(limit_s: float) -> None:
    """The process's start, before any task: the launch limit set, the GPU configured (with the idle probe of
    compare.runtime.device_busy) and its copy bandwidth measured, before any variant is imported: no variant's
    thread, process or stream can slow it (a variant's import may start one)."""
    from compare.checks import copy_bandwidth
    from compare.runtime import supervisor
    from compare.runtime.backend import configure
    supervisor.set_limit(limit_s)
    copy_gbs = copy_bandwidth.copy_bandwidth_gbs() if configure("cuda", probe=True).gpu else 0.0
    process_keep.kept(_FLOOR, lambda: copy_gbs)


def load(task: Task) -> dict:
    """The task's request planned, its variants loaded and held for `time`, less those the process's environment
    excludes (one that ended an earlier process timing this request); answers the names kept."""
    from compare.checks.timing import TimingConfig
    from compare.comparison import loading, pipeline, plan
    from variants import registry
    request = timing_run.request_from_json(task.request, plan.Request, TimingConfig)
    kernels = process_keep.entered(("timing: kernels", request.repo), lambda: loading.kept_kernels(request.repo))
    planned = process_keep.hold(_LOADED, lambda: _planned(pipeline, request, registry(), kernels))
    return {"variants": [v.name for v in planned.variants]}


@contextlib.contextmanager
def _planned(pipeline, request, registry, kernels):
    """The request's plan with its variants loaded for the block, less those the environment excludes."""
    with pipeline.planned(request, registry, excluded=run_context.culprits(), kernels=kernels) as (planned, failed):
        yield pipeline.without_crashed(planned, failed, run_context.culprits()).plan


class Relay(Step):
    """A timing process's progress, said on its answer pipe (compare.checks.task.progress_line) between its tasks'
    answers, at most one a RELAY_S (its rounds come many a second), for its coordinator to show."""

    RELAY_S = 1.0

    def __init__(self, answers):
        self.answers, self.last = answers, 0.0

    def __call__(self, text: str) -> None:
        import time as clock
        if clock.monotonic() - self.last >= self.RELAY_S:
            self.last = clock.monotonic()
            self.answers.write(progress_line(text) + "\n")
            self.answers.flush()


def time(task: Task, step=None) -> dict:
    """The loaded request's cases timed (compare.comparison.timing_run.run_timing; its progress to `step`): its
    timing section's JSON form. Its launches go to the task's status file only while it runs."""
    planned = process_keep.held(_LOADED)
    run_context.set_channel(task.status, task.token)
    try:
        copy_gbs = task.copy_gbs or process_keep.kept(_FLOOR, lambda: 0.0)
        return to_dict(timing_run.run_timing(planned, step or Step(), copy_gbs))
    finally:
        run_context.set_channel(None, None)
        process_keep.let_go(_LOADED)
