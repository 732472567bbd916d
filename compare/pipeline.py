"""From a comparison request to a Report: resolve names, run the asked-for checks, collect provenance."""
from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Iterator

from compare import numerics, supervisor, timing_run
from compare.backend import Backend
from compare.environment import collect
from compare.progress import Step
from compare.results import NumericsSection, Report, VariantInfo
from compare.timing import TimingConfig
from compare.usage import UsageError
from variants import Registry, UnknownName

CHECKS = ("numerics", "backward", "timing", "ir")


class NothingToCompare(RuntimeError):
    """Every variant asked for failed to load; the message says which and why, one line each."""


@dataclasses.dataclass(frozen=True)
class Request:
    variants: tuple[str, ...]
    preset: str | None = None
    shape: str | None = None     # one shape instead of a preset, in the family's --shape form
    eps: float = 1e-6
    dtype: str = "float32"
    checks: tuple[str, ...] = CHECKS
    trials: int = 3
    seed: int = 0
    input_kind: str = "normal"       # the one input kind of checks that take one (numerics takes `inputs`)
    inputs: str | None = None        # input kinds, comma-separated, or "all" (None: all of the family's)
    timing: TimingConfig = TimingConfig()
    target: str = "sm_90"          # ir: the target of offline compiles (no GPU)
    stages: tuple[str, ...] = ()   # ir: stages to summarize and diff (empty: all)
    full: bool = False             # ir: keep whole normalized listings and uncut diffs
    external: tuple[str, ...] = ()   # --variant specs: NAME=PATH::FUNCTION or NAME=git:REV:PATH::FUNCTION
    repo: str = "."                  # the git repository of git: specs
    family: str | None = None        # the family compared (None: the named variants', else the default one)
    left_out: tuple[str, ...] = ()   # checks left out by a supervisor, each with its reason (compare.supervisor)
    loaded_specs: tuple[str, ...] = ()   # the --variant specs `loaded` loaded (a timing process loads them again)


def resolve(request: Request, registry: Registry):
    """(family, variants, preset, torch dtype) for the request, or UsageError naming what is known."""
    try:
        names = request.variants
        if not names:
            names = registry.family(request.family or registry.default_family).default_pair
        chosen = [registry.get(n, request.family) for n in names]
        if len(set(names)) != len(names):
            raise UsageError(f"a variant is named twice in {', '.join(names)}; name each once")
        families = {v.family for v in chosen}
        if len(families) != 1:
            raise UsageError(f"variants come from different families ({', '.join(sorted(families))}); "
                             "compare variants of one family")
        family = registry.family(families.pop())
        if request.shape and request.preset:
            raise UsageError("give --preset or --shape, not both")
        if request.shape:
            preset = family.parse_shape(request.shape, request.eps)
        else:
            preset = family.preset(request.preset or family.default_preset)
    except UnknownName as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        if isinstance(exc, UsageError):
            raise
        raise UsageError(str(exc)) from None
    dtypes, _ = resolve_matrix(request, family)
    if request.input_kind not in family.input_kinds:
        raise UsageError(f"family {family.name} has no input kind {request.input_kind!r}; "
                         f"its kinds: {', '.join(family.input_kinds)}")
    unknown = [c for c in request.checks if c not in CHECKS]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; known checks: {', '.join(CHECKS)}")
    if request.trials < 1:
        raise UsageError(f"--trials must be at least 1, got {request.trials}")
    if "ir" in request.checks:
        _check_ir(request)
    return family, chosen, preset, dtypes[0]


def _names(text: str, known, what: str, flag: str, family) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",")))
    if names == ("all",):
        return tuple(known)
    for n in names:
        if n not in known:
            raise UsageError(f"unknown {what} {n!r}; known {what}s: {', '.join(known)} "
                             f"(of family {family.name}; or all: {flag} takes a comma list)")
    return names


def resolve_matrix(request: Request, family):
    """(torch dtypes, input kinds) the request asks for of `family`; UsageError naming the family's own."""
    dtypes = tuple(family.dtypes[n] for n in _names(request.dtype, family.dtypes, "dtype", "--dtype", family))
    kinds = tuple(family.input_kinds) if request.inputs is None else \
        _names(request.inputs, family.input_kinds, "input kind", "--inputs", family)
    return dtypes, kinds


def count_steps(request: Request, registry: Registry, backend: Backend) -> int:
    """Units of work `run` will advance through, for the progress bar."""
    family, chosen, preset, _ = resolve(request, registry)
    steps = 0
    steps += sum(len(seeds) for *_, seeds in numerics_plan(request, family, preset, _directions(request, family)))
    if "timing" in request.checks and backend.gpu:
        dtypes = len(resolve_matrix(request, family)[0])
        steps += dtypes if timing_run.in_fresh_processes(backend.gpu) else \
            len(preset.shapes) * len(timing_run.plan_modes(family, chosen, request.timing.modes)[0]) * dtypes
    if "ir" in request.checks:
        steps += 1
    return steps


