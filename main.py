"""kernel-ab: put variants of a Triton kernel side by side (numerics, timing, compiled code).

    python main.py list
    python main.py compare [A B ...] [--family NAME] [--preset NAME | --shape SHAPE] [--dtype float32] [--check CHECK]
                           [--json PATH] [--out DIR] [--fail-on-numerics] [--fail-if-slower PCT] [--accept-unjudged]
    python main.py compare [A B ...] [--dtype float32[,float16|all]] [--inputs KIND[,KIND]|all] [--check backward]
    python main.py compare [A ...] --variant NAME=git:REV:PATH::CALLABLE[,BACKWARD] --variant NAME=PATH::CALLABLE [--repo DIR]
    python main.py compare --variant 'NAME=git:REV:PATH::Fn.apply(X, W, B, num_channels, num_groups, eps)'
    python main.py ir [A B ...] [--stage ttir|ttgir|llir|ptx|sass] [--target sm_90] [--preset NAME | --shape ...] [--full]
    python main.py report FILE.json [--format terminal|markdown|markdown-full]

Exit codes: 0 every gate asked for holds; 1 a gate failed or could not be judged (--accept-unjudged lets
the latter pass); 2 bad usage; 74 a report file could not be written.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

# a stop signal that comes while the command starts is kept, not lost: the supervisor or main() acts on it
EARLY_SIGNALS: list[int] = []


# options whose value may start with '-' (`--shape -2,8,2,16` is a bad shape, not a missing value)
_VALUE_OPTIONS = frozenset({"--shape", "--eps", "--seed", "--trials", "--noise", "--rounds", "--calls",
                            "--variant-timeout", "--max-seconds", "--fail-if-slower", "--dtype", "--inputs", "--modes",
                            "--target"})


class _ParseError(Exception):
    """A command line argparse cannot parse; the message is the one line to show."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2 (in main), instead of usage + message
        command = f"python {self.prog}" if self.prog.startswith("main.py") else self.prog
        raise _ParseError(f"{message} (see `{command} --help`)")


def _join_values(argv: list[str]) -> list[str]:
    """`--shape -2,...` as `--shape=-2,...`, so that argparse takes a value starting with '-' as the value."""
    out = []
    for arg in argv:
        if out and out[-1] in _VALUE_OPTIONS and arg.startswith("-") and not arg.startswith("--"):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _shape_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("variants", nargs="*", help="variant names; the first is the baseline")
    p.add_argument("--preset", help="shape preset (default: the family's default)")
    p.add_argument("--shape", help="one shape instead of a preset, in the family's form (`main.py list` shows it)")
    p.add_argument("--family", help="the family to compare (default: the named variants' family, else the default "
                                    "family that `main.py list` names); --variant kernels join it")
    p.add_argument("--eps", type=float, help="eps for --shape (default 1e-6; a preset has its own)")
    p.add_argument("--dtype", default="float32",
                   help="float32, float16, bfloat16, a comma list of them, or all (default float32)")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="where kernels run: auto (GPU if present), cuda, or cpu (Triton interpreter)")
    p.add_argument("--variant-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="a variant's launch (one case) that has not returned after this long is stopped and "
                        "reported as hung; the others still run (default 300)")


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
    t.add_argument("--modes", help="comma list of forward, backward, full (default: every pass whose compiled "
                                   "code differs between the variants; every pass when a variant is an op)")
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
    o.add_argument("--json", help="also write the report as JSON here")
    o.add_argument("--markdown", help="also write the report as a Markdown pull-request comment here (detail cut "
                                      "to keep it short; --out writes the whole one too)")
    o.add_argument("--out", help="write report.md (the comment), report-full.md (nothing cut), report.json, "
                                 "benchmark rows and plots into this folder")
    o.add_argument("--force", action="store_true",
                   help="replace files at the output paths that kernel-ab did not write (without it, such a path "
                        "is refused before any work; kernel-ab's own reports are replaced either way)")
    o.add_argument("--fail-on-numerics", action="store_true",
                   help="exit 1 if a variant could not be loaded, or introduced a numerics problem: one the baseline "
                        "has not in the same case (a crash, unwritten or non-finite-mismatched elements, errors beyond "
                        "tolerance, less accurate than the reference point), or is less accurate than the baseline. "
                        "A problem the baseline already has does not fail (a pull request did not cause it); the "
                        "reference point (torch) is a yardstick and never fails. With one variant, its own problems count")
    o.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 if a variant is significantly slower than the baseline by more than PCT percent "
                        "(the verdict against the baseline: what the change introduced; a difference within the "
                        "noise never fails)")
    o.add_argument("--accept-unjudged", action="store_true",
                   help="a gate whose evidence is missing (say --fail-if-slower where nothing could be timed) is "
                        "reported as not judged and does not fail the run; without it, it fails")
    o.add_argument("--quiet", action="store_true", help="no progress output")


