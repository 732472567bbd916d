"""A timing process: a task worker (task_worker.py, started with --timing) that times one dtype of comparison
after comparison for compare.comparison.timing_run. It measures the copy bandwidth before any variant is imported
(`prepare`); each comparison is two tasks: `load` plans the request and loads its variants (each repository's
revisions imported once for the process's life) while the run's numerics go on, writing no status; `time` times
its cases with launches written to the run's status file (a supervisor sees them), then lets the variants go."""
from __future__ import annotations

import contextlib

from compare.checks.task import Task
from compare.runtime import process_keep, run_context

_LOADED = "timing: the loaded request"
_FLOOR = "timing: the copy bandwidth, measured before any variant was imported"


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
    from compare.comparison import loading, pipeline, plan, timing_run
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


def time(task: Task, step=None) -> dict:
    """The loaded request's cases timed (compare.comparison.timing_run.run_timing; its progress to `step`): its
    timing section's JSON form. Its launches go to the task's status file only while it runs."""
    from compare.comparison import pipeline, timing_run
    from compare.model.results import to_dict
    planned = process_keep.held(_LOADED)
    run_context.set_channel(task.status, task.token)
    try:
        copy_gbs = task.copy_gbs or process_keep.kept(_FLOOR, lambda: 0.0)
        return to_dict(timing_run.run_timing(planned, step or pipeline.Step(), copy_gbs))
    finally:
        run_context.set_channel(None, None)
        process_keep.let_go(_LOADED)
