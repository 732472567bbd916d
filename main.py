"""kernel-ab's command line: list, compare, ir, review, record, report, pairwise, diff (`kernel-ab COMMAND --help`).

Exit codes (compare.runtime.exit_codes; the table: docs/reports-and-gates.md): 0 every gate holds; 1 a gate
failed or could not be judged; 2 bad input; 3 kernel-ab's own error or a missing dependency; 74 a report file
could not be written; 75 a variant poisoned the process (unsupervised: KERNEL_AB_ISOLATE=0); 129/130/143
SIGHUP/SIGINT/SIGTERM. Every default and value check: compare/comparison/plan.py."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from compare.runtime.exit_codes import ExitCode

# a stop signal that comes while the command starts is kept, not lost: the supervisor or main() acts on it
EARLY_SIGNALS: list[int] = []

# options whose value may start with '-' (`--shape -2,8,2,16` is a bad shape, not a missing value)
_VALUE_OPTIONS = frozenset({"--shape", "--eps", "--seed", "--trials", "--noise", "--rounds", "--calls",
                            "--variant-timeout", "--max-seconds", "--fail-if-slower", "--dtype", "--inputs", "--modes",
                            "--target"})


class _ParseError(Exception):
    """A command line argparse cannot parse; the message is the one line to show."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):   # `--fam` is an unknown option, never silently `--family-path`
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

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


# the defaults live in compare.comparison.plan (Request, Options) and TimingConfig: the help only says them
def _defaults():
    from compare.comparison.plan import Options, Request
    from compare.checks.timing_config import TimingConfig
    return Request(), TimingConfig(), Options()


def _shape_options(p: argparse.ArgumentParser) -> None:
    d, _, o = _defaults()
    p.add_argument("variants", nargs="*", help="variant names; the first is the baseline")
    p.add_argument("--preset", help="shape preset (default: the family's default)")
    p.add_argument("--shape", help="one shape instead of a preset, in the family's form (`kernel-ab list` shows it)")
    p.add_argument("--family", help="the family to compare (default: the named variants' family, else the default "
                                    "family that `kernel-ab list` names); --variant kernels join it")
    p.add_argument("--eps", type=float, help=f"eps for --shape (default {d.eps:g}; a preset has its own)")
    p.add_argument("--dtype", help=f"float32, float16, bfloat16, a comma list of them, or all (default {d.dtype})")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"),
                   help=f"where kernels run: auto (GPU if present), cuda, or cpu (Triton interpreter) (default {o.device})")
    p.add_argument("--variant-timeout", type=float, metavar="SECONDS",
                   help="a variant's launch (one case) that has not returned after this long is stopped and "
                        f"reported as hung; the others still run (default {o.variant_timeout:g})")


def _variant_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("bring your own kernel")
    g.add_argument("--variant", action="append", dest="external", metavar="NAME=[git:REV:]PATH::CALLABLE[(ARGS)]",
                   help="also compare code from a file, or from a file at a git revision (repeatable; compared after "
                        "the named variants, in the order given). CALLABLE is a name or dotted path in the file. A "
                        "@triton.jit function is a kernel, run by the family's launcher: a forward or a backward "
                        "kernel, told apart by its parameters (FORWARD,BACKWARD: both). Anything else callable (a "
                        "Python function, an autograd Function's apply) is an op, compared as its users call it "
                        "(forward, backward through autograd, timing of each, IR of the kernels it launches). An op "
                        "whose arguments are not in the family's order lists the family's op arguments (`kernel-ab "
                        "list` shows them) in its own order: 'Fn.apply(ARG, ...)' (quote it for the shell)")
    g.add_argument("--repo", help="the git repository of git: variants, whose pyproject.toml may name family folders "
                                  "(default: the current directory)")
    _family_options(p)


def _family_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family-path", action="append", dest="family_paths", metavar="DIR",
                   help="also find families in DIR's packages (repeatable; docs/variants-and-families.md)")


