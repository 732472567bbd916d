"""From a comparison plan (compare/comparison/plan.py: the request resolved once) to a Report: run the asked-for
checks, collect provenance; and the --variant kernels loaded for the length of a run."""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator, Optional

from compare.model.habits import MissingPackage
from compare.checks import numerics
from compare.checks.draws import Draws
from compare.runtime import import_acts, interpreted_autotune, supervisor
from compare.comparison import loading, timing_run
from compare.comparison.loading import NothingToCompare, UnloadableSpec  # noqa: F401 (re-exported)
from compare.runtime.backend import Backend
from compare.comparison.pace import Pace, case_work
from compare.comparison.environment import collect
from compare.runtime.progress import Step
from compare.model.results import Failure, Interruption, NumericsSection, Report, ShapeParams, Skip, VariantInfo
from compare.model.same_code import settled
from compare.model.states import LoadStatus
from compare.comparison.plan import Plan, Request, build
from compare.model.errors import UsageError
from variants import Registry, UnknownName

class Interrupted(BaseException):
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) during the checks, with the report of what was done before it:
    the numerics cases finished, every section that was complete; `stop` is the supervisor's Stopped."""

    def __init__(self, report: Report, stop: supervisor.Stopped):
        super().__init__(str(stop))
        self.report, self.stop = report, stop


class _StoppedInNumerics(BaseException):
    def __init__(self, cases: list, stop: supervisor.Stopped):
        super().__init__(str(stop))
        self.cases, self.stop = cases, stop


def count_steps(plan: Plan, backend: Backend) -> int:
    """Units of work `execute` will advance through, for the progress bar."""
    steps = len(numerics_plan(plan))
    if "timing" in plan.checks and backend.gpu:
        dtypes = len(plan.dtypes)
        steps += dtypes if timing_run.in_fresh_processes(backend.gpu) else \
            len(plan.preset.shapes) * len(plan.timing.modes) * dtypes
    if "ir" in plan.checks:
        steps += 1
    return steps


def _ir(plan: Plan, backend: Backend, step, cache=None) -> tuple:
    """(IR sections, skipped reasons) for the preset's first shape and the first dtype (ir.run_passes)."""
    from compare.checks import ir
    names = plan.dtype_names
    first = names[0]   # one specialization: the first dtype asked for
    skipped = [Skip("ir", f"{', '.join(names[1:])} (the compiled code is shown for {first}, the first dtype asked for)")
               ] if names[1:] else []
    sections, more = ir.run_passes(plan.family, list(plan.variants), plan.preset.shapes[0], first, plan.request.target,
                                   backend.gpu, plan.stages, plan.request.full, cache, step)
    return sections, tuple(skipped) + more


@contextlib.contextmanager
def loaded(request: Request, registry: Registry, excluded=(), kernels=None) -> Iterator[tuple[Request, Registry, tuple]]:
    """Load the request's --variant kernels for the length of the block (variants.external, or `kernels`, a
    loader kept across comparisons: loading.kept_kernels); those `excluded` ((name, reason): their import ended
    an earlier run) are failed, not imported. Yields the request naming them after its own names, the registry
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
    loading.begin()
    with contextlib.nullcontext(kernels) if kernels else ExternalKernels(request.repo, guard=loading.launch) as kernels:
        try:
            joined = _joined_family(request, registry)
            registry, names, failed = add_to(registry, kernels, request.external, joined, dict(excluded))
        except (BadSpec, ValueError) as exc:
            raise UnloadableSpec(str(exc)) from None
        loading.settle(request.external, names)
        infos = tuple(VariantInfo(f.name, f.family, "triton", f"{f.where.rpartition('::')[2]}, loaded with --variant",
                                  f.origin, status=LoadStatus.FAILED, error=f.error, needs=MissingPackage.of(f.needs),
                                  failure=excluded_failure(f.name) if f.crashed else Failure.LOAD) for f in failed)
        if not set(request.variants) - {f.name for f in failed} and not names:
            raise _nothing_left(infos)
        # a --variant name may also be among the names, to set its place (e.g. make it the baseline)
        lost = {f.name for f in failed}
        ordered = tuple(n for n in request.variants if n not in lost)
        ordered += tuple(n for n in names if n not in ordered)
        yield (dataclasses.replace(request, variants=ordered, external=(), family=joined,
                                   loaded_specs=request.external), registry, infos)


@contextlib.contextmanager
def planned(request: Request, registry: Registry, options=None, *, excluded=(),
            backend: Backend | None = None, no_timing: str = "", kernels=None) -> Iterator[tuple[Plan, tuple]]:
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
        yield plan, failed


def _joined_family(request: Request, registry: Registry) -> str:
    """The family --variant kernels join: --family, else that of the variants named, else the default."""
    if request.family:
        return request.family
    named = [n for n in request.variants if registry.has(n)]
    try:
        return registry.get(named[0]).family if named else registry.default_family
    except UnknownName as exc:
        raise UsageError(str(exc)) from None


def without_crashed(plan: Plan, failed: tuple[VariantInfo, ...], crashed: list[tuple[str, str]],
                    no_timing: str = "", kinds: dict | None = None) -> tuple[Plan, tuple[VariantInfo, ...]]:
    """The plan less the variants that crashed an earlier run (each reported as failed with its
    reason), and less timing when it crashed (compare.runtime.supervisor). `kinds`: name -> the failure
    kind its end was given (default: the supervisor's, `excluded_failure`)."""
    if no_timing:
        plan = plan.without_timing(no_timing)
    if not crashed:
        return plan, failed
    reasons = dict(crashed)
    failed += tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, status=LoadStatus.FAILED, error=reasons[v.name],
                                failure=excluded_failure(v.name, kinds)) for v in plan.variants if v.name in reasons)
    kept = [v for v in plan.variants if v.name not in reasons]
    if not kept:
        raise NothingToCompare("; ".join(f"{name} {reason}" for name, reason in crashed))
    return plan.keeping(kept), failed


