"""A comparison asked for, resolved once into an immutable Plan that every stage reads.

compare.command_line.arguments turns the command line into a Request and its Options: every default lives
in these records (and TimingConfig). `build` resolves a Request against
the registry once (family, variants, preset, dtypes, input kinds, passes, the timed modes); numerics,
timing, IR, rendering and gates read the Plan and resolve nothing again."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from compare.checks.timing_config import TimingConfig
from compare.model.errors import UsageError
from compare.model.skips import Skip
from compare.model.vocabulary import BACKWARD, CHECKS, NUMERICS, STAGES, TIMING
from compare.runtime.supervisor import DEFAULT_LIMIT_S

if TYPE_CHECKING:   # the families import torch: imported once the backend is chosen (compare.runtime.backend)
    import torch

    from variants import Family, Preset, Registry, Variant
    from variants.spec import Spec

@dataclasses.dataclass(frozen=True)
class Request:
    """What was asked, as the user named it (also what a timing process is handed, as JSON)."""

    variants: tuple[str, ...] = ()
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
    external: tuple[Spec | str, ...] = ()   # --variant specs: as a user typed them, or built (variants/spec.py)
    repo: str = "."                  # the git repository of git: specs
    family: str | None = None        # the family compared (None: the named variants', else the default one)
    left_out: tuple[Skip, ...] = ()   # checks left out by a supervisor, each with its reason (compare.runtime.supervisor)
    loaded_specs: tuple[Spec, ...] = ()   # the --variant specs `loaded` loaded (a timing process loads them again)


@dataclasses.dataclass(frozen=True)
class Options:
    """How a run is carried out and written: the device, the launch limit, the gates, the outputs."""

    device: str = "auto"             # auto (a GPU if there is one), cuda or cpu
    variant_timeout: float = DEFAULT_LIMIT_S   # seconds a variant's launch may take before it is stopped as hung
    fail_on_numerics: bool = False
    fail_if_slower: Optional[float] = None   # percent
    fail_on: tuple[str, ...] = ()    # checks beyond the built-in four whose gate is asked (compare/model/check_sections.py)
    accept_unjudged: bool = False
    json: str | None = None
    markdown: str | None = None
    out: str | None = None
    force: bool = False
    quiet: bool = False
    verbose: bool = False            # the terminal shows every section, not only the glance (ir: always)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A Request resolved: the objects every stage runs on, and what the request asked of them."""

    request: Request                 # as asked (after --variant loading): a timing process plans it again
    family: Family
    variants: tuple[Variant, ...]    # the variants compared, the baseline first
    preset: Preset                   # the preset, or the one-shape preset of --shape
    dtypes: tuple[torch.dtype, ...]  # in the order asked
    input_kinds: tuple[str, ...]
    directions: tuple[str, ...]      # the numerics passes asked for that the family has
    timing: TimingConfig             # modes: the asked ones, else the planned ones (when timing is a check)
    timing_left_out: tuple[Skip, ...] = ()   # the passes the timing plan leaves out, each with its reason
    accuracy_reference: Optional[Variant] = None   # the family's reference-point variant, when registered
    reads_x_twice: tuple[Optional[bool], ...] = ()   # per shape, the family's Family.reads_x_twice (None: not said)
    checks: tuple[str, ...] = CHECKS
    left_out: tuple[Skip, ...] = ()
    options: Options = Options()
    extra_checks: tuple = ()          # checks beyond the built-in four, given by the caller (compare/checks/check.py)

    @property
    def runs(self) -> tuple:
        """The checks run (compare/checks/check.py), in order: numerics and backward, timing, the IR, the others."""
        from compare.comparison.ir_check import IRCheck
        from compare.comparison.numerics_check import NumericsCheck
        from compare.comparison.timing_check import TimingCheck
        known = (NumericsCheck(), TimingCheck(), IRCheck()) + self.extra_checks
        return tuple(c for c in known if any(word in self.checks for word in c.answers))

    @property
    def dtype_names(self) -> tuple[str, ...]:
        """The family's names of the dtypes asked for, in order."""
        return tuple(n for d in self.dtypes for n, fd in self.family.dtypes.items() if fd == d)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.request.seed, self.request.seed + self.request.trials))

    @property
    def quick(self) -> bool:
        """No --inputs: only the forward on normal inputs covers every shape and trial."""
        return self.request.inputs is None

    @property
    def stages(self) -> tuple[str, ...]:
        return self.request.stages or STAGES

    def keeping(self, variants) -> "Plan":
        """This plan with only `variants` (the others failed to compile or crashed an earlier run)."""
        modes, left = _modes(self.family, variants, self.request.timing.modes, self.checks)
        return dataclasses.replace(self, variants=tuple(variants), timing=dataclasses.replace(self.timing, modes=modes),
                                   timing_left_out=left)

    def without_timing(self, why: str) -> "Plan":
        return dataclasses.replace(self, checks=tuple(c for c in self.checks if c != TIMING),
                                   left_out=self.left_out + (Skip(TIMING, why),))


