"""The command line of spread comparisons: --jobs N, --scheduler ADDRESS, --dry-run (compare/spread.py)."""
from __future__ import annotations

import argparse

from compare.usage import UsageError, at_least, not_blank

JOBS_MAX = 1024
_NO_DASK = ("--scheduler needs Dask's distributed package, which is not installed here; install it with "
            "`pip install 'kernel-ab[dask]'` (or `pip install 'dask[distributed]'`), or use --jobs N")


def add_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("spread the cases (docs/sweeps.md)")
    g.add_argument("--jobs", type=int, help="run the cases as tasks in N worker processes on this machine "
                                            "(timing: one case at a time per visible GPU)")
    g.add_argument("--scheduler", metavar="ADDRESS", help="run the cases as tasks on the Dask cluster whose "
                   "scheduler is at ADDRESS (tcp://HOST:8786); timing tasks ask for resources GPU=1")
    g.add_argument("--dry-run", action="store_true", help="print the tasks and where each would run; run nothing")
    g.add_argument("--plan-gpus", type=int, metavar="N", help="--dry-run: plan the timing tasks of a machine "
                                                              "with N GPUs (default: the GPUs visible here)")


def check(args) -> None:
    """UsageError for bad values, before any work (a missing Dask too)."""
    jobs, scheduler = getattr(args, "jobs", None), getattr(args, "scheduler", None)
    at_least("--jobs", jobs, 1, JOBS_MAX)
    at_least("--plan-gpus", getattr(args, "plan_gpus", None), 0, JOBS_MAX)
    not_blank("--scheduler", scheduler, "the Dask scheduler's address, such as tcp://10.0.0.1:8786")
    if jobs is not None and scheduler is not None:
        raise UsageError("give --jobs or --scheduler, not both (a Dask cluster chooses its own workers)")
    if getattr(args, "plan_gpus", None) is not None and not args.dry_run:
        raise UsageError("--plan-gpus applies to --dry-run only; add --dry-run")
    if scheduler is not None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise UsageError(_NO_DASK) from None


def wanted(args) -> bool:
    return bool(getattr(args, "jobs", None) or getattr(args, "scheduler", None) or getattr(args, "dry_run", False))


def executor(args, backend):
    """The executor the command line asks for (LocalExecutor or DaskExecutor); close it after use."""
    if args.scheduler:
        from compare.dask_executor import DaskExecutor
        return DaskExecutor(args.scheduler, connect=not args.dry_run)
    from compare.executors import LocalExecutor
    gpus = args.plan_gpus if args.dry_run and args.plan_gpus is not None else visible_gpus(backend)
    return LocalExecutor(args.jobs or 1, gpus)


def visible_gpus(backend) -> int:
    if not backend.gpu:
        return 0
    import torch
    return torch.cuda.device_count()


def run(args, request, registry, backend, step, failed):
    """The report of a spread comparison (compare.spread.compare); the workers end with it."""
    from compare import spread
    ex = executor(args, backend)
    try:
        return spread.compare(request, registry, backend, step, failed, spread.Spread(ex))
    finally:
        ex.close()


def dry_run(args, request, registry, backend) -> int:
    from compare import spread
    ex = executor(args, backend)
    try:
        gpus = args.plan_gpus if args.plan_gpus is not None else visible_gpus(backend)
        print("\n".join(spread.dry_run(request, registry, backend, ex, gpus)))
    finally:
        ex.close()
    return 0