def excluded_failure(name: str, kinds: dict | None = None) -> Failure:
    """The failure kind of a variant an earlier run of this one excluded: TAMPER where it changed the
    process's shared state or the run's outcome (compare.runtime.process_guard), else CRASH. `kinds`:
    name -> kind, where not the supervisor's (a worker's task: compare.processes.distributed)."""
    kind = kinds[name] if kinds and name in kinds else supervisor.excluded_kind(name)
    return Failure.TAMPER if kind == supervisor.TAMPER else Failure.CRASH


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
            ir_cache=None, distributed=None, timing_workers=None) -> Report:
    """The report for `plan`; `failed` (from `loaded`) lists variants that could not be loaded.
    `ir_cache` (a compare.checks.ir.CompileCache) keeps compiled kernels for later runs of a caller comparing many pairs.
    `distributed` (compare.processes.distributed.Distribution) runs the checks as tasks in worker processes or on a cluster;
    `timing_workers` (timing_run.TimingWorkers) keeps the timing processes warm for the caller's later runs."""
    chosen, failed = _compiled(plan.family, list(plan.variants), plan.preset.shapes[0], plan.dtypes[0], backend,
                               tuple(failed), step)
    if len(chosen) != len(plan.variants):
        plan = plan.keeping(chosen)
    infos = tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, kernels=v.own_kernels)
                  for v in chosen) + tuple(failed)
    if distributed is not None:   # every task is started now; each section below waits for its own
        distributed = distributed.start(plan, backend, step)
    ir_later = _ir_alongside(plan, backend, step, ir_cache) if plan.directions and distributed is None else None
    timing_later = _timing_processes(plan, backend, timing_workers) if distributed is None else None
    try:
        return _checks(plan, backend, step, infos, ir_later, ir_cache, distributed, timing_later)
    except BaseException:   # a stop, or an error: the compile alongside ends with the run (its files removed)
        if ir_later:
            ir_later.cancel()
        raise
    finally:
        if timing_later:
            timing_later.close()


def _timing_processes(plan: Plan, backend: Backend, workers=None):
    """The timing processes (one a dtype, `workers`' if given), asked now to load while the numerics run."""
    if "timing" not in plan.checks or not timing_run.in_fresh_processes(backend.gpu):
        return None
    return timing_run.TimingProcesses(timing_run.worker_request(plan),
                                      tuple(str(d).removeprefix("torch.") for d in plan.dtypes), workers=workers)


def _checks(plan: Plan, backend, step, infos, ir_later, ir_cache, distributed=None, timing_later=None) -> Report:
    """The report; on a stop signal, Interrupted with the report of what was finished before it."""
    skipped = list(plan.left_out)
    if "backward" in plan.checks and "backward" not in plan.directions:
        skipped.append(Skip("backward", f"family {plan.family.name} has no backward pass"))
    numerics_section = None
    try:
        if plan.directions:
            numerics_section = run_numerics(plan, backend, step, distributed.numerics if distributed else None,
                                            distributed.numerics_finished if distributed else None)
        return _other_checks(plan, backend, step, infos, (ir_later, ir_cache, timing_later), distributed, numerics_section,
                             skipped)
    except (_StoppedInNumerics, supervisor.Stopped) as exc:
        stop = exc.stop if isinstance(exc, _StoppedInNumerics) else exc
        if isinstance(exc, _StoppedInNumerics):
            numerics_section = exc.cases
        planned = len(numerics_plan(plan)) if plan.directions else 0
        cases = numerics_section.cases if numerics_section is not None else ()
        started = {"numerics" if c.direction == "forward" else c.direction for c in cases}
        asked = [("numerics" if d == "forward" else d) for d in plan.directions] + \
            [c for c in ("timing", "ir") if c in plan.checks]
        stopped = Interruption(str(stop), len(cases), planned, tuple(c for c in asked if c not in started))
        skipped.extend(stopped.skips())
        report = _report(plan, backend, infos, numerics_section, None, (), skipped, distributed)
        raise Interrupted(dataclasses.replace(report, interrupted=stopped), stop) from None


