"""The command line of `compare` and `ir` read into a Request and its Options (compare.comparison.plan):
every value is checked here, before any work; a bad one is a UsageError of one line."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

from compare.checks.timing_config import TimingConfig
from compare.command_line import usage
from compare.comparison.plan import Options, Request
from compare.model.errors import UsageError
from compare.model.vocabulary import IR, TIMING

COMMAND_CHECKS = {"ir": (IR,)}     # a subcommand that runs one check; `compare` runs the --check ones
COMMAND_TRIALS = {"ir": 1}           # the IR compiles one shape: more trials would change nothing


def _filled(args: dict, name: str, default):
    value = args.get(name)
    return default if value is None else value


class Asked(NamedTuple):
    """What a command line asks, resolved: the Request (what is compared) and the Options (how it runs)."""

    request: Request
    options: Options


def from_args(args) -> Asked:
    """The Request and Options of a parsed `compare` or `ir` command line; UsageError (one line) for a bad value."""
    return from_values(**vars(args))


def as_compare(args, **changes) -> Asked:
    """The Request and Options `compare` would resolve from another command's parsed `args` (review's) with
    `changes` (`external` may hold the Specs it built: variants/spec.py), less the output paths: that command
    writes its own files."""
    return from_values(**{**vars(args), "command": "compare", "json": None, "markdown": None, "out": None, **changes})


def from_values(**args) -> Asked:
    """The Request and Options of a `compare` or `ir` command line given as its values (the names of its parsed
    fields; one left out is its default); UsageError (one line) for a bad value."""
    d, t, o = Request(), TimingConfig(), Options()
    command = args.get("command", "compare")
    checks = tuple(_filled(args, "checks", COMMAND_CHECKS.get(command, d.checks)))
    trials = _filled(args, "trials", COMMAND_TRIALS.get(command, d.trials))
    seed, rounds, calls = _filled(args, "seed", d.seed), _filled(args, "rounds", t.rounds), _filled(args, "calls", t.calls_per_round)
    max_seconds, noise = _filled(args, "max_seconds", t.max_seconds), _filled(args, "noise", t.noise)
    modes_text = args.get("modes")
    options = Options(**{f.name: _filled(args, f.name, getattr(o, f.name)) for f in dataclasses.fields(Options)})
    options = dataclasses.replace(options, verbose=options.verbose or command == "ir")
    repo, dtype, target = _filled(args, "repo", d.repo), _filled(args, "dtype", d.dtype), _filled(args, "target", d.target)
    if args.get("eps") is not None and not args.get("shape"):
        raise UsageError("--eps applies to --shape only (a preset's shapes carry their own eps)")
    usage.not_blank("--preset", args.get("preset"), "a preset's name (`list` shows them)")
    usage.not_blank("--repo", repo, "a git repository's folder")
    usage.finite("--eps", args.get("eps"), strict=True)
    usage.comma_list("--dtype", dtype)
    usage.comma_list("--inputs", args.get("inputs"))
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
        ir.check_stages(args.get("stages") or ())
    except ValueError as exc:
        raise UsageError(f"--target/--stage: {exc}") from None
    modes = tuple(m.strip() for m in (modes_text or "").split(",") if m.strip())
    from variants.variant import MODES   # the family protocol's passes (the families import torch)
    usage.outputs(options.json, options.markdown, options.out, force=options.force,
                  modes=(modes or MODES) if TIMING in checks else ())
    try:
        timing = TimingConfig(modes=modes, rounds=rounds, min_rounds=min(t.min_rounds, rounds), calls_per_round=calls,
                              max_seconds=max_seconds, noise=noise, graph=_filled(args, "graph", t.graph), seed=seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    request = Request(variants=tuple(args.get("variants") or ()), preset=args.get("preset"), shape=args.get("shape"),
                      eps=_filled(args, "eps", d.eps), dtype=dtype, checks=checks, trials=trials, seed=seed,
                      timing=timing, target=target, stages=tuple(args.get("stages") or ()),
                      full=_filled(args, "full", d.full), external=tuple(args.get("external") or ()), repo=repo,
                      family=args.get("family"), inputs=args.get("inputs"),
                      input_kind=_filled(args, "input_kind", d.input_kind))
    return Asked(request, options)


def registry_of(args):
    """The registry of the command's families, imported where a supervisor sees it: a family package whose
    import ends the process is bad input, named by where it is (its --family-path folders, else all)."""
    from compare.runtime import supervisor
    from variants import registry
    where = ", ".join(f"--family-path {p}" for p in args.family_paths or ())
    with supervisor.importing_families(where or f"the families found (built in, {args.repo or '.'}/pyproject.toml, "
                                       "entry points)"):
        return registry()
