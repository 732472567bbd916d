"""From a comparison request to a Report: resolve names, run the asked-for checks, collect provenance."""
from __future__ import annotations

import dataclasses
from typing import Callable

from compare import numerics
from compare.backend import Backend
from compare.environment import collect
from compare.results import NumericsSection, Report, VariantInfo
from variants import Registry, UnknownName

CHECKS = ("numerics", "ir")


class UsageError(ValueError):
    """Bad input from the user: the message is one line saying what was wrong and what would be right."""


@dataclasses.dataclass(frozen=True)
class Request:
    variants: tuple[str, ...]
    preset: str | None = None
    shape: str | None = None     # one shape instead of a preset: BATCH,CHANNELS,GROUPS,SPATIAL
    eps: float = 1e-6
    dtype: str = "float32"
    checks: tuple[str, ...] = CHECKS
    trials: int = 3
    seed: int = 0
    input_kind: str = "normal"
    target: str = "sm_90"          # ir: the target of offline compiles (no GPU)
    stages: tuple[str, ...] = ()   # ir: stages to summarize and diff (empty: all)
    full: bool = False             # ir: keep whole normalized listings and uncut diffs


def resolve(request: Request, registry: Registry):
    """(family, variants, preset, torch dtype) for the request, or UsageError naming what is known."""
    try:
        names = request.variants
        if not names:
            family = registry.family("group_norm")
            names = family.default_pair
        chosen = [registry.get(n) for n in names]
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
    from variants.group_norm import DTYPES
    if request.dtype not in DTYPES:
        raise UsageError(f"unknown dtype {request.dtype!r}; known dtypes: {', '.join(DTYPES)}")
    unknown = [c for c in request.checks if c not in CHECKS]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; known checks: {', '.join(CHECKS)}")
    if request.trials < 1:
        raise UsageError(f"--trials must be at least 1, got {request.trials}")
    if "ir" in request.checks:
        _check_ir(request)
    return family, chosen, preset, DTYPES[request.dtype]


def _check_ir(request: Request) -> None:
    from compare import ir
    try:
        ir.capability(request.target)
        ir.check_stages(request.stages)
    except ValueError as exc:
        raise UsageError(f"--target/--stage: {exc}") from None


def _ir(request: Request, chosen, preset, backend: Backend, step) -> tuple:
    """(IRSection or None, skipped reasons) for the preset's first shape."""
    from compare import ir
    if not any(v.kind == "triton" for v in chosen):
        return None, ("ir: none of the variants is a Triton kernel",)
    try:
        return ir.run(chosen, preset.shapes[0], request.dtype, request.target, backend.gpu,
                      request.stages or ir.STAGES, request.full, step=step), ()
    except RuntimeError as exc:
        return None, (f"ir: {exc}",)


def run(request: Request, registry: Registry, backend: Backend,
        step: Callable[[str], None] = lambda _: None) -> Report:
    family, chosen, preset, dtype = resolve(request, registry)
    infos = tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin) for v in chosen)
    numerics_section = None
    if "numerics" in request.checks:
        seeds = range(request.seed, request.seed + request.trials)
        cases = tuple(numerics.run_case(family, chosen, shape, dtype, backend, seeds, request.input_kind, step)
                      for shape in preset.shapes)
        numerics_section = NumericsSection(backend.device, backend.note, cases)
    ir_section, skipped = None, ()
    if "ir" in request.checks:
        ir_section, skipped = _ir(request, chosen, preset, backend, step)
    return Report(family=family.name, preset=preset.name, dtype=request.dtype, baseline=chosen[0].name,
                  variants=infos, environment=collect(backend), shapes=tuple(s.label for s in preset.shapes),
                  numerics=numerics_section, ir=ir_section, skipped=skipped)
