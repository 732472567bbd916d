"""From a comparison request to a Report: resolve names, run the asked-for checks, collect provenance."""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Iterator

from compare import numerics
from compare.backend import Backend
from compare.environment import collect
from compare.results import NumericsSection, Report, VariantInfo
from variants import Registry, UnknownName

CHECKS = ("numerics",)


class UsageError(ValueError):
    """Bad input from the user: the message is one line saying what was wrong and what would be right."""


class NothingToCompare(RuntimeError):
    """Every variant asked for failed to load; the message says which and why, one line each."""


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
    external: tuple[str, ...] = ()   # --variant specs: NAME=PATH::FUNCTION or NAME=git:REV:PATH::FUNCTION
    repo: str = "."                  # the git repository of git: specs
    family: str = "group_norm"       # the family loaded kernels join


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
    return family, chosen, preset, DTYPES[request.dtype]


@contextlib.contextmanager
def loaded(request: Request, registry: Registry) -> Iterator[tuple[Request, Registry, tuple[VariantInfo, ...]]]:
    """Load the request's --variant kernels for the length of the block (variants.external).

    Yields the request naming them after its own names, the registry holding them, and a failed
    VariantInfo for each kernel file that did not import. What was materialized is removed at exit,
    also on error. Bad input is a UsageError; NothingToCompare when every variant asked for failed."""
    if request.family not in registry.families:
        raise UsageError(f"--family: unknown family {request.family!r}; known families: {', '.join(registry.families)}")
    if not request.external:
        yield request, registry, ()
        return
    from variants.external import BadSpec, ExternalKernels, add_to
    with ExternalKernels(request.repo) as kernels:
        try:
            registry, names, failed = add_to(registry, kernels, request.external, request.family)
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
        yield dataclasses.replace(request, variants=ordered, external=()), registry, infos


def _nothing_left(failed: tuple[VariantInfo, ...]) -> NothingToCompare:
    return NothingToCompare("; ".join(f"{i.name} could not be loaded: {i.error.splitlines()[0]}" for i in failed))


def _compiled(family, chosen: list, shape, dtype, backend: Backend, failed: tuple[VariantInfo, ...]):
    """On compiled Triton, move the variants whose kernels do not compile from `chosen` to `failed`."""
    if backend.interpreted:  # the interpreter compiles nothing; its errors are the numerics'
        return chosen, failed
    from variants.external import compile_failures
    broken = compile_failures(family, chosen, shape, dtype, backend.device)
    failed += tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin, status="failed", error=broken[v.name])
                    for v in chosen if v.name in broken)
    chosen = [v for v in chosen if v.name not in broken]
    if not chosen:
        raise _nothing_left(failed)
    return chosen, failed


def run(request: Request, registry: Registry, backend: Backend,
        step: Callable[[str], None] = lambda _: None, failed: tuple[VariantInfo, ...] = ()) -> Report:
    """The report for `request`; `failed` (from `loaded`) lists variants that could not be loaded."""
    family, chosen, preset, dtype = resolve(request, registry)
    chosen, failed = _compiled(family, chosen, preset.shapes[0], dtype, backend, tuple(failed))
    infos = tuple(VariantInfo(v.name, v.family, v.kind, v.why, v.origin) for v in chosen) + tuple(failed)
    numerics_section = None
    if "numerics" in request.checks:
        seeds = range(request.seed, request.seed + request.trials)
        cases = tuple(numerics.run_case(family, chosen, shape, dtype, backend, seeds, request.input_kind, step)
                      for shape in preset.shapes)
        numerics_section = NumericsSection(backend.device, backend.note, cases)
    return Report(family=family.name, preset=preset.name, dtype=request.dtype, baseline=chosen[0].name,
                  variants=infos, environment=collect(backend), shapes=tuple(s.label for s in preset.shapes),
                  numerics=numerics_section)
