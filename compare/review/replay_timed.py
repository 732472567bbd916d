"""A replayed op's time and compiled code: its recorded calls made a family (variants/recorded.py), in which
its BASE and HEAD are compared as compare compares an op (checks timing and ir; on the CPU timing is skipped
with compare's reason). On a GPU the call moving the most bytes is timed, grown along its leading dimension
(variants/recorded_growth.py); on the CPU the smallest call's kernels are compiled for sm_90."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from compare.model.replay import NOT_REPLAYED, Pass, ReplayedOp
from compare.model.vocabulary import IR, TIMING

CHECKS = (TIMING, IR)


def timed(args, backend, compare, replayed: ReplayedOp, op, recording: Path, work: Path, base: str,
          head: str) -> ReplayedOp:
    """`replayed` with its timing and compiled code (`report`) and which call was timed (`timed`), or why not.
    `compare(request, registry)` runs one comparison: (report, error, needs) as review's own."""
    from compare.command_line.arguments import as_compare
    from compare.model import gates
    from variants import discovery
    from variants.recorded_build import NotTimeable, write_family
    from variants.spec import Spec
    checks = [c for c in (args.checks or CHECKS) if c in CHECKS]
    if replayed.verdict in NOT_REPLAYED or not checks:
        return replayed
    free = None
    if backend.gpu:
        from compare.comparison.memory import device_available
        free = device_available()
    try:
        built = write_family(recording, f"{op.module}:{op.name}", work / "families", op.label, free,
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
        report, error, _ = compare(request, discovery.registry())
    said = built.timed if backend.gpu else f"{built.smallest}, its kernels compiled for {request.target} offline " \
                                           "(timing needs a GPU)"
    if report is None:
        return dataclasses.replace(replayed, timed=f"its timing and compiled code could not run: {error}")
    report = gates.decided(report, False, args.fail_if_slower, args.accept_unjudged)
    return dataclasses.replace(replayed, report=report, timed=said)



def _not_run_forward(replayed: ReplayedOp) -> dict[int, str]:
    """The calls whose forward raised at a side when replayed: neither timed nor compiled, since one side
    would have no kernels to compare there."""
    return {c.index: f"its forward raises at {f.side} ({f.error})"
            for c in replayed.calls for f in c.failures if f.stage == Pass.FORWARD}