def _timing_options(p: argparse.ArgumentParser) -> None:
    _, c, _ = _defaults()
    t = p.add_argument_group("timing (GPU only)")
    t.add_argument("--modes", help="comma list of forward, backward, full (default: every pass whose compiled "
                                   "code differs between the variants; every pass when a variant is an op)")
    t.add_argument("--noise", type=float, help=f"noise band for the verdict, a fraction (default {c.noise:g})")
    t.add_argument("--rounds", type=int, help=f"at most this many interleaved rounds per case (default {c.rounds})")
    t.add_argument("--calls", type=int, help=f"timed calls per variant per round (default {c.calls_per_round})")
    t.add_argument("--max-seconds", type=float, help=f"measurement time cap per case (default {c.max_seconds:g})")
    t.add_argument("--graph", help=f"replay from CUDA graphs: auto (tiny or launch-bound cases), on, off "
                                   f"(default {c.graph})")


def _ir_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("compiled code")
    g.add_argument("--stage", action="append", dest="stages", help="IR stage to show (repeatable): ttir, ttgir, "
                   "llir, ptx, sass (default all)")
    g.add_argument("--target", help=f"IR target without a GPU, sm_NN (default {_defaults()[0].target})")
    g.add_argument("--full", action="store_true", help="IR: whole normalized listings and uncut diffs")


def _output_options(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("output and gates")
    o.add_argument("--json", help="also write the report as JSON here (-: on standard output, the screen on stderr)")
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
    o.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    o.add_argument("-v", "--verbose", action="store_true", help="print every section after the glance (else: the files)")


def _parser(prog: str) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=__doc__.splitlines()[0])
    from compare.runtime.version import VersionAction
    p.add_argument("-V", "--version", action=VersionAction, help="print kernel-ab's version and commit, and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ls = sub.add_parser("list", help="list the families, where each came from, their variants, presets, input "
                                     "kinds and dtypes")
    _family_options(ls)
    ls.add_argument("--repo", default=".", help="the repository whose pyproject.toml may name family folders "
                                                "(default: the current directory)")
    c = sub.add_parser("compare", help="compare variants (default: the family's default pair)")
    _shape_options(c)
    c.add_argument("--inputs", help="input kinds, comma list or all (the family's kinds: `kernel-ab list`; default: "
                                    "all, the non-normal ones on the first shape, 1 trial)")
    c.add_argument("--check", action="append", dest="checks",
                   help="run only this check (repeatable): numerics (forward), backward, timing, ir (default all)")
    d = _defaults()[0]
    c.add_argument("--trials", type=int, help=f"fresh-input trials per shape (default {d.trials})")
    c.add_argument("--seed", type=int, help=f"first seed of the trials (default {d.seed})")
    _variant_options(c)
    _timing_options(c)
    _ir_options(c)
    _output_options(c)
    from compare.command_line.distributed_options import add_options as add_distributed_options
    add_distributed_options(c)
    i = sub.add_parser("ir", help="compare the compiled code of Triton variants, stage by stage "
                                  "(the preset's first shape fixes the specialization)")
    _shape_options(i)
    _variant_options(i)
    _ir_options(i)
    _output_options(i)
    from compare.review.command import register
    register(sub, (_timing_options, _ir_options, _output_options, _family_options))
    from compare.command_line import recorded   # `record`, and compare's --recorded
    recorded.register(sub, compare=c)
    r = sub.add_parser("report", help="re-render a saved JSON report")
    r.add_argument("file", type=Path, help="a report.json written by compare")
    r.add_argument("--format", default="terminal", choices=("terminal", "markdown", "markdown-full"),
                   help="markdown: the comment (report.md); markdown-full: nothing cut (report-full.md)")
    r.add_argument("-v", "--verbose", action="store_true", help="terminal: every section after the glance")
    r.set_defaults(alone=cmd_report)
    from compare.checks import pairwise
    pairwise.add_parser(sub)
    sub.choices["pairwise"].set_defaults(alone=_pairwise)
    from compare.command_line import baseline, examples
    baseline.add_parsers(sub, c)   # diff, and compare's --baseline
    examples.add(sub)
    return p


def _fail(message: str) -> int:
    print(f"kernel-ab: error: {message}", file=sys.stderr)
    return ExitCode.USAGE


def _pairwise(args) -> int:
    """`pairwise` on the report file, read as every saved report is (a FIFO or device refused at once)."""
    from compare.checks import pairwise
    from compare.command_line.usage import report_text
    return pairwise.run(args, report_text(args.file))


