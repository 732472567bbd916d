"""The numerics check (--check numerics: the forward pass; --check backward: the gradients) through the check
protocol (compare/checks/check.py): a case is one (pass, dtype, input kind, shape) with every variant and the
accuracy reference point; its section is the report's numerics; a stop keeps the cases finished."""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from compare.checks import numerics
from compare.checks.check import Case, Check, CheckStopped, Findings, Ready, Warm
from compare.checks.draws import Draws, Trials
from compare.comparison.pace import CaseWork, Pace, case_work
from compare.model.results import NumericsCase, NumericsSection
from compare.model.skips import Interruption, Skip
from compare.model.vocabulary import BACKWARD, NUMERICS, dtype_name
from compare.runtime import interpreted_autotune, supervisor
from compare.runtime.backend import Backend
from compare.runtime.progress import Step

if TYPE_CHECKING:
    from compare.comparison.plan import Plan


def _words(direction: str) -> str:
    """The --check word of a pass."""
    return NUMERICS if direction == "forward" else BACKWARD


class NumericsCheck(Check):
    name, result_type, partial = NUMERICS, NumericsCase, True
    answers = (NUMERICS, BACKWARD)

    def cases(self, plan: Plan, backend: Backend) -> tuple[Case, ...]:
        """A case per (pass, dtype, input kind, shape), in run order. Without --inputs (the quick plan) only the
        forward on normal inputs covers every shape and trial; every other case runs on the first shape, 1 trial."""
        out = []
        for direction in plan.directions:
            for name in (dtype_name(d) for d in plan.dtypes):
                for kind in plan.input_kinds:
                    light = plan.quick and (kind != "normal" or direction == "backward")
                    for i, shape in enumerate(plan.preset.shapes[:1] if light else plan.preset.shapes):
                        out.append(Case(self.name, f"numerics {direction} {name} {kind} {shape.label}", plan.family.name,
                                        i, name, kind, plan.seeds[:1] if light else plan.seeds, direction))
        return tuple(out)

    def run(self, case: Case, plan: Plan, backend: Backend, step: Step) -> NumericsCase:
        variants, _, reference = numerics_variants(plan)
        return numerics.run_case(plan.family, variants, plan.preset.shapes[case.shape], plan.family.dtypes[case.dtype],
                                 backend, case.seeds, case.input_kind, step, case.mode, reference)

    def collect(self, plan: Plan, backend: Backend, step: Step, results) -> Findings:
        if not plan.directions:
            return Findings()
        return Findings(numerics=run_numerics(plan, backend, step, results.all, results.finished))

    def begin(self, plan: Plan, backend: Backend, step: Step, warm: Warm = Warm()) -> Ready:
        return Ready(lambda: Findings(numerics=run_numerics(plan, backend, step)) if plan.directions else Findings())

    def asked(self, plan: Plan) -> tuple[str, ...]:
        return tuple(_words(d) for d in plan.directions)

    def left_out(self, plan: Plan) -> tuple[Skip, ...]:
        if BACKWARD in plan.checks and "backward" not in plan.directions:
            return (Skip(BACKWARD, f"family {plan.family.name} has no backward pass"),)
        return ()

    def interruption(self, stop: str, plan: Plan, backend: Backend, found: Findings, asked) -> Interruption:
        cases = found.numerics.cases if found.numerics is not None else ()
        started = {_words(c.direction) for c in cases}
        return Interruption(stop, len(cases), self.steps(plan, backend), tuple(c for c in asked if c not in started))


class NumericsVariants(NamedTuple):
    """The variants the numerics run, the reference point among them though not named ("": none added), and
    the reference's name ("": no reference)."""

    variants: list
    added: str
    reference: str


def numerics_variants(plan: Plan) -> NumericsVariants:
    variants, added, wanted = list(plan.variants), "", plan.accuracy_reference
    if wanted is not None and wanted.name not in {v.name for v in plan.variants}:
        variants.append(wanted)
        added = wanted.name
    return NumericsVariants(variants, added, plan.family.accuracy_reference if wanted is not None else "")


