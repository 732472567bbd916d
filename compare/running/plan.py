"""A comparison asked for, resolved once into an immutable Plan that every stage reads.

`from_args` turns the command line into a Request and its Options: every default lives in these records
(and TimingConfig), every value is checked there, before any work. `build` resolves a Request against
the registry once (family, variants, preset, dtypes, input kinds, passes, the timed modes); numerics,
timing, IR, rendering and gates read the Plan and resolve nothing again."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

from compare.running import usage
from compare.model import vocabulary
from compare.checks.timing_config import TimingConfig
from compare.running.usage import UsageError
from compare.model.vocabulary import CHECKS, STAGES

if TYPE_CHECKING:   # the families import torch: imported once the backend is chosen (compare.running.backend)
    import torch

    from variants import Family, Preset, Registry, Variant

COMMAND_CHECKS = {"ir": ("ir",)}     # a subcommand that runs one check; `compare` runs the --check ones
COMMAND_TRIALS = {"ir": 1}           # the IR compiles one shape: more trials would change nothing


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
    external: tuple[str, ...] = ()   # --variant specs: NAME=PATH::FUNCTION or NAME=git:REV:PATH::FUNCTION
    repo: str = "."                  # the git repository of git: specs
    family: str | None = None        # the family compared (None: the named variants', else the default one)
    left_out: tuple[str, ...] = ()   # checks left out by a supervisor, each with its reason (compare.running.supervisor)
    loaded_specs: tuple[str, ...] = ()   # the --variant specs `loaded` loaded (a timing process loads them again)


@dataclasses.dataclass(frozen=True)
class Options:
    """How a run is carried out and written: the device, the launch limit, the gates, the outputs."""

    device: str = "auto"             # auto (a GPU if there is one), cuda or cpu
    variant_timeout: float = 300.0   # seconds a variant's launch may take before it is stopped as hung
    fail_on_numerics: bool = False
    fail_if_slower: Optional[float] = None   # percent
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
    timing_left_out: tuple[str, ...] = ()   # the passes the timing plan leaves out, a line each
    accuracy_reference: Optional[Variant] = None   # the family's reference-point variant, when registered
    reads_x_twice: tuple[Optional[bool], ...] = ()   # per shape, the family's Family.reads_x_twice (None: not said)
    checks: tuple[str, ...] = CHECKS
    left_out: tuple[str, ...] = ()
    options: Options = Options()

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
        return dataclasses.replace(self, checks=tuple(c for c in self.checks if c != "timing"),
                                   left_out=self.left_out + (f"timing: {why}",))


def _filled(args, name: str, default):
    value = getattr(args, name, None)
    return default if value is None else value


def from_args(args) -> tuple[Request, Options]:
    """The Request and Options of a `compare` or `ir` command line; UsageError (one line) for a bad value."""
    d, t, o = Request(), TimingConfig(), Options()
    command = args.command
    checks = tuple(_filled(args, "checks", COMMAND_CHECKS.get(command, d.checks)))
    trials = _filled(args, "trials", COMMAND_TRIALS.get(command, d.trials))
    seed, rounds, calls = _filled(args, "seed", d.seed), _filled(args, "rounds", t.rounds), _filled(args, "calls", t.calls_per_round)
    max_seconds, noise = _filled(args, "max_seconds", t.max_seconds), _filled(args, "noise", t.noise)
    modes_text = getattr(args, "modes", None)
    options = Options(device=_filled(args, "device", o.device),
                      variant_timeout=_filled(args, "variant_timeout", o.variant_timeout),
                      fail_on_numerics=args.fail_on_numerics, fail_if_slower=args.fail_if_slower,
                      accept_unjudged=args.accept_unjudged, json=args.json, markdown=args.markdown, out=args.out,
                      force=args.force, quiet=args.quiet, verbose=args.verbose or command == "ir")
    repo, dtype, target = _filled(args, "repo", d.repo), _filled(args, "dtype", d.dtype), _filled(args, "target", d.target)
    if args.eps is not None and not args.shape:
        raise UsageError("--eps applies to --shape only (a preset's shapes carry their own eps)")
    usage.not_blank("--preset", args.preset, "a preset's name (`list` shows them)")
    usage.not_blank("--repo", repo, "a git repository's folder")
    usage.finite("--eps", args.eps, strict=True)
    usage.comma_list("--dtype", dtype)
    usage.comma_list("--inputs", getattr(args, "inputs", None))
    usage.comma_list("--modes", modes_text)
    usage.at_least("--trials", trials, 1, usage.TRIALS_MAX)
    usage.at_least("--seed", seed, 0, usage.SEED_MAX)
    usage.at_least("--rounds", rounds, 2, usage.ROUNDS_MAX)
    usage.at_least("--calls", calls, 1, usage.CALLS_MAX)
    usage.finite("--max-seconds", max_seconds, strict=True)
    usage.finite("--variant-timeout", options.variant_timeout, strict=True)
    usage.finite("--noise", noise)
    usage.finite("--fail-if-slower", options.fail_if_slower, what="a percentage")
    from compare.checks import ir   # the IR's flags are checked even when the IR is not among the checks
    try:
        ir.capability(target)
        ir.check_stages(args.stages or ())
    except ValueError as exc:
        raise UsageError(f"--target/--stage: {exc}") from None
    modes = tuple(m.strip() for m in (modes_text or "").split(",") if m.strip())
    usage.outputs(options.json, options.markdown, options.out, force=options.force,
                  modes=(modes or vocabulary.MODES) if "timing" in checks else ())
    try:
        timing = TimingConfig(modes=modes, rounds=rounds, min_rounds=min(t.min_rounds, rounds), calls_per_round=calls,
                              max_seconds=max_seconds, noise=noise, graph=_filled(args, "graph", t.graph), seed=seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    request = Request(variants=tuple(args.variants), preset=args.preset, shape=args.shape,
                      eps=d.eps if args.eps is None else args.eps, dtype=dtype, checks=checks, trials=trials,
                      seed=seed, timing=timing, target=target, stages=tuple(args.stages or ()), full=args.full,
                      external=tuple(args.external or ()), repo=repo, family=args.family,
                      inputs=getattr(args, "inputs", None))
    return request, options


def build(request: Request, registry: Registry, options: Options = Options()) -> Plan:
    """The plan of `request`, or UsageError naming what is known (variants, presets, dtypes, kinds, checks)."""
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
    dtypes = tuple(family.dtypes[n] for n in _names(request.dtype, family.dtypes, "dtype", "--dtype", family))
    kinds = tuple(family.input_kinds) if request.inputs is None else \
        _names(request.inputs, family.input_kinds, "input kind", "--inputs", family)
    if request.input_kind not in family.input_kinds:
        raise UsageError(f"family {family.name} has no input kind {request.input_kind!r}; "
                         f"its kinds: {', '.join(family.input_kinds)}")
    unknown = [c for c in request.checks if c not in CHECKS]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; known checks: {', '.join(CHECKS)}")
    directions = tuple(d for c, d in (("numerics", "forward"), ("backward", "backward"))
                       if c in request.checks and (d == "forward" or family.grads))
    wanted = family.accuracy_reference
    reference = registry.get(wanted, family.name) if wanted and registry.has(wanted, family.name) else None
    modes, left = _modes(family, chosen, request.timing.modes, request.checks)
    return Plan(request=request, family=family, variants=tuple(chosen), preset=preset, dtypes=dtypes,
                input_kinds=kinds, directions=directions, timing=dataclasses.replace(request.timing, modes=modes),
                timing_left_out=left, accuracy_reference=reference,
                reads_x_twice=tuple(_optional_bool(family.reads_x_twice(s)) for s in preset.shapes), checks=request.checks,
                left_out=request.left_out, options=options)


def _optional_bool(value) -> Optional[bool]:
    return None if value is None else bool(value)


def _modes(family, chosen, asked: tuple[str, ...], checks) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The passes to time and the lines of those left out (compare.running.timing_run.plan_modes), when timed."""
    if "timing" not in checks:
        return asked, ()
    from compare.running.timing_run import plan_modes
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
