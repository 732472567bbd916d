"""The timing check through the check protocol (compare/checks/check.py): here, each dtype in a fresh process
begun with the run (compare/comparison/timing_run.py) or every case in this process; as tasks, a case is one
(dtype, shape, pass) with every variant and the A/A control, on a GPU of its own."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from compare.checks.check import Case, Check, CheckStopped, Findings, Ready, Warm
from compare.comparison import timing_run
from compare.model.results import TimingCase, TimingSection
from compare.model.skips import Skip
from compare.model.vocabulary import CONFIDENCE, TIMING, dtype_name
from compare.runtime.backend import Backend
from compare.runtime.progress import Step

if TYPE_CHECKING:
    from compare.comparison.plan import Plan

NO_GPU_SHORT = "needs a CUDA GPU and this run has none"
NO_GPU = (f"{NO_GPU_SHORT} (Triton ran through its CPU interpreter, whose speed says "
          "nothing about the GPU)")


@dataclasses.dataclass(frozen=True)
class Place:
    """Where a worker times: its GPU's name and UUID, and the copy bandwidth measured there."""

    gpu: str = ""
    uuid: str = ""
    copy_gbs: float = 0.0


@dataclasses.dataclass(frozen=True)
class TimedCase:
    """One timing case as a task times it, with what its section says of the worker that timed it."""

    case: TimingCase
    gpu: str
    method: str
    compile_seconds: tuple[tuple[str, float], ...]
    place: Place


def place() -> Place:
    """This worker's GPU and its copy bandwidth (measured once a process: compare/runtime/process_keep.py)."""
    from compare.runtime import process_keep
    return process_keep.kept("place", _measured_place)


def _measured_place() -> Place:
    import torch
    from compare.checks import timing
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return Place(torch.cuda.get_device_name(), f"GPU-{props.uuid}" if getattr(props, "uuid", None) else "",
                 timing.copy_bandwidth_gbs(nbytes=1 << 28))


class TimingCheck(Check):
    name, result_type, exclusive = TIMING, TimedCase, True

    def cases(self, plan: Plan, backend: Backend) -> tuple[Case, ...]:
        if not backend.gpu:
            return ()
        return tuple(Case(self.name, f"timing {name} {shape.label} {mode}", plan.family.name, i, name, mode=mode)
                     for name in plan.dtype_names for i, shape in enumerate(plan.preset.shapes)
                     for mode in plan.timing.modes)

    def group(self, case: Case) -> str:
        return f"timing {case.dtype}"   # each dtype in a fresh process, as when timed without tasks

    def run(self, case: Case, plan: Plan, backend: Backend, step: Step) -> TimedCase:
        where = place()
        one = dataclasses.replace(plan, preset=dataclasses.replace(plan.preset, shapes=(plan.preset.shapes[case.shape],)),
                                  dtypes=(plan.family.dtypes[case.dtype],),
                                  timing=dataclasses.replace(plan.timing, modes=(case.mode,)))
        section = timing_run.run_timing(one, step, copy_gbs=where.copy_gbs)
        ran_on = f"{where.gpu} {where.uuid}".strip() + f", copy {where.copy_gbs:.0f} GB/s"
        return TimedCase(dataclasses.replace(section.cases[0], ran_on=ran_on), section.gpu, section.method,
                         section.compile_seconds, where)

    def collect(self, plan: Plan, backend: Backend, step: Step, results) -> Findings:
        if not backend.gpu:
            return Findings(skipped=(Skip("timing", NO_GPU, short=NO_GPU_SHORT),))
        return merged(plan, results.all())

    def begin(self, plan: Plan, backend: Backend, step: Step, warm: Warm = Warm()) -> Ready:
        """On a GPU, each dtype's timing process (`warm.timing`'s, where the caller keeps them) asked now to load
        while the numerics run."""
        if not backend.gpu:
            return Ready(lambda: Findings(skipped=(Skip("timing", NO_GPU, short=NO_GPU_SHORT),)))
        processes = _timing_processes(plan, backend, warm.timing)

        return Ready(lambda: _timing(plan, backend, step, processes),
                     close=processes.close if processes else lambda: None)

    def steps(self, plan: Plan, backend: Backend) -> int:
        if not backend.gpu:
            return 0
        dtypes = len(plan.dtypes)
        return dtypes if timing_run.in_fresh_processes(backend.gpu) else \
            len(plan.preset.shapes) * len(plan.timing.modes) * dtypes


def merged(plan: Plan, timed: list[TimedCase]) -> Findings:
    """The timing section of every task's case, in the plan's order, and the Skips of what was not timed."""
    if not timed:
        return Findings(skipped=plan.timing_left_out)
    first = timed[0]
    firsts: dict = {}   # one compile per dtype, as when each dtype is timed in a process of its own
    for t in timed:
        firsts.setdefault(t.case.dtype, t)
    places = {t.case.ran_on for t in timed}
    method = (first.method + "; each case timed by a worker process of its dtype, one case at a time on "
              f"a GPU ({len(places)} GPU{'s' if len(places) > 1 else ''}: each case says where)")
    return Findings(timing=TimingSection(first.gpu, float(first.place.copy_gbs), plan.timing.noise, CONFIDENCE, method,
                                         tuple(t.case for t in timed),
                                         tuple(x for t in firsts.values() for x in t.compile_seconds)),
                    skipped=plan.timing_left_out)


def _timing_processes(plan: Plan, backend: Backend, workers=None):
    """The timing processes (one a dtype, `workers`' if given: timing_run.TimingWorkers), asked now to load while
    the numerics run; None if timed here."""
    if TIMING not in plan.checks or not timing_run.in_fresh_processes(backend.gpu):
        return None
    return timing_run.TimingProcesses(timing_run.worker_request(plan), tuple(dtype_name(d) for d in plan.dtypes),
                                      workers=workers)


def _timing(plan: Plan, backend: Backend, step, processes=None) -> Findings:
    """The timing section (None: none) and the passes and dtypes not timed: the plan's passes, each dtype in a
    fresh process (`processes`: compare.comparison.timing_run.TimingProcesses) or, without, here."""
    left_out = Findings(skipped=plan.timing_left_out)
    if processes is None:
        return left_out + Findings(timing=timing_run.run_timing(plan, step))
    try:
        return left_out + processes.run(step)
    except CheckStopped as stopped:   # the dtypes timed before a stop, and the passes the plan left out
        raise CheckStopped(left_out + stopped.findings, stopped.stop) from None