def _plan_lines(plan: Plan, backend: Backend, variants) -> list[str]:
    """How the cases were chosen, one line each (the section's `plan`)."""
    family, preset, directions = plan.family, plan.preset, plan.directions
    lines = [f"checks: {', '.join(directions)}; dtypes: {', '.join(dtype_name(d) for d in plan.dtypes)}; "
             f"input kinds: {', '.join(plan.input_kinds)}"]
    if plan.quick:
        lines.append(f"quick plan (no --inputs): forward with normal inputs on every shape, {len(plan.seeds)} "
                     f"trials; every other case on the first shape ({preset.shapes[0].label}), 1 trial; "
                     f"--inputs all runs every case on every shape and trial")
    else:
        lines.append(f"every case on every shape, {len(plan.seeds)} trials")
    if backend.interpreted:
        lines.append("run-to-run spread: not measured for Triton kernels here (the interpreter runs a kernel's "
                     "programs one after another, so the same inputs give the same bits)")
    lines.append(f"every run reads its own copy of the inputs (a variant that writes into one is named); a "
                 f"launch that has not returned after {supervisor.limit_s():g} s is stopped (--variant-timeout)")
    ops = [v.name for v in variants if v.kind == "op"]
    if ops:
        lines.append(f"op-level variants ({', '.join(ops)}) are called as their users call them: forward, the "
                     f"op's result ({family.outputs[0]}) alone; backward, every gradient through autograd")
    return lines


def run_numerics(plan: Plan, backend: Backend, step: Step = Step(), cases=None, finished=None) -> NumericsSection:
    """Every (direction, dtype, input kind, shape) case (NumericsCheck.cases), the torch variant joining as an accuracy
    reference point when not named. `cases`: the cases run elsewhere (compare.processes.distributed), in the plan's
    order; `finished`: those done. On a stop signal, Stopped with the section of the cases finished."""
    family = plan.family
    variants, added, reference = numerics_variants(plan)
    plan_lines = _plan_lines(plan, backend, variants)

    def section(done) -> NumericsSection:
        return NumericsSection(backend.device, backend.note, tuple(done), numerics.VERDICT_FACTOR, added, tuple(plan_lines)
                               + interpreted_autotune.said(used), family.forward_legend, family.backward_legend, family.backward_pairs_legend)
    done = []
    with interpreted_autotune.recording() as used:
        try:
            done = cases() if cases else _run_cases(plan, variants, backend, step, reference, done)
        except supervisor.Stopped as stop:   # the report of the cases finished comes out all the same
            found = section(finished() if finished else done)
            raise CheckStopped(Findings(numerics=found), stop) from None
    return section(done)


def _run_cases(plan: Plan, variants, backend: Backend, step: Step, reference: str, done: list) -> list:
    """Every numerics case of the plan here, in order, into `done` (what a stop leaves is the cases finished),
    the coming trials' inputs drawn ahead (compare.checks.draws)."""
    family, shapes, pace = plan.family, plan.preset.shapes, Pace()
    cases = NumericsCheck().cases(plan, backend)
    order = [Trials(shapes[c.shape], family.dtypes[c.dtype], c.input_kind, c.seeds) for c in cases]
    with Draws(family, backend.device, order) as draws:
        for direction, t in zip((c.mode for c in cases), order):
            work = case_work(family, variants, t.shape, t.dtype, t.seeds, direction, backend) \
                if backend.interpreted else CaseWork(0, 0)
            label = f"{direction} {t.shape.label} {dtype_name(t.dtype)} {t.kind}"
            with pace.case(label, work):   # a CPU case of more than a minute is said before it starts
                done.append(numerics.run_case(family, variants, t.shape, t.dtype, backend, t.seeds, t.kind, step,
                                              direction, reference, draws.get))
                step.advance()   # a unit of progress is a case, as the report of an interrupted run counts them
    return done
