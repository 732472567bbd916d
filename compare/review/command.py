"""`review BASE HEAD`: the changed kernels' ops compared at both revisions, as `compare` compares them.

Each op (or kernel) becomes two --variant specs, `OP.base=git:BASE:PATH::OP` and `OP.head=git:HEAD:...`,
run through compare's pipeline in its family with the family's default plan (--preset, --shape, --check
and the rest pass through). Names are unique across ops, so a supervisor that reruns the review without
a variant that crashed its process (compare.runtime.supervisor) leaves out that one alone.
"""
from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from compare.model.family_fit import family_fit
from compare.model.habits import MissingPackage
from compare.review import mapping
from compare.review.kernels import changes
from compare.review.revisions import Repository
from compare.model.errors import UsageError


@dataclasses.dataclass(frozen=True)
class Compared:
    target: mapping.Target
    label: str                 # the variants are LABEL.base and LABEL.head
    report: object = None      # the compare Report (None: it could not run)
    error: str = ""            # why it could not run
    needs: tuple = ()          # compare.model.habits.MissingPackage: what its imports lack, where it could not run


def register(subparsers, more_options=()) -> None:
    """The `review` subcommand: BASE, HEAD, --repo, the comparison's options it passes on, and `more_options`
    (main's timing, IR and output options, each a function adding them to a parser)."""
    p = subparsers.add_parser("review", help="compare the ops of the Triton kernels changed between two git revisions")
    p.add_argument("base", metavar="BASE", help="the revision before the change (a commit, branch or tag)")
    p.add_argument("head", metavar="HEAD", help="the revision with the change")
    p.add_argument("--repo", default=".", help="the reviewed git repository (default: the current directory)")
    p.add_argument("--mapping", metavar="FILE",
                   help="the reviewer's TOML with a [tool.kernel-ab.kernels] table mapping ops or kernels to families "
                        "(and calls); its lines come before the reviewed repository's (docs/review.md)")
    p.add_argument("--preset", help="shape preset of every family compared (default: on a GPU each family's GPU preset, the "
                   "sizes its op is used at; on the CPU its small default)")
    p.add_argument("--shape", help="one shape instead of a preset, in the family's form (`kernel-ab list`)")
    p.add_argument("--eps", type=float, help="eps for --shape (default 1e-6)")
    p.add_argument("--dtype", default="float32", help="float32, float16, bfloat16, a comma list, or all")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"), help="where kernels run")
    p.add_argument("--variant-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="a launch that has not returned after this long is stopped and reported (default 300)")
    p.add_argument("--check", action="append", dest="checks",
                   help="run only this check (repeatable): numerics, backward, timing, ir (default all)")
    p.add_argument("--inputs", help="input kinds, comma list or all (default: the quick plan)")
    p.add_argument("--trials", type=int, default=3, help="fresh-input trials per shape (default 3)")
    p.add_argument("--seed", type=int, default=0, help="first seed of the trials (default 0)")
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


def _labels(targets: list[mapping.Target]) -> list[str]:
    labels = []
    for t in targets:
        label = t.callable.removesuffix(".apply")
        if label in labels:
            label = f"{t.module}.{label}"
        labels.append(label)
    return labels


def _preset(args, family, backend) -> str | None:
    """The preset an op is compared at: the one asked for; on a GPU, else, the sizes the family's op is used
    at (its `gpu_preset`), so no toy launch-bound shape is timed unless asked for; else the family's default."""
    if args.preset or args.shape or not backend.gpu:
        return args.preset
    return family.gpu_preset or None


def run(args, registry, backend) -> int:
    """The review's exit code."""
    from compare.command_line.arguments import as_compare
    from compare.model import gates
    from compare.runtime import supervisor
    from compare.review import render
    render.check_outputs(args)
    repo = Repository(args.repo)
    base, head = repo.commit(args.base, "BASE"), repo.commit(args.head, "HEAD")
    found = changes(repo, base, head)
    targets, unmapped = mapping.plan(found, _table(repo, head, args.mapping), registry.families)
    labels = _labels(targets)
    # the review's own files, then each op's folder in --out too, all checked before any comparison
    render.check_outputs(args, labels, timed=not args.checks or "timing" in args.checks)
    done, misfits = [], []
    for target, label in zip(targets, labels):
        specs = (target.spec(f"{label}.base", base), target.spec(f"{label}.head", base if args.aa else head))
        # each op's request as `compare` would resolve it; the review writes the files itself
        request, _ = as_compare(args, external=specs, repo=str(repo.top), family=target.family, variants=[],
                                preset=_preset(args, registry.family(target.family), backend))
        report, error, needs = _compare(request, registry, backend, args.quiet, supervisor.excluded())
        fit = family_fit(report, f"{label}.base") if report is not None and target.by_names else None
        if fit is not None and not fit.fits:
            misfits.append((target, label, f"family {target.family} does not fit it: {fit.why}"))
            continue
        if report is not None:
            report = dataclasses.replace(report, gates=gates.decide(report, args.fail_on_numerics,
                                                                    args.fail_if_slower, args.accept_unjudged))
        done.append(Compared(target, label, report, error, needs))
    replayed = _replayed(repo, base, head if not args.aa else base, found, unmapped, misfits, backend, args.quiet)
    left = tuple(u for u in unmapped if u.kernel not in {r.op for r in replayed})
    review = render.Review(args.base, args.head, base, head, found, tuple(done), left, control=args.aa,
                           replayed=tuple(replayed))
    return render.finish(review, args)


def _compare(request, registry, backend, quiet: bool, excluded) -> tuple[object, str, tuple]:
    """(report, "", ()) of one op's comparison, or (None, why, the packages its imports lack) when neither
    revision's code could be loaded. A bad --preset or --shape for its family is the user's: UsageError."""
    from compare.comparison import pipeline
    from compare.runtime import supervisor
    from compare.runtime.progress import reporter
    with contextlib.ExitStack() as stack:
        try:   # only the planning's own failures are the op's: an error of its checks ends the review as before
            the_plan, failed = stack.enter_context(pipeline.planned(
                request, registry, excluded=excluded, backend=backend, no_timing=supervisor.timing_left_out()))
        except (pipeline.UnloadableSpec, pipeline.NothingToCompare) as exc:
            return None, str(exc), tuple(dict.fromkeys(MissingPackage.of(i.needs) for i in getattr(exc, "failed", ())
                                                       if i.needs))
        with reporter(pipeline.count_steps(the_plan, backend), not quiet) as step:
            return pipeline.execute(the_plan, backend, step, failed=failed), "", ()


def _replayed(repo, base: str, head: str, found, unmapped, misfits, backend, quiet: bool) -> list:
    """Each changed op no family fits, replayed on the calls its library's tests make (compare/review/replay.py);
    `misfits`: (target, label, why) of ops a family was matched to by name but does not fit."""
    import sys
    from compare.review.replay import OpToReplay, Replayer, replayable
    ops = replayable(found, unmapped) + [
        OpToReplay(f"{t.module}:{t.callable.split('.')[0]}", label, t.path, t.module, t.callable, notes=(why,))
        for t, label, why in misfits]
    if not ops:
        return []
    if not quiet:
        print(f"kernel-ab: replaying {len(ops)} op{'s' if len(ops) != 1 else ''} no family fits "
              f"({', '.join(op.label for op in ops)}): recording their calls from the library's tests, then "
              "running them at both revisions", file=sys.stderr)
    replayer = Replayer(repo, base, head, backend.device)
    try:
        return replayer.replay(ops)
    finally:
        replayer.close()