def _check_ir(request: Request) -> None:
    from compare import ir
    try:
        ir.capability(request.target)
        ir.check_stages(request.stages)
    except ValueError as exc:
        raise UsageError(f"--target/--stage: {exc}") from None


def _ir(request: Request, family, chosen, preset, backend: Backend, step, cache=None) -> tuple:
    """(IR sections, skipped reasons) for the preset's first shape and the first dtype (ir.run_passes)."""
    from compare import ir
    names = [n for d in resolve_matrix(request, family)[0] for n, fd in family.dtypes.items() if fd == d]
    first = names[0]   # one specialization: the first dtype asked for
    skipped = [f"ir: {', '.join(names[1:])} (the compiled code is shown for {first}, the first dtype asked for)"
               ] if names[1:] else []
    sections, more = ir.run_passes(family, chosen, preset.shapes[0], first, request.target, backend.gpu,
                                   request.stages or ir.STAGES, request.full, cache, step)
    return sections, tuple(skipped) + more


@contextlib.contextmanager
def loaded(request: Request, registry: Registry,
           excluded=()) -> Iterator[tuple[Request, Registry, tuple[VariantInfo, ...]]]:
    """Load the request's --variant kernels for the length of the block (variants.external); those
    `excluded` names ((name, reason) pairs: their import ended an earlier run) are failed, not imported.

    Yields the request naming them after its own names, the registry holding them, and a failed
    VariantInfo for each kernel file that did not import. What was materialized is removed at exit,
    also on error. Bad input is a UsageError; NothingToCompare when every variant asked for failed."""
    if request.family is not None and request.family not in registry.families:
        raise UsageError(f"--family: unknown family {request.family!r}; known families: {', '.join(registry.families)}")
    if not request.external:
        yield request, registry, ()
        return
    from variants.external import BadSpec, ExternalKernels, add_to
    with ExternalKernels(request.repo, guard=lambda name, what: supervisor.running((name,), what)) as kernels:
        try:
            joined = _joined_family(request, registry)
            registry, names, failed = add_to(registry, kernels, request.external, joined, dict(excluded))
        except (BadSpec, ValueError) as exc:
            raise UsageError(str(exc)) from None
        infos = tuple(VariantInfo(f.name, f.family, "triton", f"{f.where.rpartition('::')[2]}, loaded with --variant",
                                  f.origin, status="failed", error=f.error) for f in failed)
        if not set(request.variants) - {f.name for f in failed} and not names:
            raise _nothing_left(infos)
        # a --variant name may also be among the names, to set its place (e.g. make it the baseline)
        lost = {f.name for f in failed}
        ordered = tuple(n for n in request.variants if n not in lost)
        ordered += tuple(n for n in names if n not in ordered)
        yield (dataclasses.replace(request, variants=ordered, external=(), family=joined,
                                   loaded_specs=request.external), registry, infos)


def _joined_family(request: Request, registry: Registry) -> str:
    """The family --variant kernels join: --family, else that of the variants named, else the default."""
    if request.family:
        return request.family
    named = [n for n in request.variants if registry.has(n)]
    try:
        return registry.get(named[0]).family if named else registry.default_family
    except UnknownName as exc:
        raise UsageError(str(exc)) from None


def without_crashed(request: Request, registry: Registry, failed: tuple[VariantInfo, ...],
                    crashed: list[tuple[str, str]], no_timing: str = "") -> tuple[Request, tuple[VariantInfo, ...]]:
    """The request less the variants that crashed an earlier run (each reported as failed with its
    reason), and less timing when it crashed (compare.supervisor)."""
    if no_timing:
        request = dataclasses.replace(request, checks=tuple(c for c in request.checks if c != "timing"),
                                      left_out=request.left_out + (f"timing: {no_timing}",))
    if not crashed:
        return request, failed
    reasons = dict(crashed)
    chosen = resolve(request, registry)[1]
    failed += tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, status="failed", error=reasons[v.name])
                    for v in chosen if v.name in reasons)
    names = tuple(v.name for v in chosen if v.name not in reasons)
    if not names:
        raise NothingToCompare("; ".join(f"{name} {reason}" for name, reason in crashed))
    return dataclasses.replace(request, variants=names), failed


def _nothing_left(failed: tuple[VariantInfo, ...]) -> NothingToCompare:
    return NothingToCompare("; ".join(f"{i.name} could not be loaded: {i.error.splitlines()[0]}" for i in failed))