def _other_checks(plan: Plan, backend, step, infos, later, distributed, numerics_section, skipped) -> Report:
    """The timing and IR sections after the numerics; `later`: the IR compile alongside, its cache, the timing
    processes started with the run."""
    ir_later, ir_cache, timing_later = later
    timing_section = None
    if "timing" in plan.checks:
        if backend.gpu:
            timing_section, timing_skipped = distributed.timing() if distributed else _timing(plan, backend, step, timing_later)
            skipped.extend(timing_skipped)
        else:
            skipped.append(Skip("timing", "needs a CUDA GPU and this run has none (Triton ran through its CPU "
                                "interpreter, whose speed says nothing about the GPU)"))
    ir_sections = ()
    if "ir" in plan.checks:
        ir_sections, ir_skipped = distributed.ir() if distributed else ir_later() if ir_later else \
            _ir(plan, backend, step, ir_cache)
        step.advance()
        skipped.extend(ir_skipped)
    return _report(plan, backend, infos, numerics_section, timing_section, ir_sections, skipped, distributed)


def _report(plan: Plan, backend, infos, numerics_section, timing_section, ir_sections, skipped, distributed) -> Report:
    family, preset = plan.family, plan.preset
    dtype_names = ",".join(str(d).removeprefix("torch.") for d in plan.dtypes)
    return settled(Report(family=family.name, preset=preset.name, dtype=dtype_names, baseline=plan.variants[0].name,
                          incidents=supervisor.left_behind() + (distributed.incidents() if distributed else ()),
                          library=import_acts.library(), variants=infos, environment=collect(backend), shapes=tuple(s.label for s in preset.shapes),
                          x_name=preset.x_name, x_values=tuple(float(preset.x_value(s)) for s in preset.shapes),
                          shape_params=tuple(ShapeParams(_shape_params(s, twice))
                                             for s, twice in zip(preset.shapes, plan.reads_x_twice)),
                          numerics=numerics_section, timing=timing_section, ir=(ir_sections or (None,))[0],
                          ir_kernels=ir_sections[1:], skipped=tuple(skipped)))   # compare/model/same_code.py


def _ir_alongside(plan: Plan, backend: Backend, step, cache=None):
    """Offline compiles run in a worker process: started here, they use the second core while numerics
    run the interpreter on the first. Returns what gives `_ir`'s result (None: not overlapped, as on a GPU,
    where kernels are read back after a launch, or with ops, which are run in this process to find theirs)."""
    if "ir" not in plan.checks or backend.gpu or any(v.kind == "op" for v in plan.variants):
        return None
    import threading
    found: dict = {}

    def compile_all():
        try:
            found["result"] = _ir(plan, backend, step, cache)
        except BaseException as exc:   # noqa: BLE001 - raised again where the result is read
            found["error"] = exc
    worker = threading.Thread(target=compile_all, name="kernel-ab IR compile", daemon=True)
    worker.start()

    def result():
        worker.join()
        if "error" in found:
            raise found["error"]
        return found["result"]

    def cancel():   # the run is ending: the worker's compile, and with it the thread, end now
        from compare.checks.ir.compile import stop_workers
        stop_workers()
        worker.join(timeout=30)
    result.cancel = cancel
    return result


def _shape_params(shape, twice: Optional[bool]) -> dict:
    """A shape's parameters, and whether the family says its forward must read x twice (None: it does not say)."""
    params = shape.as_dict()
    if twice is not None:
        params["reads_x_twice"] = bool(twice)
    return params


def _timing(plan: Plan, backend: Backend, step, processes=None) -> tuple:
    """(the timing section or None, lines for passes and dtypes not timed): the plan's passes, each dtype
    in a fresh process (`processes`: compare.comparison.timing_run.TimingProcesses) or, without, here."""
    skipped = plan.timing_left_out
    if processes is None:
        return timing_run.run_timing(plan, step), skipped
    section, failed = processes.run(step)
    return section, skipped + tuple(failed)


