"""`review BASE HEAD`: the changed kernels' ops compared at both revisions, as `compare` compares them.

Each op (or kernel) becomes two --variant specs, `OP.base=git:BASE:PATH::OP` and `OP.head=git:HEAD:...`,
run through compare's pipeline in its family with the family's default plan (--preset, --shape, --check and
the rest pass through), in processes the ops share (`_Warm`). Names are unique across ops, so a supervisor that
reruns the review without a variant that crashed its process (compare.runtime.supervisor) leaves out that one alone.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
from pathlib import Path

from compare.model.budget import BudgetUse, Cut, LeftOut
from compare.model.family_fit import NORMAL, family_fit
from compare.model.habits import MissingPackage
from compare.model.replay import NOT_REPLAYED, Pass, ReplayedOp
from compare.review import budget as budgets, mapping
from compare.review.kernels import changes
from compare.review.revisions import Repository
from compare.model.errors import UsageError
from compare.model.vocabulary import NUMERICS, TIMING


@dataclasses.dataclass(frozen=True)
class Compared:
    target: mapping.Target
    label: str                 # the variants are LABEL.base and LABEL.head
    report: object = None      # the compare Report (None: it could not run)
    error: str = ""            # why it could not run
    needs: tuple = ()          # compare.model.habits.MissingPackage: what its imports lack, where it could not run
    stopped: bool = False      # the time budget ran out while it was compared: `report` holds what finished, if any


def register(subparsers, more_options=()) -> None:
    """The `review` subcommand: BASE, HEAD, --repo, the comparison's options it passes on, and `more_options`
    (main's timing, IR and output options, each a function adding them to a parser). The defaults it shares with
    `compare` are read from compare's records (compare/comparison/plan.py), never restated."""
    from compare.comparison.plan import Options, Request
    d, o = Request(), Options()
    p = subparsers.add_parser("review", help="compare the ops of the Triton kernels changed between two git revisions")
    p.add_argument("base", metavar="BASE", help="the revision before the change (a commit, branch or tag)")
    p.add_argument("head", metavar="HEAD", help="the revision with the change")
    p.add_argument("--repo", default=d.repo, help="the reviewed git repository (default: the current directory)")
    p.add_argument("--mapping", metavar="FILE",
                   help="the reviewer's TOML with a [tool.kernel-ab.kernels] table mapping ops or kernels to families "
                        "(and calls); its lines come before the reviewed repository's (docs/review.md)")
    p.add_argument("--preset", help="shape preset of every family compared (default: on a GPU each family's GPU preset, the "
                   "sizes its op is used at; on the CPU its small default)")
    p.add_argument("--shape", help="one shape instead of a preset, in the family's form (`kernel-ab list`)")
    p.add_argument("--eps", type=float, help=f"eps for --shape (default {d.eps:g})")
    p.add_argument("--dtype", help="float32, float16, bfloat16, a comma list, or all (default: on a GPU "
                   f"{','.join(budgets.GPU_DTYPES)}, the dtype LLM kernels run in too; on the CPU "
                   f"{','.join(budgets.CPU_DTYPES)}, the interpreter's bfloat16 rounding not being the GPU's); "
                   "ops replayed from the library's tests run the dtypes their calls had")
    p.add_argument("--device", default=o.device, choices=("auto", "cuda", "cpu"), help="where kernels run")
    p.add_argument("--variant-timeout", type=float, default=o.variant_timeout, metavar="SECONDS",
                   help=f"a launch that has not returned after this long is stopped and reported "
                        f"(default {o.variant_timeout:g})")
    p.add_argument("--check", action="append", dest="checks",
                   help="run only this check (repeatable): numerics, backward, timing, ir (default all)")
    p.add_argument("--inputs", help="input kinds, comma list or all (default: the quick plan)")
    p.add_argument("--trials", type=int, default=d.trials, help=f"fresh-input trials per shape (default {d.trials})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"first seed of the trials (default {d.seed})")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help=f"the review's comparisons end this long after the command starts (default: on a GPU "
                        f"{budgets.GPU_S:g}, so that the review with its report fits a minute; on the CPU "
                        f"{budgets.CPU_S:g}: Triton's interpreter runs kernels hundreds of times slower, and a replay's "
                        "recording and its two plays may take 240 s each). Ops are "
                        "compared most changed first; the one running when the budget runs out is stopped and "
                        "reports what finished, the rest are listed as left out")
    p.add_argument("--op", action="append", dest="ops", metavar="NAME",
                   help="compare only this changed op (repeatable): its name as the review lists it, its callable, "
                        "or MODULE:NAME; the others are listed as not named")
    p.add_argument("--aa", action="store_true",
                   help="an A/A control: each changed op's BASE compared against BASE again (as LABEL.head), so "
                        "any difference reported is the measurement's own")
    p.set_defaults(variants=[], external=None, family=None)
    for options in more_options:
        options(p)


def _table(repo: Repository, commit: str, reviewer: str | None) -> dict[str, mapping.TableEntry]:
    files = repo.files(commit)
    text = repo.read([files["pyproject.toml"]]).get(files["pyproject.toml"]) if "pyproject.toml" in files else None
    try:
        table = mapping.read_table(text)
    except ValueError as exc:
        raise UsageError(f"{repo.top}: {exc}") from None
    return {**table, **(mapping.read_file(reviewer) if reviewer else {})}


def _preset(args, family, backend) -> str | None:
    """The preset an op is compared at: the one asked for; on a GPU, else, the sizes the family's op is used
    at (its `gpu_preset`), so no toy launch-bound shape is timed unless asked for; else the family's default."""
    if args.preset or args.shape or not backend.gpu:
        return args.preset
    return family.gpu_preset or None


def run(args, registry, backend) -> int:
    """The review's exit code."""
    from compare.runtime import run_context
    from compare.review import render
    from compare.review.replay import replayable
    clock = budgets.Budget(budgets.seconds(args.budget, backend.gpu), run_context.run_started())
    render.check_outputs(args)
    repo = Repository(args.repo)
    base, head = repo.commit(args.base, "BASE"), repo.commit(args.head, "HEAD")
    found = changes(repo, base, head)
    targets, unmapped, through = mapping.plan(found, _table(repo, head, args.mapping), registry.families)
    labels = budgets.labels([(t.module, t.callable) for t in targets])
    labelled = budgets.most_changed_first(list(zip(targets, labels)), lambda t: t[0].what)
    to_replay = replayable(found, unmapped)
    names = {**{t.key: budgets.names_of(t.module, t.callable, label) for t, label in labelled},
             **{op.key: budgets.names_of(op.module, op.name, op.label) for op in to_replay}}
    for judged in through:   # --op naming an op judged through others compares those
        module, name = judged.op.split(":", 1)
        for key in (k for k in judged.through if k in names):
            names[key] |= budgets.names_of(module, name, name)
    wanted = budgets.chosen(args.ops, names)
    # the review's own files, then each op's folder in --out too, all checked before any comparison
    render.check_outputs(args, [label for _, label in labelled], timed=not args.checks or TIMING in args.checks)
    with _warm(str(repo.top)) as warm:
        work = _Work(args, registry, backend, clock, str(repo.top), warm)
        for target, label in labelled:
            work.compare(target, label, base, head, chosen=target.key in wanted)
        replayed = work.replay(repo, base, head if not args.aa else base, [op for op in to_replay if op.key in wanted])
    gone = {r.op for r in replayed} | {l.op for l in work.left}
    review = render.Review(args.base, args.head, base, head, found, tuple(work.done),
                           tuple(u for u in unmapped if u.kernel not in gone), control=args.aa,
                           replayed=tuple(replayed), left_out=tuple(work.left), budget=work.use(replayed),
                           dtypes_left_out=tuple(dict.fromkeys(work.dtypes_left_out)), judged_through=tuple(through))
    return render.finish(review, args)


@dataclasses.dataclass(frozen=True)
class _Warm:
    """What the review's comparisons share for its length, so the library is imported once per revision in
    each kind of process rather than once per op: the --variant loader (loading.kept_kernels), the timing
    processes (timing_run.TimingWorkers, one a dtype) and the compile worker (ir.CompileCache(warm=True)).
    A process an op ends is replaced for the next op."""
    kernels: object
    timing: object
    ir: object


@contextlib.contextmanager
def _warm(top: str):
    from compare.checks.ir import CompileCache
    from compare.comparison import loading
    from compare.comparison.timing_run import TimingWorkers
    timing, ir = TimingWorkers(), CompileCache(warm=True)
    try:
        with loading.kept_kernels(top) as kernels:
            yield _Warm(kernels, timing, ir)
    finally:
        timing.close()
        ir.close()


class _Work:
    """The review's comparisons in order, each started while the time budget lasts, in `warm`'s processes."""

    def __init__(self, args, registry, backend, clock: budgets.Budget, top: str, warm: _Warm | None = None):
        self.args, self.registry, self.backend, self.clock, self.top = args, registry, backend, clock, top
        self.warm = warm
        self.done: list[Compared] = []
        self.left: list[LeftOut] = []
        self.misfits: list = []             # (target, label, why): a family matched by name does not fit
        self.dtypes_left_out: list = []

    def _say(self, text: str) -> None:
        if not self.args.quiet:
            print(f"kernel-ab: review: {text}", file=sys.stderr, flush=True)

    def compare(self, target: mapping.Target, label: str, base: str, head: str, chosen: bool = True) -> None:
        """One op through compare's pipeline in its family, or left out (not `chosen` by --op, or no time left)."""
        from compare.command_line.arguments import as_compare
        from compare.model import gates
        from compare.runtime import supervisor
        from compare.runtime.deadline import deadline
        from compare.review.render import changed_text
        if not chosen or self.clock.spent():
            self.left.append(LeftOut(target.key, label, Cut.TIME_BUDGET if chosen else Cut.NOT_NAMED))
            return
        family = self.registry.family(target.family)
        dtype, dropped = budgets.dtypes(self.args.dtype, self.backend.gpu, family)
        self.dtypes_left_out += [dropped] if dropped else []
        self._say(f"{label} (family {target.family}; changed: {changed_text(target.what)}); "
                  f"{max(self.clock.left(), 0):.0f} s of the {self.clock.seconds:g} s budget left")
        specs = (target.variant(f"{label}.base", base),
                 target.variant(f"{label}.head", base if self.args.aa else head))
        # each op's request as `compare` would resolve it; the review writes the files itself
        request, _ = as_compare(self.args, external=specs, repo=self.top, family=target.family, variants=[],
                                preset=_preset(self.args, family, self.backend), dtype=dtype)
        fit = None   # whether a family matched by parameter names alone fits the op: from its numerics
        try:
            with deadline(self.clock.left(), f"the review's time budget ({self.clock.seconds:g} s) ran out"):
                if target.by_names and NUMERICS not in request.checks:
                    fit = self._fit(target, label, request)
                done = None if fit is not None and not fit.fits else _compare(
                    target, label, request, self.registry, self.backend, self.args.quiet, self.warm,
                    enough=_misfit(f"{label}.base") if target.by_names else None)
        except supervisor.OutOfTime as stop:   # before its checks began: loading, compiling
            done = Compared(target, label, None, str(stop), stopped=True)
        if fit is None and target.by_names and done.report is not None:   # done is None only for a misfit
            fit = family_fit(done.report, f"{label}.base")
        if done is not None and done.stopped:
            self.clock.ran_out = True
            self._say(f"the time budget ran out while comparing {label}: what finished is reported")
        if fit is not None and not fit.fits:
            self.misfits.append((target, label, f"family {target.family} does not fit it: {fit.why}"))
            return
        if done.report is not None:
            a = self.args
            done = dataclasses.replace(done, report=gates.decided(done.report, a.fail_on_numerics, a.fail_if_slower,
                                                                  a.accept_unjudged))
        self.done.append(done)

    def _fit(self, target: mapping.Target, label: str, request):
        """Whether the family matched by parameter names alone fits the op where the checks asked for leave out
        numerics (`--check timing`, `--aa`): BASE's forward on one trial of the normal input, against the
        family's reference, before the family's timing or code is taken for the op's (FamilyFit)."""
        probe = dataclasses.replace(request, checks=(NUMERICS,), inputs=NORMAL, trials=1)
        self._say(f"{label}: checking that family {target.family} fits it (BASE's forward on a normal input)")
        found = _compare(target, label, probe, self.registry, self.backend, True, self.warm,
                         enough=_misfit(f"{label}.base"))
        return family_fit(found.report, f"{label}.base") if found.report is not None else None

    def replay(self, repo, base: str, head: str, ops: list) -> list:
        """Each changed op no family fits (and each misfit), replayed on its library's tests' calls while the time
        budget lasts (compare/review/replay.py); those after it are left out."""
        from compare.review.replay import OpToReplay, Replayer
        ops = budgets.most_changed_first(ops + [
            OpToReplay(t.key, label, t.path, t.module, t.callable, notes=(why,), what=t.what)
            for t, label, why in self.misfits], lambda op: op.what)
        if not ops:
            return []
        if self.clock.spent():
            self.left += [LeftOut(op.key, op.label, Cut.TIME_BUDGET) for op in ops]
            return []
        self._say(f"replaying {len(ops)} op{'s' if len(ops) != 1 else ''} no family fits "
                  f"({', '.join(op.label for op in ops)}): recording their calls from the library's tests, then "
                  f"running them at both revisions; {self.clock.left():.0f} s of the {self.clock.seconds:g} s budget left")
        replayer = Replayer(repo, base, head, self.backend.device, budget=self.clock, say=self._say)
        with contextlib.closing(replayer):
            return [self._timed(r, op, replayer, base, head) for r, op in zip(replayer.replay(ops), ops)]

    def _timed(self, replayed, op, replayer, base: str, head: str):
        """`replayed` timed and compiled on its recorded calls (`_replay_timed`) while the budget lasts; a
        comparison the budget stops keeps what finished."""
        from compare.runtime import supervisor
        from compare.runtime.deadline import deadline
        if not self.clock.spent():
            try:
                with deadline(self.clock.left(), f"the review's time budget ({self.clock.seconds:g} s) ran out"):
                    return _replay_timed(self.args, self.backend, replayed, op, replayer.recordings.get(op.key),
                                         replayer.work, base, head)
            except supervisor.OutOfTime:
                pass
        return dataclasses.replace(replayed, timed="timing and compiled code not run: the time budget ran out")

    def use(self, replayed) -> BudgetUse:
        """How the budget went, said once (compare.model.budget.BudgetUse)."""
        stopped = sum(c.stopped for c in self.done) + sum(r.stopped for r in replayed)
        late = sum(1 for l in self.left if l.cut == Cut.TIME_BUDGET)
        return BudgetUse.made(self.clock.seconds, self.clock.used(), len(self.done) + len(replayed), late + stopped)


def _replay_timed(args, backend, replayed: ReplayedOp, op, recording: Path, work: Path, base: str,
                  head: str) -> ReplayedOp:
    """`replayed` with its timing and compiled code (`report`) and which call was timed (`timed`), or why not: its
    recorded calls made a family (variants/recorded.py) in which BASE and HEAD are compared as an op is. On a GPU
    the call moving the most bytes is timed, grown along its leading dimension (variants/recorded_growth.py); on
    the CPU the smallest call's kernels are compiled for sm_90 (timing skipped with compare's reason)."""
    from compare.command_line.arguments import as_compare
    from compare.command_line.recorded import RECORDED_CHECKS, free_memory
    from compare.model import gates
    from variants import discovery
    from variants.recorded_build import NotTimeable, write_family
    from variants.spec import Spec
    checks = [c for c in (args.checks or RECORDED_CHECKS) if c in RECORDED_CHECKS]
    if replayed.verdict in NOT_REPLAYED or not checks:
        return replayed
    try:
        built = write_family(recording, f"{op.module}:{op.name}", work / "families", op.label, free_memory(backend),
                             avoid=_not_run_forward(replayed))
    except NotTimeable as exc:
        return dataclasses.replace(replayed, timed=f"not timed: {exc}")
    preset = "timed" if backend.gpu else "smallest"
    specs = tuple(Spec.made(f"{op.label}.{side}", op.path, op.name, rev, built.call)
                  for side, rev in (("base", base), ("head", head)))
    request, _ = as_compare(args, external=specs, family=built.name, variants=[], preset=preset, shape=None,
                            dtype=built.dtypes[preset], checks=checks, inputs="recorded", input_kind="recorded")
    folders = [*(args.family_paths or ()), str(built.folder)]
    with discovery.configured(folders, args.repo):   # the timing processes find the family too
        done = _compare(None, op.label, request, discovery.registry(), backend, args.quiet)
    said = built.timed if backend.gpu else f"{built.smallest}, its kernels compiled for {request.target} offline " \
                                           "(timing needs a GPU)"
    if done.report is None:
        return dataclasses.replace(replayed, timed=f"its timing and compiled code could not run: {done.error}")
    report = gates.decided(done.report, False, args.fail_if_slower, args.accept_unjudged)
    return dataclasses.replace(replayed, report=report, timed=said)


def _not_run_forward(replayed: ReplayedOp) -> dict[int, str]:
    """The calls whose forward raised at a side when replayed: neither timed nor compiled, since one side
    would have no kernels to compare there."""
    return {c.index: f"its forward raises at {f.side} ({f.error})"
            for c in replayed.calls for f in c.failures if f.stage == Pass.FORWARD}


def _misfit(base: str):
    """For an op matched to its family by parameter names alone: after a check, why the rest is not worth
    running (BASE does not fit the family: the op is replayed instead), or None."""
    def enough(found) -> str | None:
        fit = family_fit(found, base)
        return None if fit.fits else f"not run: the family does not fit the op ({fit.why})"
    return enough


def _compare(target, label: str, request, registry, backend, quiet: bool, warm: _Warm | None = None,
             enough=None) -> Compared:
    """One op's comparison (in `warm`'s processes, where given): its report; none, and why, with the packages
    its imports lack, when neither revision's code could be loaded; what finished, `stopped`, when the time
    budget ran out during its checks. A bad --preset or --shape for its family is the user's: UsageError."""
    from compare.comparison import pipeline
    from compare.runtime import run_context, supervisor
    from compare.runtime.progress import reporter
    with contextlib.ExitStack() as stack:
        try:   # only the planning's own failures are the op's: an error of its checks ends the review as before
            the_plan, failed = stack.enter_context(pipeline.planned(
                request, registry, excluded=run_context.culprits(), backend=backend,
                no_timing=run_context.timing_left_out(), kernels=warm.kernels if warm else None))
        except (pipeline.UnloadableSpec, pipeline.NothingToCompare) as exc:
            return Compared(target, label, None, str(exc), tuple(dict.fromkeys(
                MissingPackage.of(i.needs) for i in getattr(exc, "failed", ()) if i.needs)))
        try:
            with reporter(pipeline.count_steps(the_plan, backend), not quiet) as step:
                return Compared(target, label, pipeline.execute(
                    the_plan, backend, step, failed=failed, ir_cache=warm.ir if warm else None,
                    timing_workers=warm.timing if warm else None, enough=enough))
        except pipeline.Interrupted as exc:
            if not isinstance(exc.stop, supervisor.OutOfTime):
                raise
            return Compared(target, label, exc.report, str(exc.stop), stopped=True)