def _compiled(family, chosen: list, shape, dtype, backend: Backend, failed: tuple[VariantInfo, ...],
              step: Step = Step()):
    """On compiled Triton, move the variants whose kernels do not compile from `chosen` to `failed`."""
    if backend.interpreted:  # the interpreter compiles nothing; its errors are the numerics'
        return chosen, failed
    from variants.external import compile_failures
    broken = compile_failures(family, chosen, shape, dtype, backend.device, step)
    failed += tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, status="failed", error=broken[v.name],
                                kernels=v.own_kernels)
                    for v in chosen if v.name in broken)
    chosen = [v for v in chosen if v.name not in broken]
    if not chosen:
        raise _nothing_left(failed)
    return chosen, failed


def run(request: Request, registry: Registry, backend: Backend,
        step: Step = Step(), failed: tuple[VariantInfo, ...] = (), ir_cache=None, spread=None) -> Report:
    """The report for `request`; `failed` (from `loaded`) lists variants that could not be loaded.
    `ir_cache` (a compare.ir.CompileCache) keeps compiled kernels for later runs of a caller comparing many pairs.
    `spread` (compare.spread.Spread) runs the checks as tasks in worker processes or on a cluster."""
    family, chosen, preset, dtype = resolve(request, registry)
    chosen, failed = _compiled(family, chosen, preset.shapes[0], dtype, backend, tuple(failed), step)
    infos = tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, kernels=v.own_kernels)
                  for v in chosen) + tuple(failed)
    directions = _directions(request, family)
    if spread is not None:   # every task is started now; each section below waits for its own
        spread = spread.start(request, registry, family, chosen, preset, backend, directions, step)
    ir_later = _ir_alongside(request, family, chosen, preset, backend, step, ir_cache) \
        if directions and spread is None else None
    try:
        return _checks(request, registry, backend, step, family, chosen, preset, infos, directions, ir_later, ir_cache,
                       spread)
    except BaseException:   # a stop, or an error: the compile alongside ends with the run (its files removed)
        if ir_later:
            ir_later.cancel()
        raise


def _checks(request, registry, backend, step, family, chosen, preset, infos, directions, ir_later, ir_cache,
            spread=None) -> Report:
    numerics_section = None
    if directions:
        numerics_section = run_numerics(request, family, chosen, preset, backend, registry, directions, step,
                                        spread.numerics if spread else None)
    skipped = list(request.left_out)
    if "backward" in request.checks and "backward" not in directions:
        skipped.append(f"backward: family {family.name} has no backward pass")
    timing_section = None
    if "timing" in request.checks:
        if backend.gpu:
            timing_section, timing_skipped = spread.timing() if spread else \
                _timing(request, family, chosen, preset, backend, step)
            skipped.extend(timing_skipped)
        else:
            skipped.append("timing: needs a CUDA GPU and this run has none (Triton ran through its CPU "
                           "interpreter, whose speed says nothing about the GPU)")
    ir_sections = ()
    if "ir" in request.checks:
        ir_sections, ir_skipped = spread.ir() if spread else ir_later() if ir_later else \
            _ir(request, family, chosen, preset, backend, step, ir_cache)
        step.advance()
        skipped.extend(ir_skipped)
    dtype_names = ",".join(str(d).removeprefix("torch.") for d in resolve_matrix(request, family)[0])
    return Report(family=family.name, preset=preset.name, dtype=dtype_names, baseline=chosen[0].name,
                  incidents=supervisor.left_behind() + (spread.incidents() if spread else ()), variants=infos, environment=collect(backend), shapes=tuple(s.label for s in preset.shapes),
                  x_name=preset.x_name, x_values=tuple(float(preset.x_value(s)) for s in preset.shapes),
                  shape_params=tuple(json.dumps(_shape_params(family, s), sort_keys=True) for s in preset.shapes),
                  numerics=numerics_section, timing=timing_section, ir=(ir_sections or (None,))[0],
                  ir_kernels=ir_sections[1:], skipped=tuple(skipped))


def _ir_alongside(request: Request, family, chosen, preset, backend: Backend, step, cache=None):
    """Offline compiles run in a worker process: started here, they use the second core while numerics
    run the interpreter on the first. Returns what gives `_ir`'s result (None: not overlapped, as on a GPU,
    where kernels are read back after a launch, or with ops, which are run in this process to find theirs)."""
    if "ir" not in request.checks or backend.gpu or any(v.kind == "op" for v in chosen):
        return None
    import threading
    found: dict = {}

    def compile_all():
        try:
            found["result"] = _ir(request, family, chosen, preset, backend, step, cache)
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
        from compare.ir.compile import stop_workers
        stop_workers()
        worker.join(timeout=30)
    result.cancel = cancel
    return result


def _shape_params(family, shape) -> dict:
    """A shape's parameters, and whether the family says its forward must read x twice."""
    params = shape.as_dict()
    twice = family.reads_x_twice(shape)
    if twice is not None:
        params["reads_x_twice"] = bool(twice)
    return params