def _parser(prog: str) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=__doc__.splitlines()[0])
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
    from compare.spread_cli import add_options as spread_options
    spread_options(c)
    i = sub.add_parser("ir", help="compare the compiled code of Triton variants, stage by stage "
                                  "(the preset's first shape fixes the specialization)")
    _shape_options(i)
    _variant_options(i)
    _ir_options(i)
    _output_options(i)
    i.set_defaults(checks=["ir"], trials=1, seed=0, modes=None, noise=0.01, rounds=60, calls=5,
                   max_seconds=10.0, graph="auto")
    r = sub.add_parser("report", help="re-render a saved JSON report")
    r.add_argument("file", type=Path, help="a report.json written by compare")
    r.add_argument("--format", default="terminal", choices=("terminal", "markdown", "markdown-full"),
                   help="markdown: the comment (report.md); markdown-full: nothing cut (report-full.md)")
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


def _check(args) -> None:
    """Every value of the command line, before any work (UsageError: one line)."""
    from compare import usage
    if args.command in ("report", "list"):
        return
    if args.eps is not None and not args.shape:
        raise usage.UsageError("--eps applies to --shape only (a preset's shapes carry their own eps)")
    usage.not_blank("--shape", args.shape, "BATCH,CHANNELS,GROUPS,SPATIAL, for example 16,320,32,64x64")
    usage.not_blank("--preset", args.preset, "a preset's name (`list` shows them)")
    usage.not_blank("--repo", args.repo, "a git repository's folder")
    usage.finite("--eps", args.eps, strict=True)
    usage.comma_list("--dtype", args.dtype)
    usage.comma_list("--inputs", getattr(args, "inputs", None))
    usage.comma_list("--modes", args.modes)
    usage.at_least("--trials", args.trials, 1, usage.TRIALS_MAX)
    usage.at_least("--seed", args.seed, 0, usage.SEED_MAX)
    usage.at_least("--rounds", args.rounds, 2, usage.ROUNDS_MAX)
    usage.at_least("--calls", args.calls, 1, usage.CALLS_MAX)
    usage.finite("--max-seconds", args.max_seconds, strict=True)
    usage.finite("--variant-timeout", args.variant_timeout, strict=True)
    usage.finite("--noise", args.noise)
    usage.finite("--fail-if-slower", args.fail_if_slower, what="a percentage")
    from compare import spread_cli
    spread_cli.check(args)
    from compare import ir   # the IR's flags are checked even when the IR is not among the checks
    try:
        ir.capability(args.target)
        ir.check_stages(args.stages or ())
    except ValueError as exc:
        raise usage.UsageError(f"--target/--stage: {exc}") from None
    timed = not args.checks or "timing" in args.checks
    usage.outputs(args.json, args.markdown, args.out, force=args.force,
                  modes=(_modes(args) or ("forward", "backward", "full")) if timed else ())


