"""kernel-ab: put variants of a Triton kernel side by side (numerics, timing, compiled code).

    python main.py list
    python main.py compare [A B ...] [--preset NAME] [--dtype float32[,float16|all]] [--inputs KIND[,KIND]|all]
                           [--check numerics] [--check backward] [--json PATH]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, instead of usage + message
        print(f"kernel-ab: error: {message} (see `python main.py {self.prog.split()[-1]} --help`)", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="main.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="list the registered variants and presets")
    c = sub.add_parser("compare", help="compare variants (default: pointer_mutation against explicit_offset)")
    c.add_argument("variants", nargs="*", help="variant names; the first is the baseline")
    c.add_argument("--preset", help="shape preset (default: the family's default)")
    c.add_argument("--shape", help="one shape instead of a preset: BATCH,CHANNELS,GROUPS,SPATIAL (e.g. 16,320,32,64x64)")
    c.add_argument("--eps", type=float, default=1e-6, help="eps for --shape (default 1e-6)")
    c.add_argument("--dtype", default="float32",
                   help="float32, float16, bfloat16, a comma list of them, or all (default float32)")
    c.add_argument("--inputs", help="input kinds, comma list or all: normal, large_mean, all_equal, huge, tiny, "
                                    "nonfinite (default: all, the non-normal ones on the first shape, 1 trial)")
    c.add_argument("--check", action="append", dest="checks",
                   help="run only this check (repeatable): numerics (forward), backward (default: both)")
    c.add_argument("--trials", type=int, default=3, help="fresh-input trials per shape (default 3)")
    c.add_argument("--seed", type=int, default=0, help="first seed of the trials (default 0)")
    c.add_argument("--json", type=Path, help="also write the report as JSON here")
    c.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="where kernels run: auto (GPU if present), cuda, or cpu (Triton interpreter)")
    c.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def _fail(message: str) -> int:
    print(f"kernel-ab: error: {message}", file=sys.stderr)
    return 2


def cmd_list(registry) -> int:
    from tabulate import tabulate
    rows = [(v.name, v.family, v.kind, "GPU" if v.needs_gpu else "any", v.why) for v in registry.variants.values()]
    print(tabulate(rows, headers=("variant", "family", "kind", "runs on", "what it is"), tablefmt="github"))
    for family in registry.families.values():
        print(f"\npresets of {family.name}:")
        for preset in family.presets.values():
            default = " (default)" if preset.name == family.default_preset else ""
            print(f"  {preset.name}{default}: {preset.description}; {len(preset.shapes)} shapes")
    return 0


def cmd_compare(args, registry, backend) -> int:
    from compare import pipeline
    from compare.progress import reporter
    from compare.render import json_report, terminal
    request = pipeline.Request(variants=tuple(args.variants), preset=args.preset, shape=args.shape, eps=args.eps, dtype=args.dtype,
                               checks=tuple(args.checks or pipeline.CHECKS), trials=args.trials, seed=args.seed,
                               inputs=args.inputs)
    pipeline.resolve(request, registry)  # bad input fails before any work
    if args.json and not args.json.parent.exists():
        raise pipeline.UsageError(f"--json {args.json}: folder {args.json.parent} does not exist")
    with reporter(not args.quiet) as step:
        report = pipeline.run(request, registry, backend, step)
    terminal.render(report)
    if args.json:
        args.json.write_text(json_report.render(report))
        print(f"JSON report written to {args.json}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from compare.backend import BackendError, configure
    from compare.pipeline import UsageError
    try:
        backend = configure(getattr(args, "device", "auto"))
        from variants import registry
        reg = registry()
        if args.command == "list":
            return cmd_list(reg)
        return cmd_compare(args, reg, backend)
    except (UsageError, BackendError) as exc:
        return _fail(str(exc))


if __name__ == "__main__":
    sys.exit(main())