def build(request: Request, registry: Registry, options: Options = Options(), extra_checks: tuple = ()) -> Plan:
    """The plan of `request`, or UsageError naming what is known (variants, presets, dtypes, kinds, checks);
    `extra_checks`: checks beyond the built-in four (compare/checks/check.py), named in the request as any."""
    from variants import UnknownName   # the families (torch) are imported once the backend is chosen
    try:
        names = request.variants
        if not names:
            names = registry.family(request.family or registry.default_family).default_pair
        # without --family: the default family if it has every named variant, else the one family that has them
        holding = [f for f in registry.families if all(registry.has(n, f) for n in names)]
        family = request.family or (None if registry.default_family in holding or len(holding) != 1 else holding[0])
        chosen = [registry.get(n, family) for n in names]
        if len(set(names)) != len(names):
            raise UsageError(f"a variant is named twice in {', '.join(names)}; name each once")
        families = {v.family for v in chosen}
        if len(families) != 1:
            raise UsageError(f"variants come from different families ({', '.join(sorted(families))}); "
                             "compare variants of one family")
        family = registry.family(families.pop())
        if request.shape is not None and not request.shape.strip():
            raise UsageError(f"--shape is empty; give {family.shape_help}")
        if request.shape and request.preset:
            raise UsageError("give --preset or --shape, not both")
        preset = family.parse_shape(request.shape, request.eps) if request.shape else \
            family.preset(request.preset or family.default_preset)
    except UnknownName as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:
        if isinstance(exc, UsageError):
            raise
        raise UsageError(str(exc)) from None
    dtypes = tuple(family.dtypes[n] for n in _names(request.dtype, family.dtypes, "dtype", "--dtype", family))
    kinds = tuple(family.input_kinds) if request.inputs is None else \
        _names(request.inputs, family.input_kinds, "input kind", "--inputs", family)
    if request.input_kind not in family.input_kinds:
        raise UsageError(f"family {family.name} has no input kind {request.input_kind!r}; "
                         f"its kinds: {', '.join(family.input_kinds)}")
    known = CHECKS + tuple(word for c in extra_checks for word in c.answers)
    unknown = [c for c in request.checks if c not in known]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; known checks: {', '.join(known)}")
    directions = tuple(d for c, d in ((NUMERICS, "forward"), (BACKWARD, "backward"))
                       if c in request.checks and (d == "forward" or family.grads))
    wanted = family.accuracy_reference
    reference = registry.get(wanted, family.name) if wanted and registry.has(wanted, family.name) else None
    modes, left = _modes(family, chosen, request.timing.modes, request.checks)
    return Plan(request=request, family=family, variants=tuple(chosen), preset=preset, dtypes=dtypes,
                input_kinds=kinds, directions=directions, timing=dataclasses.replace(request.timing, modes=modes),
                timing_left_out=left, accuracy_reference=reference,
                reads_x_twice=tuple(None if t is None else bool(t) for t in map(family.reads_x_twice, preset.shapes)),
                checks=request.checks,
                left_out=request.left_out, options=options, extra_checks=tuple(extra_checks))


def _modes(family, chosen, asked: tuple[str, ...], checks) -> tuple[tuple[str, ...], tuple[Skip, ...]]:
    """The passes to time and the Skips of those left out (compare.comparison.timing_run.plan_modes), when timed."""
    if TIMING not in checks:
        return asked, ()
    from compare.comparison.timing_run import plan_modes
    return plan_modes(family, chosen, asked)


def _names(text: str, known, what: str, flag: str, family) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",")))
    if names == ("all",):
        return tuple(known)
    for n in names:
        if n not in known:
            raise UsageError(f"unknown {what} {n!r}; known {what}s: {', '.join(known)} "
                             f"(of family {family.name}; or all: {flag} takes a comma list)")
    return names
