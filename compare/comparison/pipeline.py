"""From a comparison plan (compare/comparison/plan.py: the request resolved once) to a Report: run the asked-for
checks, collect provenance; and the --variant kernels loaded for the length of a run."""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator, NamedTuple, Optional, Sequence

from compare.model.habits import MissingPackage
from compare.model.reruns import Culprit
from compare.checks import numerics  # noqa: F401 (its run_case is what a numerics case calls)
from compare.checks.check import Check, CheckStopped, Findings, Warm
from compare.runtime import import_acts, supervisor
from compare.comparison import loading
from compare.comparison.loading import NothingToCompare, UnloadableSpec  # noqa: F401 (re-exported)
from compare.comparison.numerics_check import numerics_variants  # noqa: F401 (re-exported)
from compare.comparison.timing_check import _timing, _timing_processes  # noqa: F401 (re-exported)
from compare.runtime.backend import Backend
from compare.comparison.environment import collect
from compare.runtime.progress import Step
from compare.model.results import Failure, Report, ShapeParams, VariantInfo
from compare.model.same_code import settled
from compare.model.skips import Skip
from compare.model.states import LoadStatus
from compare.model.vocabulary import dtype_name
from compare.comparison.plan import Plan, Request, build
from compare.model.errors import UsageError
from variants import Registry, UnknownName


class Interrupted(BaseException):
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) during the checks, with the report of what was done before it:
    the numerics cases finished, every section that was complete; `stop` is the supervisor's Stopped."""

    def __init__(self, report: Report, stop: supervisor.Stopped):
        super().__init__(str(stop))
        self.report, self.stop = report, stop


def count_steps(plan: Plan, backend: Backend) -> int:
    """Units of work `execute` will advance through, for the progress bar."""
    return sum(check.steps(plan, backend) for check in plan.runs)


@contextlib.contextmanager
def loaded(request: Request, registry: Registry, excluded: Sequence[Culprit] = (),
           kernels=None) -> Iterator[tuple[Request, Registry, tuple]]:
    """Load the request's --variant kernels for the length of the block (variants.external, or `kernels`, a
    loader kept across comparisons: loading.kept_kernels); those `excluded` (their import ended an earlier run)
    are failed, not imported. Yields the request naming them after its own names, the registry
    holding them, a failed VariantInfo for each file that did not import; what was materialized is removed at
    exit (not `kernels`'s). Bad input is a UsageError; NothingToCompare when every variant asked for failed."""
    if request.family is not None and request.family not in registry.families:
        raise UsageError(f"--family: unknown family {request.family!r}; known families: {', '.join(registry.families)}")
    from compare.runtime import process_guard
    process_guard.enable(registry)   # before any variant's code runs: what each launch changes is put back
    if not request.external:
        yield request, registry, ()
        return
    from variants.external import BadSpec, ExternalKernels, add_to
    from variants.spec import of
    import_acts.begin()
    with contextlib.nullcontext(kernels) if kernels else ExternalKernels(request.repo, guard=loading.launch) as kernels:
        try:
            joined = _joined_family(request, registry)
            specs = tuple(of(given) for given in request.external)   # a user's text parsed here, once
            registry, names, failed = add_to(registry, kernels, specs, joined, {c.name: c.reason for c in excluded})
        except (BadSpec, ValueError) as exc:
            raise UnloadableSpec(str(exc)) from None
        loading.settle(specs, names)
        infos = tuple(VariantInfo(f.name, f.family, "triton", f"{f.where.rpartition('::')[2]}, loaded with --variant",
                                  f.origin, status=LoadStatus.FAILED, error=f.error, needs=MissingPackage.of(f.needs),
                                  failure=excluded_failure(f.name, excluded) if f.crashed else Failure.LOAD) for f in failed)
        if not set(request.variants) - {f.name for f in failed} and not names:
            raise _nothing_left(infos)
        # a --variant name may also be among the names, to set its place (e.g. make it the baseline)
        lost = {f.name for f in failed}
        ordered = tuple(n for n in request.variants if n not in lost)
        ordered += tuple(n for n in names if n not in ordered)
        yield (dataclasses.replace(request, variants=ordered, external=(), family=joined,
                                   loaded_specs=specs), registry, infos)


class Planned(NamedTuple):
    """A plan, and the variants that failed to load or an earlier run excluded (reported, never run)."""

    plan: Plan
    failed: tuple[VariantInfo, ...]


