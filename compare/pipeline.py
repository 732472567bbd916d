"""From a comparison request to a Report: resolve names, run the asked-for checks, collect provenance."""
from __future__ import annotations

import dataclasses
from typing import Callable

from compare import numerics
from compare.backend import Backend
from compare.environment import collect
from compare.results import NumericsSection, Report, VariantInfo
from variants import Registry, UnknownName

CHECKS = ("numerics", "backward")
# the variant run in numerics as an accuracy reference point when the user did not name it
ACCURACY_REFERENCE = "torch"


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
    input_kind: str = "normal"       # the one input kind of checks that take one (numerics takes `inputs`)
    inputs: str | None = None        # input kinds, comma-separated, or "all" (None: all of the family's)


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
    dtypes, _ = resolve_matrix(request)
    unknown = [c for c in request.checks if c not in CHECKS]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; known checks: {', '.join(CHECKS)}")
    if request.trials < 1:
        raise UsageError(f"--trials must be at least 1, got {request.trials}")
    return family, chosen, preset, dtypes[0]


def _names(text: str, known, what: str, flag: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",")))
    if names == ("all",):
        return tuple(known)
    for n in names:
        if n not in known:
            raise UsageError(f"unknown {what} {n!r}; known {what}s: {', '.join(known)} (or all; {flag} takes a comma list)")
    return names


def resolve_matrix(request: Request):
    """(torch dtypes, input kinds) the request asks for; UsageError naming the known ones."""
    from variants.group_norm import DTYPES, INPUT_KINDS
    dtypes = tuple(DTYPES[n] for n in _names(request.dtype, DTYPES, "dtype", "--dtype"))
    kinds = tuple(INPUT_KINDS) if request.inputs is None else _names(request.inputs, INPUT_KINDS, "input kind", "--inputs")
    return dtypes, kinds


def run(request: Request, registry: Registry, backend: Backend,
        step: Callable[[str], None] = lambda _: None) -> Report:
    family, chosen, preset, dtype = resolve(request, registry)
    infos = tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin) for v in chosen)
    numerics_section = None
    directions = [d for c, d in (("numerics", "forward"), ("backward", "backward")) if c in request.checks]
    if directions:
        numerics_section = run_numerics(request, family, chosen, preset, backend, registry, directions, step)
    dtype_names = ",".join(str(d).removeprefix("torch.") for d in resolve_matrix(request)[0])
    return Report(family=family.name, preset=preset.name, dtype=dtype_names, baseline=chosen[0].name,
                  variants=infos, environment=collect(backend), shapes=tuple(s.label for s in preset.shapes),
                  numerics=numerics_section)


def run_numerics(request: Request, family, chosen, preset, backend: Backend, registry: Registry,
                 directions, step: Callable[[str], None] = lambda _: None) -> NumericsSection:
    """Every (direction, dtype, input kind, shape) case. The torch variant joins as an accuracy
    reference point when not named. Without --inputs (the quick plan, so the default run stays
    quick on the CPU interpreter) only the forward pass on normal inputs runs on every shape with
    every trial; every other case runs on the preset's first shape with one trial. Naming kinds
    (`--inputs all`) runs every case on every shape and trial."""
    dtypes, kinds = resolve_matrix(request)
    variants = list(chosen)
    added = ""
    if ACCURACY_REFERENCE in registry.variants and ACCURACY_REFERENCE not in {v.name for v in chosen} \
            and registry.get(ACCURACY_REFERENCE).family == family.name:
        variants.append(registry.get(ACCURACY_REFERENCE))
        added = ACCURACY_REFERENCE
    reference = ACCURACY_REFERENCE if ACCURACY_REFERENCE in {v.name for v in variants} else ""
    full_seeds = tuple(range(request.seed, request.seed + request.trials))
    quick = request.inputs is None
    plan = [f"checks: {', '.join(directions)}; dtypes: {', '.join(str(d).removeprefix('torch.') for d in dtypes)}; "
            f"input kinds: {', '.join(kinds)}"]
    if quick:
        plan.append(f"quick plan (no --inputs): forward with normal inputs on every shape, {len(full_seeds)} trials; "
                    f"every other case on the first shape ({preset.shapes[0].label}), 1 trial; "
                    f"--inputs all runs every case on every shape and trial")
    else:
        plan.append(f"every case on every shape, {len(full_seeds)} trials")
    cases = []
    for direction in directions:
        for dtype in dtypes:
            for kind in kinds:
                light = quick and (kind != "normal" or direction == "backward")
                shapes = preset.shapes[:1] if light else preset.shapes
                seeds = full_seeds[:1] if light else full_seeds
                for shape in shapes:
                    cases.append(numerics.run_case(family, variants, shape, dtype, backend, seeds, kind, step,
                                                   direction, reference))
    return NumericsSection(backend.device, backend.note, tuple(cases), numerics.VERDICT_FACTOR, added, tuple(plan))
