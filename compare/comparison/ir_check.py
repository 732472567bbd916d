"""The compiled-code check (--check ir) through the check protocol (compare/checks/check.py): here, compiled
alongside the numerics where it can be (the interpreter on one core, the offline compiles on the other); as
tasks, each variant's own kernels compiled apart and the sections made where the run started (with ops: one
task runs them to find their kernels and makes the whole IR)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from compare.checks.check import Case, Check, Findings, Ready, Warm
from compare.model.results import IRSection
from compare.model.skips import Skip
from compare.model.vocabulary import IR
from compare.runtime.backend import Backend
from compare.runtime.progress import Step

if TYPE_CHECKING:
    from compare.comparison.plan import Plan


@dataclasses.dataclass(frozen=True)
class CompiledPass:
    role: str                 # the pass: forward or backward
    compiled: dict            # compare.checks.ir.compile.Compiled, as its fields


@dataclasses.dataclass(frozen=True)
class IRResult:
    """An IR task's result: a variant's own kernels compiled (`variant`), or the whole IR (ops)."""

    variant: str = ""
    compiled: tuple[CompiledPass, ...] = ()
    ir: Optional[IRSection] = None
    ir_kernels: tuple[IRSection, ...] = ()
    skipped: tuple[Skip, ...] = ()


def _ir(plan: Plan, backend: Backend, step, cache=None) -> Findings:
    """The IR's findings for the preset's first shape and the first dtype (ir.run_passes)."""
    from compare.checks import ir
    names = plan.dtype_names
    first = names[0]   # one specialization: the first dtype asked for
    skipped = [Skip("ir", f"{', '.join(names[1:])} (the compiled code is shown for {first}, the first dtype asked for)")
               ] if names[1:] else []
    return Findings(skipped=tuple(skipped)) + ir.run_passes(plan.family, list(plan.variants), plan.preset.shapes[0],
                                                            first, plan.request.target, backend.gpu, plan.stages,
                                                            plan.request.full, cache, step)


def _alongside(plan: Plan, backend: Backend, step: Step, cache=None) -> Ready:
    """The IR compiled in a thread started now (its compiles in a worker process, on the second core while the
    numerics run the interpreter on the first); the result waits for it."""
    import threading
    found: dict = {}

    def compile_all():
        try:
            found["result"] = _ir(plan, backend, step, cache)
        except BaseException as exc:   # noqa: BLE001 - raised again where the result is read
            found["error"] = exc
    worker = threading.Thread(target=compile_all, name="kernel-ab IR compile", daemon=True)
    worker.start()

    def result() -> Findings:
        worker.join()
        if "error" in found:
            raise found["error"]
        return _found(found["result"], step)

    def cancel():   # the check is ending: the worker's compile, and with it the thread, end now
        from compare.runtime.warm_worker import stop_answering
        stop_answering(worker)
    return Ready(result, cancel)


def _found(found: Findings, step: Step) -> Findings:
    step.advance()
    return found


class IRCheck(Check):
    name, result_type, collect_steps = IR, IRResult, 1

    def cases(self, plan: Plan, backend: Backend) -> tuple[Case, ...]:
        if any(v.kind == "op" for v in plan.variants):   # ops are run to find their kernels
            return (Case(self.name, "ir", plan.family.name),)
        return tuple(Case(self.name, f"ir compile {v.name}", plan.family.name, variants=(v.name,))
                     for v in plan.variants if v.kind == "triton" and v.own_kernels)

    def run(self, case: Case, plan: Plan, backend: Backend, step: Step) -> IRResult:
        if case.variants:
            return IRResult(case.variants[0], compile_variant(plan, case.variants[0], backend))
        found = _ir(plan, backend, step)
        return IRResult(ir=found.ir, ir_kernels=found.ir_kernels, skipped=found.skipped)

    def collect(self, plan: Plan, backend: Backend, step: Step, results) -> Findings:
        done = results.all()
        if done and not done[0].variant:
            return _found(Findings(ir=done[0].ir, ir_kernels=done[0].ir_kernels, skipped=done[0].skipped), step)
        return _found(_ir(plan, backend, step, compiled_cache(plan, done, backend)), step)

    def begin(self, plan: Plan, backend: Backend, step: Step, warm: Warm = Warm()):
        """Alongside the numerics where there are numerics to overlap and the compiles need no launch (no GPU,
        where kernels are read back after one; no ops, run in this process to find theirs); compiled through
        `warm.ir` (a CompileCache) where the caller keeps one."""
        if plan.directions and not backend.gpu and not any(v.kind == "op" for v in plan.variants):
            return _alongside(plan, backend, step, warm.ir)
        def compiled() -> Findings:
            step.new_pace()   # after the timing: a compile takes nothing like a timed dtype's time
            return _found(_ir(plan, backend, step, warm.ir), step)
        return Ready(compiled)

    def steps(self, plan: Plan, backend: Backend) -> int:
        return 1


def _entries(plan: Plan, name: str) -> list:
    """(pass, what to compile) of each kernel variant `name` brings itself (compare.checks.ir.compile_entry)."""
    from compare.checks import ir
    variant = next(v for v in plan.variants if v.name == name)
    entries = [(role, ir.compile_entry(plan.family, variant, role)) for role in ("forward", "backward")
               if role in variant.own_kernels and (role == "forward" or plan.family.grads)]
    return [(role, e) for role, e in entries if isinstance(e, ir.ToCompile)]


def compile_variant(plan: Plan, name: str, backend: Backend) -> tuple[CompiledPass, ...]:
    """In a worker: the kernels variant `name` brings, as the IR compiles them."""
    from compare.checks.ir.compile import CompileCache
    entries = _entries(plan, name)
    try:
        done = CompileCache().compile_passes(plan.family, [(role, [e]) for role, e in entries], plan.preset.shapes[0],
                                             plan.dtype_names[0], plan.request.target, launched=backend.gpu)
    except Exception:  # noqa: BLE001 - nothing compiled here: the run compiles it again and says the error as it does
        return ()
    return tuple(CompiledPass(role, dataclasses.asdict(c[0])) for (role, _), c in zip(entries, done))


def compiled_cache(plan: Plan, results: list[IRResult], backend: Backend):
    """Where the run started: a CompileCache holding what the workers compiled (`_ir` reads it)."""
    from compare.checks.ir.compile import CompileCache, Compiled
    cache = CompileCache()
    for result in results:
        entries = dict(_entries(plan, result.variant))
        for c in result.compiled:
            cache.add(plan.family, entries[c.role], plan.preset.shapes[0], plan.dtype_names[0], plan.request.target,
                      backend.gpu, c.role, Compiled(**c.compiled))
    return cache