@contextlib.contextmanager
def planned(request: Request, registry: Registry, options=None, *, excluded=(),
            backend: Backend | None = None, no_timing: str = "", kernels=None) -> Iterator[Planned]:
    """The one way from a request to a plan: its --variant kernels loaded for the block (`loaded`), the plan
    built once (bad input fails before any work), and (given the `backend`: in the process that runs the
    comparison, not a worker) refused when it cannot fit, less the variants and timing an earlier run
    excluded (`without_crashed`). Yields the plan and the variants that failed to load or were excluded."""
    with loaded(request, registry, excluded, kernels) as (request, registry, failed):
        plan = build(request, registry) if options is None else build(request, registry, options)
        if backend is not None:
            from compare.comparison import memory
            memory.refuse_what_cannot_fit(plan, backend)
            plan, failed = without_crashed(plan, failed, excluded, no_timing)
        yield Planned(plan, failed)


def _joined_family(request: Request, registry: Registry) -> str:
    """The family --variant kernels join: --family, else that of the variants named, else the default."""
    if request.family:
        return request.family
    named = [n for n in request.variants if registry.has(n)]
    try:
        return registry.get(named[0]).family if named else registry.default_family
    except UnknownName as exc:
        raise UsageError(str(exc)) from None


def without_crashed(plan: Plan, failed: tuple[VariantInfo, ...], crashed: Sequence[Culprit],
                    no_timing: str = "") -> Planned:
    """The plan less the variants that crashed an earlier run (each reported as failed with its reason and
    the failure kind its end was given), and less timing when it crashed (compare.runtime.supervisor)."""
    if no_timing:
        plan = plan.without_timing(no_timing)
    if not crashed:
        return Planned(plan, failed)
    reasons = {c.name: c.reason for c in crashed}
    failed += tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, status=LoadStatus.FAILED, error=reasons[v.name],
                                failure=excluded_failure(v.name, crashed)) for v in plan.variants if v.name in reasons)
    kept = [v for v in plan.variants if v.name not in reasons]
    if not kept:
        raise NothingToCompare("; ".join(f"{c.name} {c.reason}" for c in crashed))
    return Planned(plan.keeping(kept), failed)


def excluded_failure(name: str, excluded: Sequence[Culprit]) -> Failure:
    """The failure kind of `name`, which an earlier run of this one excluded: TAMPER where it changed the
    process's shared state or the run's outcome (compare.runtime.process_guard) or kept the GPU busy, else
    CRASH."""
    kind = next((c.kind for c in excluded if c.name == name), "")
    return Failure.TAMPER if kind in (supervisor.TAMPER, supervisor.BUSY) else Failure.CRASH


def _nothing_left(failed: tuple[VariantInfo, ...]) -> NothingToCompare:
    return NothingToCompare("; ".join(f"{i.name} could not be loaded: {i.error.splitlines()[0]}" for i in failed), failed)


def _compiled(family, chosen: list, shape, dtype, backend: Backend, failed: tuple[VariantInfo, ...],
              step: Step = Step()):
    """On compiled Triton, move the variants whose kernels do not compile from `chosen` to `failed`."""
    if backend.interpreted:  # the interpreter compiles nothing; its errors are the numerics'
        return chosen, failed
    from variants.external import compile_failures
    broken = compile_failures(family, chosen, shape, dtype, backend.device, step)
    failed += tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, status=LoadStatus.FAILED, error=broken[v.name],
                                kernels=v.own_kernels, failure=Failure.LOAD) for v in chosen if v.name in broken)
    chosen = [v for v in chosen if v.name not in broken]
    if not chosen:
        raise _nothing_left(failed)
    return chosen, failed


def run(request: Request, registry: Registry, backend: Backend,
        step: Step = Step(), failed: tuple[VariantInfo, ...] = (), ir_cache=None) -> Report:
    """The report for `request` (planned here: compare.comparison.plan.build); see `execute`."""
    return execute(build(request, registry), backend, step, failed, ir_cache)