def cmd_compare(request, options, registry, backend, distributed=None, saved=None) -> int:
    from compare.comparison import pipeline
    from compare.runtime.progress import reporter
    from compare.runtime import run_context
    with pipeline.planned(request, registry, options, excluded=run_context.culprits(), backend=backend,
                          no_timing=run_context.timing_left_out()) as (the_plan, failed):   # unloaded at exit
        if saved is not None:   # --baseline: a saved run that could share no case is refused before the work
            saved.refuse_before_work(the_plan)
        from compare.command_line import distributed_options   # --jobs, --scheduler: the checks as tasks (docs/sweeps.md)
        if distributed is not None and distributed.dry_run:
            return distributed_options.dry_run(distributed, the_plan, backend)
        from compare.command_line.outcome import warn_unjudgeable
        warn_unjudgeable(the_plan, backend, options)   # before the work, not found out at its end
        stopped = None
        try:
            with reporter(distributed_options.steps(distributed, the_plan, backend), not options.quiet) as step:
                if distributed and distributed.wanted:
                    report = distributed_options.run(distributed, the_plan, backend, step, failed)
                else:
                    report = pipeline.execute(the_plan, backend, step, failed=failed)
        except pipeline.Interrupted as exc:   # a stop signal: the report of the cases finished, and its exit code
            report, stopped = exc.report, exc.stop
            print(f"kernel-ab: {stopped}; the report holds what was finished before it", file=sys.stderr)
    from compare.command_line import outcome
    return outcome.finish(report, options, stopped, saved)