def _timing(request: Request, family, chosen, preset, backend: Backend, step) -> tuple:
    """(the timing section or None, lines for passes and dtypes not timed): the plan's passes, each dtype
    in a fresh process (compare.timing_run)."""
    modes, skipped = timing_run.plan_modes(family, chosen, request.timing.modes)
    request = dataclasses.replace(request, timing=dataclasses.replace(request.timing, modes=modes))
    dtypes = resolve_matrix(request, family)[0]
    if not timing_run.in_fresh_processes(backend.gpu):
        return timing_run.run_timing(family, chosen, preset, request, step, dtypes), skipped
    from compare.tasks import worker_request
    section, failed = timing_run.run_isolated(worker_request(request, chosen), tuple(str(d).removeprefix("torch.") for d in dtypes), step)
    return section, skipped + tuple(failed)


def numerics_plan(request: Request, family, preset, directions) -> list[tuple]:
    """(direction, dtype, input kind, shape, seeds) of every numerics case, in run order. Without
    --inputs (the quick plan) only the forward on normal inputs covers every shape and trial."""
    dtypes, kinds = resolve_matrix(request, family)
    full_seeds = tuple(range(request.seed, request.seed + request.trials))
    quick = request.inputs is None
    plan = []
    for direction in directions:
        for dtype in dtypes:
            for kind in kinds:
                light = quick and (kind != "normal" or direction == "backward")
                for shape in (preset.shapes[:1] if light else preset.shapes):
                    plan.append((direction, dtype, kind, shape, full_seeds[:1] if light else full_seeds))
    return plan


def _directions(request: Request, family) -> list[str]:
    """The numerics passes asked for that the family has (a family without gradients has no backward)."""
    return [d for c, d in (("numerics", "forward"), ("backward", "backward"))
            if c in request.checks and (d == "forward" or family.grads)]


def numerics_variants(family, chosen, registry: Registry) -> tuple[list, str, str]:
    """(the variants the numerics run, the accuracy reference added though not named or "", the reference)."""
    variants = list(chosen)
    added = ""
    wanted = family.accuracy_reference
    if wanted and registry.has(wanted, family.name) and wanted not in {v.name for v in chosen}:
        variants.append(registry.get(wanted, family.name))
        added = wanted
    return variants, added, wanted if wanted and wanted in {v.name for v in variants} else ""


def run_numerics(request: Request, family, chosen, preset, backend: Backend, registry: Registry,
                 directions, step: Step = Step(), cases=None) -> NumericsSection:
    """Every (direction, dtype, input kind, shape) case. The torch variant joins as an accuracy
    reference point when not named. Without --inputs (the quick plan, so the default run stays
    quick on the CPU interpreter) only the forward pass on normal inputs runs on every shape with
    every trial; every other case runs on the preset's first shape with one trial. Naming kinds
    (`--inputs all`) runs every case on every shape and trial."""
    dtypes, kinds = resolve_matrix(request, family)
    variants, added, reference = numerics_variants(family, chosen, registry)
    full_seeds = tuple(range(request.seed, request.seed + request.trials))
    plan = [f"checks: {', '.join(directions)}; dtypes: {', '.join(str(d).removeprefix('torch.') for d in dtypes)}; "
            f"input kinds: {', '.join(kinds)}"]
    if request.inputs is None:
        plan.append(f"quick plan (no --inputs): forward with normal inputs on every shape, {len(full_seeds)} trials; "
                    f"every other case on the first shape ({preset.shapes[0].label}), 1 trial; "
                    f"--inputs all runs every case on every shape and trial")
    else:
        plan.append(f"every case on every shape, {len(full_seeds)} trials")
    if backend.interpreted:
        plan.append("run-to-run spread: not measured for Triton kernels here (the interpreter runs a kernel's "
                    "programs one after another, so the same inputs give the same bits)")
    plan.append(f"every run reads its own copy of the inputs (a variant that writes into one is named); a launch "
                f"that has not returned after {supervisor.limit_s():g} s is stopped (--variant-timeout)")
    ops = [v.name for v in variants if v.kind == "op"]
    if ops:
        plan.append(f"op-level variants ({', '.join(ops)}) are called as their users call them: forward, the op's "
                    f"result ({family.outputs[0]}) alone; backward, every gradient through autograd")
    # `cases`: the cases run elsewhere (compare.spread), in the plan's order
    cases = cases() if cases else [numerics.run_case(family, variants, shape, dtype, backend, seeds, kind, step,
                                                     direction, reference)
                                   for direction, dtype, kind, shape, seeds in numerics_plan(request, family, preset,
                                                                                             directions)]
    return NumericsSection(backend.device, backend.note, tuple(cases), numerics.VERDICT_FACTOR, added, tuple(plan),
                           family.forward_legend, family.backward_legend, family.backward_pairs_legend)