def execute(plan: Plan, backend: Backend, step: Step = Step(), failed: tuple[VariantInfo, ...] = (),
            ir_cache=None, distributed=None, timing_workers=None, enough=None) -> Report:
    """The report for `plan`; `failed` (from `loaded`) lists variants that could not be loaded.
    `ir_cache` (a compare.checks.ir.CompileCache) keeps compiled kernels for later runs of a caller comparing many pairs.
    `distributed` (compare.processes.distributed.Distribution) runs the checks as tasks in worker processes or on a cluster;
    `timing_workers` (timing_run.TimingWorkers) keeps the timing processes warm for the caller's later runs;
    `enough(findings)`, after each check: why the checks after it are not worth running (skipped), or None."""
    chosen, failed = _compiled(plan.family, list(plan.variants), plan.preset.shapes[0], plan.dtypes[0], backend,
                               tuple(failed), step)
    if len(chosen) != len(plan.variants):
        plan = plan.keeping(chosen)
    infos = tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, kernels=v.own_kernels)
                  for v in chosen) + tuple(failed)
    if distributed is not None:   # every task is started now; each check below waits for its own
        distributed = distributed.start(plan, backend, step)
    # each check begun before any runs: what can overlap (the IR's compiles, the timing processes' start) does
    warm = Warm(ir=ir_cache, timing=timing_workers)
    begun = [distributed.pending(c) if distributed else c.begin(plan, backend, step, warm) for c in plan.runs]
    try:
        return _checks(plan, backend, infos, begun, distributed, enough, step.total)
    except BaseException:   # a stop, or an error: what a check began ends with the run (its files removed)
        for pending in begun:
            pending.cancel()
        raise
    finally:
        for pending in begun:
            pending.close()


def _checks(plan: Plan, backend, infos, begun: list, distributed=None, enough=None, steps: int = 0) -> Report:
    """The report of every check's findings; on a stop signal, Interrupted with the report of what was finished
    before it (the cases a `partial` check finished; `steps`: the units the progress counted to)."""
    left_out = Findings(skipped=plan.left_out + tuple(s for c in plan.runs for s in c.left_out(plan)))
    found, kept = left_out, left_out
    try:
        for index, (check, pending) in enumerate(zip(plan.runs, begun)):
            findings = pending.result()
            found += findings
            kept += findings if check.partial else Findings()
            why = enough(found) if enough is not None else None
            if why:
                found += _not_worth(plan, begun, index + 1, why)
                break
    except (CheckStopped, supervisor.Stopped) as exc:
        stop = exc.stop if isinstance(exc, CheckStopped) else exc
        kept += exc.findings if isinstance(exc, CheckStopped) else Findings()
        # a check that kept what it finished ran: its own records say what it did not (the partial one counts)
        ran = check if isinstance(exc, CheckStopped) and not check.partial else None
        asked = tuple(word for c in plan.runs if c is not ran for word in c.asked(plan))
        partial = next((c for c in plan.runs if c.partial), Check())
        stopped = dataclasses.replace(partial.interruption(str(stop), plan, backend, kept, asked), steps=steps)
        report = _report(plan, backend, infos, kept + Findings(skipped=stopped.skips()), distributed)
        raise Interrupted(dataclasses.replace(report, interrupted=stopped), stop) from None
    return _report(plan, backend, infos, found, distributed)


def _not_worth(plan: Plan, begun: list, after: int, why: str) -> Findings:
    """The checks from `after` on ended unrun, each said skipped for `why`."""
    for pending in begun[after:]:
        pending.cancel()
    return Findings(skipped=tuple(Skip(word, why) for check in plan.runs[after:] for word in check.asked(plan)))


def _report(plan: Plan, backend, infos, found: Findings, distributed) -> Report:
    family, preset = plan.family, plan.preset
    dtype_names = ",".join(dtype_name(d) for d in plan.dtypes)
    return settled(Report(family=family.name, preset=preset.name, dtype=dtype_names, baseline=plan.variants[0].name,
                          incidents=supervisor.left_behind() + (distributed.incidents() if distributed else ()),
                          library=import_acts.library(), variants=infos, environment=collect(backend), shapes=tuple(s.label for s in preset.shapes),
                          x_name=preset.x_name, x_values=tuple(float(preset.x_value(s)) for s in preset.shapes),
                          shape_params=tuple(ShapeParams(_shape_params(s, twice))
                                             for s, twice in zip(preset.shapes, plan.reads_x_twice)),
                          numerics=found.numerics, timing=found.timing, ir=found.ir,
                          ir_kernels=found.ir_kernels, skipped=found.skipped, checks=found.sections))   # compare/model/same_code.py


def _shape_params(shape, twice: Optional[bool]) -> dict:
    """A shape's parameters, and whether the family says its forward must read x twice (None: it does not say)."""
    params = shape.as_dict()
    if twice is not None:
        params["reads_x_twice"] = bool(twice)
    return params