def numerics_plan(plan: Plan) -> list[tuple]:
    """(direction, dtype, input kind, shape, seeds) of every numerics case, in run order. Without
    --inputs (the quick plan) only the forward on normal inputs covers every shape and trial."""
    cases = []
    for direction in plan.directions:
        for dtype in plan.dtypes:
            for kind in plan.input_kinds:
                light = plan.quick and (kind != "normal" or direction == "backward")
                for shape in (plan.preset.shapes[:1] if light else plan.preset.shapes):
                    cases.append((direction, dtype, kind, shape, plan.seeds[:1] if light else plan.seeds))
    return cases


def numerics_variants(plan: Plan) -> tuple[list, str, str]:
    """(the variants the numerics run, the reference point added though not named or "", the reference's name)."""
    variants, added, wanted = list(plan.variants), "", plan.accuracy_reference
    if wanted is not None and wanted.name not in {v.name for v in plan.variants}:
        variants.append(wanted)
        added = wanted.name
    return variants, added, plan.family.accuracy_reference if wanted is not None else ""


def run_numerics(plan: Plan, backend: Backend, step: Step = Step(), cases=None, finished=None) -> NumericsSection:
    """Every (direction, dtype, input kind, shape) case. The torch variant joins as an accuracy
    reference point when not named. Without --inputs (the quick plan, so the default run stays
    quick on the CPU interpreter) only the forward pass on normal inputs runs on every shape with
    every trial; every other case runs on the preset's first shape with one trial. Naming kinds
    (`--inputs all`) runs every case on every shape and trial."""
    family, preset, directions = plan.family, plan.preset, plan.directions
    variants, added, reference = numerics_variants(plan)
    plan_lines = [f"checks: {', '.join(directions)}; dtypes: "
                  f"{', '.join(str(d).removeprefix('torch.') for d in plan.dtypes)}; "
                  f"input kinds: {', '.join(plan.input_kinds)}"]
    if plan.quick:
        plan_lines.append(f"quick plan (no --inputs): forward with normal inputs on every shape, {len(plan.seeds)} "
                          f"trials; every other case on the first shape ({preset.shapes[0].label}), 1 trial; "
                          f"--inputs all runs every case on every shape and trial")
    else:
        plan_lines.append(f"every case on every shape, {len(plan.seeds)} trials")
    if backend.interpreted:
        plan_lines.append("run-to-run spread: not measured for Triton kernels here (the interpreter runs a kernel's "
                          "programs one after another, so the same inputs give the same bits)")
    plan_lines.append(f"every run reads its own copy of the inputs (a variant that writes into one is named); a "
                      f"launch that has not returned after {supervisor.limit_s():g} s is stopped (--variant-timeout)")
    ops = [v.name for v in variants if v.kind == "op"]
    if ops:
        plan_lines.append(f"op-level variants ({', '.join(ops)}) are called as their users call them: forward, the "
                          f"op's result ({family.outputs[0]}) alone; backward, every gradient through autograd")
    def section(done) -> NumericsSection:
        return NumericsSection(backend.device, backend.note, tuple(done), numerics.VERDICT_FACTOR, added, tuple(plan_lines)
                               + interpreted_autotune.said(used), family.forward_legend, family.backward_legend, family.backward_pairs_legend)
    # `cases`: the cases run elsewhere (compare.processes.distributed), in the plan's order; `finished`: those done
    done = []
    with interpreted_autotune.recording() as used:
        try:
            done = cases() if cases else _run_cases(plan, variants, backend, step, reference, done)
        except supervisor.Stopped as stop:   # the report of the cases finished comes out all the same
            raise _StoppedInNumerics(section(finished() if finished else done), stop) from None
    return section(done)


def _run_cases(plan: Plan, variants, backend: Backend, step: Step, reference: str, done: list) -> list:
    """Every numerics case of the plan here, in order, into `done` (what a stop leaves is the cases finished),
    the coming trials' inputs drawn ahead (compare.checks.draws)."""
    order, pace = numerics_plan(plan), Pace()
    with Draws(plan.family, backend.device, order) as draws:
        for direction, dtype, kind, shape, seeds in order:
            work = case_work(plan.family, variants, shape, dtype, seeds, direction, backend) \
                if backend.interpreted else (0, 0)
            label = f"{direction} {shape.label} {str(dtype).removeprefix('torch.')} {kind}"
            with pace.case(label, *work):   # a CPU case of more than a minute is said before it starts
                done.append(numerics.run_case(plan.family, variants, shape, dtype, backend, seeds, kind, step,
                                              direction, reference, draws.get))
                step.advance()   # a unit of progress is a case, as the report of an interrupted run counts them
    return done