def cmd_report(args) -> int:
    from compare.command_line import baseline
    from compare.command_line.usage import UsageError
    from compare.command_line import output_files as files
    from compare.render import markdown, terminal
    report = baseline.load(args.file)
    try:  # a report of the right types may still hold what no renderer expects (say, an unknown IR stage)
        if args.format in ("markdown", "markdown-full"):
            sys.stdout.write(files.comment(report, args.file) if args.format == "markdown" else markdown.full(report))
        else:
            terminal.render(report, verbose=args.verbose)
    except Exception as exc:  # noqa: BLE001 - whatever the values, one line, not a traceback
        from compare.model.errors import summarize
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
    from compare.runtime import written
    from compare.runtime import supervisor
    previous = {}
    written.start()
    try:
        early, EARLY_SIGNALS[:] = list(EARLY_SIGNALS), []   # consumed: a later call in this process starts clean
        previous = supervisor.install_stop_handlers(early)
        code = _main(_join_values(list(sys.argv[1:] if argv is None else argv)), prog or _prog())
    except supervisor.Stopped as exc:   # temporary trees and files are gone by now: the stack unwound
        print(f"kernel-ab: {exc}; {written.after_stop()}", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt:           # raised by code outside any variant's launch
        print(f"kernel-ab: interrupted; {written.after_stop()}", file=sys.stderr)
        code = ExitCode.SIGINT
    except BrokenPipeError:
        # the reader left (`kernel-ab list | head`): stop quietly, as a command killed by SIGPIPE does;
        # stdout goes to devnull so that the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = ExitCode.SIGPIPE
    except BaseException as exc:        # an error while unwinding from a stop signal is that stop
        if isinstance(exc, SystemExit) or not (supervisor.STOP_REQUESTED or isinstance(exc, Exception)):
            raise
        if supervisor.STOP_REQUESTED:
            stop = supervisor.Stopped(supervisor.STOP_REQUESTED[0])
            print(f"kernel-ab: {stop}; {written.after_stop()}", file=sys.stderr)
            code = stop.exit_code
        else:                           # kernel-ab's own error: exit 3, never 1 (a gate's code)
            from compare.runtime.exit_codes import internal_error
            code = internal_error(exc)
    finally:
        supervisor.restore_handlers(previous)
    pending = supervisor.pending_stop()
    stopped = (ExitCode.SIGINT, ExitCode.SIGTERM, ExitCode.SIGHUP)
    if pending is not None and code not in stopped:   # the stop came; the run ended before it was raised
        stop = supervisor.Stopped(pending)
        print(f"kernel-ab: {stop}; {written.after_stop()}", file=sys.stderr)
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
    from compare.runtime.backend import BackendError, configure
    from compare.runtime import supervisor
    from compare.runtime.supervisor import POISONED_EXIT, ContextPoisoned
    from compare.comparison.pipeline import NothingToCompare, UsageError
    from variants.discovery import FamilyError
    from compare.processes.distributed import TaskFailed
    try:
        if getattr(args, "alone", None) is not None:   # report, pairwise, diff: they read saved reports only
            return args.alone(args)
        if args.command == "record":   # compare/command_line/recorded.py
            return args.record(args)
        from variants import discovery
        from compare.command_line.arguments import as_compare, from_args, registry_of
        if args.command == "list":
            configure("auto")
            with discovery.configured(args.family_paths or (), args.repo or "."):
                from variants.listing import show
                return show(registry_of(args))
        if args.command == "review":
            as_compare(args)   # every value checked, before any work
            options = None
        else:
            request, options = from_args(args)   # every value checked, before any work
        from compare.command_line import distributed_options
        distributed = distributed_options.from_args(args)
        # read by every launch's status record (compare.runtime.supervisor)
        supervisor.set_limit(args.variant_timeout if options is None else options.variant_timeout)
        backend = configure("auto" if options is None else options.device, probe=True)
        if getattr(args, "recorded", None):   # the family made from the recording
            request, options = from_args(args := args.with_recording(args, backend))
        with discovery.configured(args.family_paths or (), args.repo or "."):   # the processes a run starts see them too
            reg = registry_of(args)
            if args.command == "review":
                from compare.review.command import run as cmd_review
                return cmd_review(args, reg, backend)
            return cmd_compare(request, options, reg, backend, distributed, getattr(args, "baseline", None))
    except (UsageError, BackendError, FamilyError) as exc:
        return _fail(str(exc))
    except NothingToCompare as exc:
        from compare.model.habits import MissingPackage
        for needs in dict.fromkeys(MissingPackage.of(i.needs) for i in exc.failed if i.needs):   # first: what to install
            print(f"kernel-ab: {needs.text()}", file=sys.stderr)
        print(f"kernel-ab: nothing to compare: {exc}", file=sys.stderr)
        return ExitCode.GATE_FAILED
    except TaskFailed as exc:
        print(f"kernel-ab: error: a task failed: {exc}; no report", file=sys.stderr)
        return ExitCode.GATE_FAILED
    except ContextPoisoned as exc:
        print(f"kernel-ab: error: variant {exc.variant} {exc.error}; nothing more can run in this process "
              "(the kernel-ab command reruns without it)", file=sys.stderr)
        return POISONED_EXIT


def cli() -> None:
    """The `kernel-ab` console command (and `python main.py`): `compare` runs in a child process under a
    supervisor, so that a variant that crashes its process is reported and the others still come out
    (compare.runtime.supervisor); KERNEL_AB_ISOLATE=0 runs it in this process."""
    try:
        _cli()
    except Exception as exc:   # noqa: BLE001 - the supervisor's own error (or a missing module): exit 3
        from compare.runtime.exit_codes import internal_error
        sys.exit(internal_error(exc))


def _cli() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda s, _frame: EARLY_SIGNALS.append(s))
    from compare.runtime import run_context, supervisor
    argv = sys.argv[1:]
    words = [a for a in argv if not a.startswith("-")]
    if (words[:1] in (["compare"], ["ir"], ["review"], ["list"]) and os.environ.get(supervisor.ISOLATE_ENV) != "0"
            and not run_context.supervised()):
        from compare.processes.supervision import supervise
        child = [sys.executable, sys.argv[0], *argv]   # the same command line, so the report records it
        os.environ["KERNEL_AB_PROG"] = _prog()   # the child names the command the user typed
        sys.exit(supervise(child, EARLY_SIGNALS))
    code = main()
    if code == supervisor.POISONED_EXIT or any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                               if t is not threading.main_thread()):
        # a poisoned process runs nothing more, not even the atexit handlers a variant registered;
        # a variant's thread would keep the process alive after its report (the report says whose it was)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    cli()
