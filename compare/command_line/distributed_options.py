"""The command line of distributed comparisons: --jobs N, --scheduler ADDRESS, --dry-run (compare/processes/distributed.py)."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses

from compare.command_line.usage import UsageError, at_least, not_blank

JOBS_MAX = 1024
AUTO = "auto"


def cores() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's share, not the machine's)."""
    import os
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _jobs(text) -> tuple[int | None, bool]:
    """(--jobs's worker count, whether it was worked out from the cores); UsageError for what is no count."""
    if text is None:
        return None, False
    if str(text).strip().lower() == AUTO:
        return cores(), True
    try:
        return int(text), False
    except ValueError:
        raise UsageError(f"--jobs {text}: give a worker count or auto (--jobs alone takes the next word: put it "
                         "after the variants' names)") from None
_NO_DASK = ("--scheduler needs Dask's distributed package, which is not installed here; install it with "
            "`pip install 'kernel-ab[dask]'` (or `pip install 'dask[distributed]'`), or use --jobs N")


def add_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("spread the cases (docs/sweeps.md)")
    g.add_argument("--jobs", nargs="?", const=AUTO, metavar="N", help="run the cases as tasks in N worker processes "
                   "on this machine (timing: one case at a time per visible GPU); --jobs alone or --jobs auto: one "
                   "per core here")
    g.add_argument("--scheduler", metavar="ADDRESS", help="run the cases as tasks on the Dask cluster whose "
                   "scheduler is at ADDRESS (tcp://HOST:8786); timing tasks ask for resources GPU=1")
    g.add_argument("--dry-run", action="store_true", help="print the tasks and where each would run; run nothing")
    g.add_argument("--plan-gpus", type=int, metavar="N", help="--dry-run: plan the timing tasks of a machine "
                                                              "with N GPUs (default: the GPUs visible here)")


@dataclasses.dataclass(frozen=True)
class DistributedOptions:
    jobs: int | None = None
    scheduler: str | None = None
    dry_run: bool = False
    plan_gpus: int | None = None
    auto: bool = False   # --jobs's count is the cores'

    @property
    def wanted(self) -> bool:
        return bool(self.jobs or self.scheduler or self.dry_run)


def from_args(args) -> DistributedOptions:
    """The --jobs/--scheduler options of a command line (UsageError for bad values, a missing Dask too), before any work."""
    jobs, auto = _jobs(getattr(args, "jobs", None))
    o = DistributedOptions(jobs, getattr(args, "scheduler", None), getattr(args, "dry_run", False),
                      getattr(args, "plan_gpus", None), auto)
    at_least("--jobs", o.jobs, 1, JOBS_MAX)
    at_least("--plan-gpus", o.plan_gpus, 1, JOBS_MAX)
    not_blank("--scheduler", o.scheduler, "the Dask scheduler's address, such as tcp://10.0.0.1:8786")
    if o.jobs is not None and o.scheduler is not None:
        raise UsageError("give --jobs or --scheduler, not both (a Dask cluster chooses its own workers)")
    if o.plan_gpus is not None and not o.dry_run:
        raise UsageError("--plan-gpus applies to --dry-run only; add --dry-run")
    if o.scheduler is not None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise UsageError(_NO_DASK) from None
    return o


def executor(o: DistributedOptions, backend):
    """The executor the options ask for (LocalExecutor or DaskExecutor); close it after use."""
    if o.scheduler:
        from compare.processes.dask_executor import DaskExecutor
        return DaskExecutor(o.scheduler, connect=not o.dry_run)
    from compare.processes.executors import LocalExecutor
    return LocalExecutor(o.jobs or 1, _gpus(o, backend))


def _gpus(o: DistributedOptions, backend) -> int:
    if o.dry_run and o.plan_gpus is not None:
        return o.plan_gpus
    if not backend.gpu:
        return 0
    import torch
    return torch.cuda.device_count()


def run(o: DistributedOptions, plan, backend, step, failed):
    """The report of a distributed comparison (compare.processes.distributed.compare); the workers end with it."""
    import sys
    from compare.processes import distributed
    if o.jobs:
        print(f"kernel-ab: {workers_line(o)}", file=sys.stderr)
    with contextlib.closing(executor(o, backend)) as ex:
        return distributed.compare(plan, backend, step, failed, distributed.Distribution(ex))


def steps(o: DistributedOptions | None, plan, backend) -> int:
    """The progress units of the run: a distributed run's tasks, or the pipeline's own."""
    if o is not None and o.wanted:
        from compare.processes.distributed import count_steps
        return count_steps(plan, backend)
    from compare.comparison.pipeline import count_steps
    return count_steps(plan, backend)


def workers_line(o: DistributedOptions) -> str:
    """What --jobs starts, and why that many: one per core, or more than the cores (slower than fewer)."""
    n, here = o.jobs, cores()
    text = f"--jobs: {n} worker process{'es' if n > 1 else ''}"
    if o.auto:
        return f"{text}, one per core here"
    if n > here:
        return (f"{text}, more than the {here} core{'s' if here > 1 else ''} here: they share them, which is "
                f"slower than --jobs {here} (--jobs alone takes one per core)")
    return text


def dry_run(o: DistributedOptions, plan, backend) -> int:
    from compare.processes import distributed
    with contextlib.closing(executor(o, backend)) as ex:
        print("\n".join(distributed.dry_run(plan, backend, ex, _gpus(o, backend))))
    return 0