def _modes(args) -> tuple[str, ...]:
    """--modes as given; () when not given: the timing plan chooses (compare.timing_run.plan_modes)."""
    return tuple(m.strip() for m in (args.modes or "").split(",") if m.strip())


def _request(args):
    from compare import pipeline
    from compare.timing import TimingConfig
    try:
        timing = TimingConfig(modes=_modes(args), rounds=args.rounds,
                              min_rounds=min(10, args.rounds), calls_per_round=args.calls,
                              max_seconds=args.max_seconds, noise=args.noise, graph=args.graph, seed=args.seed)
    except ValueError as exc:
        raise pipeline.UsageError(str(exc)) from None
    return pipeline.Request(variants=tuple(args.variants), preset=args.preset, shape=args.shape,
                            eps=1e-6 if args.eps is None else args.eps,
                            dtype=args.dtype, checks=tuple(args.checks or pipeline.CHECKS), trials=args.trials,
                            seed=args.seed, timing=timing, target=args.target, stages=tuple(args.stages or ()),
                            full=args.full, external=tuple(args.external or ()), repo=args.repo,
                            family=args.family, inputs=getattr(args, "inputs", None))


def cmd_compare(args, registry, backend) -> int:
    import dataclasses
    from compare import gates, memory, pipeline
    from compare.progress import reporter
    from compare.render import files, terminal
    from compare import supervisor
    request = _request(args)
    with pipeline.loaded(request, registry, supervisor.excluded()) as (request, registry, failed):  # removed at exit
        pipeline.resolve(request, registry)  # bad input fails before any work
        memory.refuse_what_cannot_fit(request, registry, backend)
        request, failed = pipeline.without_crashed(request, registry, failed, supervisor.excluded(),
                                                   supervisor.timing_left_out())
        from compare import spread_cli
        if getattr(args, "dry_run", False):
            return spread_cli.dry_run(args, request, registry, backend)
        with reporter(pipeline.count_steps(request, registry, backend), not args.quiet) as step:
            report = spread_cli.run(args, request, registry, backend, step, failed) if spread_cli.wanted(args) \
                else pipeline.run(request, registry, backend, step, failed=failed)
    # the gates are decided once, into the report, so that every renderer lists them and the exit code agrees
    report = dataclasses.replace(report, gates=gates.decide(report, args.fail_on_numerics, args.fail_if_slower,
                                                            args.accept_unjudged))
    terminal.render(report)
    lines, unwritten = files.write(report, args.json, args.markdown, args.out)
    for line in lines:
        print(line, file=sys.stderr)
    broken = [line for g in report.gates for line in gates.reasons(g)]
    for line in broken:
        print(f"kernel-ab: gate failed: {line}", file=sys.stderr)
    return files.WRITE_FAILED if unwritten else 1 if any(g.fails for g in report.gates) else 0


def cmd_report(args) -> int:
    import json
    from compare.pipeline import UsageError
    from compare.render import json_report, markdown, terminal
    try:
        text = args.file.read_text()
    except FileNotFoundError:
        raise UsageError(f"report file {args.file} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{args.file} is a folder; give the report.json in it") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{args.file} is not JSON ({exc}); give a report.json written by compare") from None
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        report = json_report.load(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"{args.file} is not JSON ({exc}); give a report.json written by compare") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise UsageError(f"{args.file} is not a kernel-ab report: {exc}") from None
    try:  # a report of the right types may still hold what no renderer expects (say, an unknown IR stage)
        if args.format in ("markdown", "markdown-full"):
            sys.stdout.write(markdown.render(report) if args.format == "markdown" else markdown.full(report))
        else:
            terminal.render(report)
    except Exception as exc:  # noqa: BLE001 - whatever the values, one line, not a traceback
        from compare.errors import summarize
        raise UsageError(f"{args.file} is not a report this version can render: {summarize(exc)}") from None
    return 0


