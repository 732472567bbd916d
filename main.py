"""kernel-ab: put variants of a Triton kernel side by side (numerics, timing, compiled code).

    python main.py list
    python main.py compare [A B ...] [--family NAME] [--preset NAME | --shape SHAPE] [--dtype float32] [--check CHECK]
                           [--json PATH] [--out DIR] [--fail-on-numerics] [--fail-if-slower PCT]
    python main.py compare [A B ...] [--dtype float32[,float16|all]] [--inputs KIND[,KIND]|all] [--check backward]
    python main.py compare [A ...] --variant NAME=git:REV:PATH::CALLABLE[,BACKWARD] --variant NAME=PATH::CALLABLE [--repo DIR]
    python main.py compare --variant 'NAME=git:REV:PATH::Fn.apply(X, W, B, num_channels, num_groups, eps)'
    python main.py ir [A B ...] [--stage ttir|ttgir|llir|ptx|sass] [--target sm_90] [--preset NAME | --shape ...] [--full]
    python main.py report FILE.json [--format terminal|markdown]

Exit codes: 0 every gate asked for holds; 1 a gate failed; 2 bad usage.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, instead of usage + message
        print(f"kernel-ab: error: {message} (see `python main.py {self.prog.split()[-1]} --help`)", file=sys.stderr)
        sys.exit(2)


def _shape_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("variants", nargs="*", help="variant names; the first is the baseline")
    p.add_argument("--preset", help="shape preset (default: the family's default)")
    p.add_argument("--shape", help="one shape instead of a preset, in the family's form (`main.py list` shows it)")
    p.add_argument("--family", help="the family to compare (default: the named variants' family, else the default "
                                    "family that `main.py list` names); --variant kernels join it")
    p.add_argument("--eps", type=float, default=1e-6, help="eps for --shape (default 1e-6)")
    p.add_argument("--dtype", default="float32",
                   help="float32, float16, bfloat16, a comma list of them, or all (default float32)")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="where kernels run: auto (GPU if present), cuda, or cpu (Triton interpreter)")


def _variant_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("bring your own kernel")
    g.add_argument("--variant", action="append", dest="external", metavar="NAME=[git:REV:]PATH::CALLABLE[(ARGS)]",
                   help="also compare code from a file, or from a file at a git revision (repeatable; compared after "
                        "the named variants, in the order given). CALLABLE is a name or dotted path in the file. A "
                        "@triton.jit function is a kernel, run by the family's launcher: a forward or a backward "
                        "kernel, told apart by its parameters (FORWARD,BACKWARD: both). Anything else callable (a "
                        "Python function, an autograd Function's apply) is an op, compared as its users call it "
                        "(forward, backward through autograd, timing of each, IR of the kernels it launches). An op "
                        "whose arguments are not in the family's order lists the family's op arguments (`main.py "
                        "list` shows them) in its own order: 'Fn.apply(X, W, B, num_channels, num_groups, eps)' "
                        "(quote it for the shell)")
    g.add_argument("--repo", default=".", help="the git repository of git: variants (default: the current directory)")


def _timing_options(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("timing (GPU only)")
    t.add_argument("--modes", default="forward", help="comma list of forward, backward, full (default forward)")
    t.add_argument("--noise", type=float, default=0.01, help="noise band for the verdict, a fraction (default 0.01)")
    t.add_argument("--rounds", type=int, default=60, help="at most this many interleaved rounds per case (default 60)")
    t.add_argument("--calls", type=int, default=5, help="timed calls per variant per round (default 5)")
    t.add_argument("--max-seconds", type=float, default=10.0, help="measurement time cap per case (default 10)")
    t.add_argument("--graph", default="auto", help="replay from CUDA graphs: auto (tiny or launch-bound cases), on, off")


def _ir_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("compiled code")
    g.add_argument("--stage", action="append", dest="stages", help="IR stage to show (repeatable): ttir, ttgir, "
                   "llir, ptx, sass (default all)")
    g.add_argument("--target", default="sm_90", help="IR target without a GPU, sm_NN (default sm_90)")
    g.add_argument("--full", action="store_true", help="IR: whole normalized listings and uncut diffs")


def _output_options(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("output and gates")
    o.add_argument("--json", type=Path, help="also write the report as JSON here")
    o.add_argument("--markdown", type=Path, help="also write the report as Markdown here")
    o.add_argument("--out", type=Path, help="write report.md, report.json, benchmark rows and plots into this folder")
    o.add_argument("--fail-on-numerics", action="store_true", help="exit 1 if any variant fails a numerics check")
    o.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 if a variant is significantly slower than the baseline by more than PCT percent")
    o.add_argument("--quiet", action="store_true", help="no progress output")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="main.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="list the families, their variants, presets, input kinds and dtypes")
    c = sub.add_parser("compare", help="compare variants (default: the family's default pair)")
    _shape_options(c)
    c.add_argument("--inputs", help="input kinds, comma list or all (the family's kinds: `main.py list`; default: "
                                    "all, the non-normal ones on the first shape, 1 trial)")
    c.add_argument("--check", action="append", dest="checks",
                   help="run only this check (repeatable): numerics (forward), backward, timing, ir (default all)")
    c.add_argument("--trials", type=int, default=3, help="fresh-input trials per shape (default 3)")
    c.add_argument("--seed", type=int, default=0, help="first seed of the trials (default 0)")
    _variant_options(c)
    _timing_options(c)
    _ir_options(c)
    _output_options(c)
    i = sub.add_parser("ir", help="compare the compiled code of Triton variants, stage by stage "
                                  "(the preset's first shape fixes the specialization)")
    _shape_options(i)
    _variant_options(i)
    _ir_options(i)
    _output_options(i)
    i.set_defaults(checks=["ir"], trials=1, seed=0, modes="forward", noise=0.01, rounds=60, calls=5,
                   max_seconds=10.0, graph="auto")
    r = sub.add_parser("report", help="re-render a saved JSON report")
    r.add_argument("file", type=Path, help="a report.json written by compare")
    r.add_argument("--format", default="terminal", choices=("terminal", "markdown"))
    return p


def _fail(message: str) -> int:
    print(f"kernel-ab: error: {message}", file=sys.stderr)
    return 2


def cmd_list(registry) -> int:
    from tabulate import tabulate
    print(f"families: {', '.join(registry.families)} (default {registry.default_family})")
    for family in registry.families.values():
        print(f"\n## family {family.name}: {type(family).__doc__.strip().splitlines()[0]}")
        rows = [(v.name, v.kind, ", ".join(v.own_kernels) or "op", "GPU" if v.needs_gpu else "any", v.why)
                for v in registry.variants(family.name)]
        print(tabulate(rows, headers=("variant", "kind", "kernels", "runs on", "what it is"), tablefmt="github"))
        print(f"default pair: {' vs '.join(family.default_pair)}; --shape {family.shape_help}")
        print(f"input kinds: {', '.join(family.input_kinds)}; dtypes: {', '.join(family.dtypes)}")
        print(f"outputs: {', '.join(family.outputs)}; gradients: {', '.join(family.grads) or 'none'}")
        print("presets:")
        for preset in family.presets.values():
            default = " (default)" if preset.name == family.default_preset else ""
            print(f"  {preset.name}{default}: {preset.description}; {len(preset.shapes)} shapes")
        if family.op_params:
            from variants.ops import argument_names
            extra = [n for n in argument_names(family) if n not in family.op_params]
            also = f"; an argument list may also name {', '.join(extra)}" if extra else ""
            print(f"op (for --variant ops): ({', '.join(family.op_params)}) -> {family.outputs[0]}{also}")
    return 0


def _request(args):
    from compare import pipeline
    from compare.timing import TimingConfig
    try:
        timing = TimingConfig(modes=tuple(m.strip() for m in args.modes.split(",") if m.strip()), rounds=args.rounds,
                              min_rounds=min(10, args.rounds), calls_per_round=args.calls,
                              max_seconds=args.max_seconds, noise=args.noise, graph=args.graph, seed=args.seed)
    except ValueError as exc:
        raise pipeline.UsageError(str(exc)) from None
    return pipeline.Request(variants=tuple(args.variants), preset=args.preset, shape=args.shape, eps=args.eps,
                            dtype=args.dtype, checks=tuple(args.checks or pipeline.CHECKS), trials=args.trials,
                            seed=args.seed, timing=timing, target=args.target, stages=tuple(args.stages or ()),
                            full=args.full, external=tuple(args.external or ()), repo=args.repo,
                            family=args.family, inputs=getattr(args, "inputs", None))


def cmd_compare(args, registry, backend) -> int:
    from compare import gates, pipeline
    from compare.progress import reporter
    from compare.render import files, json_report, terminal
    request = _request(args)
    if args.out and args.out.exists() and not args.out.is_dir():
        raise pipeline.UsageError(f"--out {args.out} exists and is not a folder")
    if args.fail_if_slower is not None and args.fail_if_slower < 0:
        raise pipeline.UsageError(f"--fail-if-slower takes a percentage >= 0, got {args.fail_if_slower}")
    for flag, path in (("--json", args.json), ("--markdown", args.markdown)):
        if path and not path.parent.exists():
            raise pipeline.UsageError(f"{flag} {path}: folder {path.parent} does not exist")
    with pipeline.loaded(request, registry) as (request, registry, failed):  # --variant kernels, removed at exit
        pipeline.resolve(request, registry)  # bad input fails before any work
        with reporter(pipeline.count_steps(request, registry, backend), not args.quiet) as step:
            report = pipeline.run(request, registry, backend, step, failed=failed)
    terminal.render(report)
    if args.json:
        args.json.write_text(json_report.render(report))
        print(f"wrote {args.json}", file=sys.stderr)
    if args.markdown:
        from compare.render import markdown
        args.markdown.write_text(markdown.render(report))
        print(f"wrote {args.markdown}", file=sys.stderr)
    if args.out:
        for line in files.write(report, args.out):
            print(line, file=sys.stderr)
    broken = gates.failures(report, args.fail_on_numerics, args.fail_if_slower)
    for line in broken:
        print(f"kernel-ab: gate failed: {line}", file=sys.stderr)
    return 1 if broken else 0


def cmd_report(args) -> int:
    import json
    from compare.pipeline import UsageError
    from compare.render import json_report, markdown, terminal
    try:
        report = json_report.load(args.file.read_text())
    except FileNotFoundError:
        raise UsageError(f"report file {args.file} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{args.file} is not JSON ({exc}); give a report.json written by compare") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UsageError(f"{args.file} is not a kernel-ab report: {exc}") from None
    if args.format == "markdown":
        sys.stdout.write(markdown.render(report))
    else:
        terminal.render(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from compare.backend import BackendError, configure
    from compare.pipeline import NothingToCompare, UsageError
    try:
        if args.command == "report":
            return cmd_report(args)
        backend = configure(getattr(args, "device", "auto"))
        from variants import registry
        reg = registry()
        if args.command == "list":
            return cmd_list(reg)
        return cmd_compare(args, reg, backend)
    except (UsageError, BackendError) as exc:
        return _fail(str(exc))
    except NothingToCompare as exc:
        print(f"kernel-ab: nothing to compare: {exc}", file=sys.stderr)
        return 1
    except NothingToCompare as exc:
        print(f"kernel-ab: nothing to compare: {exc}", file=sys.stderr)
        return 1


def cli() -> None:
    """The `kernel-ab` console command."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