def _prog() -> str:
    import os
    if os.environ.get("KERNEL_AB_PROG") in ("main.py", "kernel-ab"):
        return os.environ["KERNEL_AB_PROG"]
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "main.py" if name.endswith(".py") or not name else "kernel-ab"


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line (`python main.py ...`, `kernel-ab ...`): its exit code."""
    from compare import supervisor
    previous = {}
    try:
        early, EARLY_SIGNALS[:] = list(EARLY_SIGNALS), []   # consumed: a later call in this process starts clean
        previous = supervisor.install_stop_handlers(early)
        code = _main(_join_values(list(sys.argv[1:] if argv is None else argv)), prog or _prog())
    except supervisor.Stopped as exc:   # temporary trees and files are gone by now: the stack unwound
        print(f"kernel-ab: {exc}; no report", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt:           # raised by code outside any variant's launch
        print("kernel-ab: interrupted; no report", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        # the reader left (`kernel-ab list | head`): stop quietly, as a command killed by SIGPIPE does;
        # stdout goes to devnull so that the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141
    except BaseException as exc:        # an error while unwinding from a stop signal is that stop
        if not supervisor.STOP_REQUESTED or isinstance(exc, SystemExit):
            raise
        stop = supervisor.Stopped(supervisor.STOP_REQUESTED[0])
        print(f"kernel-ab: {stop}; no report", file=sys.stderr)
        code = stop.exit_code
    finally:
        supervisor.restore_handlers(previous)
    pending = supervisor.pending_stop()
    if pending is not None and code not in (130, 143, 129):   # the stop came; the run ended before it was raised
        stop = supervisor.Stopped(pending)
        print(f"kernel-ab: {stop}; no report", file=sys.stderr)
        code = stop.exit_code
    if code != supervisor.POISONED_EXIT:
        supervisor.done(code)
    return code


def _main(argv: list[str], prog: str) -> int:
    try:
        args = _parser(prog).parse_args(argv)
    except _ParseError as exc:
        return _fail(str(exc))
    except SystemExit as exc:   # --help and --version: argparse printed them and exits; a deliberate end
        return exc.code if isinstance(exc.code, int) else 0
    from compare.backend import BackendError, configure
    from compare.supervisor import POISONED_EXIT, ContextPoisoned
    from compare.pipeline import NothingToCompare, UsageError
    from compare.spread import TaskFailed
    try:
        if args.command == "report":
            return cmd_report(args)
        _check(args)
        if args.command in ("compare", "ir"):   # read by every launch's status record (compare.supervisor)
            os.environ["KERNEL_AB_VARIANT_TIMEOUT"] = repr(args.variant_timeout)
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
    except TaskFailed as exc:
        print(f"kernel-ab: error: a task failed: {exc}; no report", file=sys.stderr)
        return 1
    except ContextPoisoned as exc:
        print(f"kernel-ab: error: variant {exc.variant} {exc.error}; nothing more can run in this process "
              "(the kernel-ab command reruns without it)", file=sys.stderr)
        return POISONED_EXIT


def cli() -> None:
    """The `kernel-ab` console command (and `python main.py`): `compare` runs in a child process under a
    supervisor, so that a variant that crashes its process is reported and the others still come out
    (compare.supervisor); KERNEL_AB_ISOLATE=0 runs it in this process."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda s, _frame: EARLY_SIGNALS.append(s))
    from compare import supervisor
    argv = sys.argv[1:]
    words = [a for a in argv if not a.startswith("-")]
    if (words[:1] in (["compare"], ["ir"]) and os.environ.get(supervisor.ISOLATE_ENV) != "0"
            and not os.environ.get(supervisor.STATUS_ENV)):
        from compare.supervision import supervise
        child = [sys.executable, sys.argv[0], *argv]   # the same command line, so the report records it
        os.environ["KERNEL_AB_PROG"] = _prog()   # the child names the command the user typed
        sys.exit(supervise(child, EARLY_SIGNALS))
    code = main()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        # a variant's thread would keep the process alive after its report (the report says whose it was)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    cli()
