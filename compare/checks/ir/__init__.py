"""The IR comparison: compile every variant at every stage, normalize, summarize and diff.

`run(...)` turns variants and one specialization (shape, dtype) into an `IRSection` of the result
model: per variant its resource usage and per-stage structural summaries; per pair (the baseline
against each other variant) the normalized diff of every stage next to the raw diff's length.
"""
from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import NamedTuple

from compare.checks.check import Findings
from compare.model import errors
from compare.checks.ir.compile import (STAGES, CompileCache, Compiled, TargetError, capability, describe, launcher_ref,
                                recorded_launch, specialization)
from compare.checks.ir import ops as op_ir
from compare.model.loopmatch import pair_matches
from compare.checks.ir.diff import raw_changed_lines, raw_diff_length, unified
from compare.checks.ir.normalize import clean, rename
from compare.checks.ir.summarize import summarize
from compare.model.results_ir import NOT_RUN
from compare.model.skips import Skip
from compare.model.states import IRStatus
from compare.model.results import IRPair, IRPassNote, IRSection, IRStage, IRStageDiff, IRVariant, PassStatus

__all__ = ["STAGES", "CompileCache", "TargetError", "capability", "check_stages", "run", "run_passes", "DEFAULT_TARGET"]
DEFAULT_TARGET = "sm_90"
DIFF_LINE_CAP = 300   # lines of each stage's diff kept in the report unless `full`


def check_stages(stages) -> tuple[str, ...]:
    """The stages asked for, in pipeline order (ValueError naming the known ones for an unknown stage)."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}; known stages: {', '.join(STAGES)}")
    return tuple(s for s in STAGES if s in stages) or STAGES


_LOOP_OPENER = re.compile(r"\bscf\.(for|while)\b\s*(?:%([A-Za-z_][\w]*?)(?:_\d+)?\b)?")
_ITER_ARGS = re.compile(r"iter_args\((.*?)\)\s*->")
_SOURCE_NAME = re.compile(r"^%([A-Za-z_]\w*?)(?:_\d+)?$")


def _carried_names(raw: str, opener: re.Match) -> list[str]:
    """The source's names of the values a `scf.for` carries (`iter_args(%X_ptr_14 = ...)`: X_ptr), in order;
    "" for a value Triton left unnamed (`%12`)."""
    m = _ITER_ARGS.search(raw[opener.start():].split("\n", 1)[0])
    if m is None:
        return []
    names = [part.split("=", 1)[0].strip() for part in m.group(1).split(", %")]
    return [(found.group(1) if (found := _SOURCE_NAME.match("%" + n.lstrip("%"))) else "") for n in names]


def _named_loops(stage: IRStage, raw: str) -> IRStage:
    """TTIR/TTGIR keep the source's names: give each loop its induction variable (`for channel in ...`
    opens `scf.for %channel`) and its carried values theirs, matching loops to the raw listing's loop
    openers in order. Renaming in normalization drops these names; they tell a reader which loop of the
    source a loop is, and which pointers it advances."""
    if stage.stage not in ("ttir", "ttgir"):
        return stage
    openers = [m for m in _LOOP_OPENER.finditer(raw) if not raw[max(0, m.start() - 1):m.start()].isalnum()]
    loops = sorted(stage.loops, key=lambda l: l.first_line)
    if len(openers) != len(loops):
        return stage
    named = []
    for loop, m in zip(loops, openers):
        names = _carried_names(raw, m) if m.group(1) == "for" else []
        carried = loop.carried if len(names) != len(loop.carried) else tuple(
            dataclasses.replace(c, name=n) for c, n in zip(loop.carried, names))
        named.append(dataclasses.replace(loop, variable=(m.group(2) if m.group(1) == "for" else "") or "",
                                         carried=carried))
    by_path = {l.path: l for l in named}
    return dataclasses.replace(stage, loops=tuple(by_path[l.path] for l in stage.loops))


def _variant(c, stages, full: bool) -> IRVariant:
    if not c.ok:
        return IRVariant(c.variant, IRStatus.FAILED, c.error)
    try:
        return _summarized(c, stages, full)
    except Exception as exc:  # noqa: BLE001 - a listing the summary cannot read fails this variant alone
        return IRVariant(c.variant, IRStatus.FAILED, f"its compiled code could not be summarized: {errors.summarize(exc)}")


def _summarized(c, stages, full: bool) -> IRVariant:
    summaries = []
    for stage in stages:
        lines = rename(stage, clean(stage, c.stages[stage], c.kernel_name))
        s = _named_loops(summarize(stage, lines), c.stages[stage])
        summaries.append(dataclasses.replace(s, listing="\n".join(lines)) if full else s)
    r, launched = c.resources, c.launched
    return IRVariant(c.variant, IRStatus.OK, "", r.get("registers", -1), r.get("spill_bytes", -1), r.get("stack_bytes", -1),
                     r.get("shared_bytes", -1), launched.get("registers", -1), launched.get("spills", -1),
                     tuple(summaries))


def _cut(text: str, full: bool) -> str:
    lines = text.splitlines()
    if full or len(lines) <= DIFF_LINE_CAP:
        return text
    return "\n".join(lines[:DIFF_LINE_CAP] + [f"... {len(lines) - DIFF_LINE_CAP} more diff lines cut (--full shows all)"])


def _pair(a, b, stages, full: bool) -> IRPair:
    diffs = []
    for stage in stages:
        d = unified(stage, clean(stage, a.stages[stage], a.kernel_name), clean(stage, b.stages[stage], b.kernel_name),
                    a.variant, b.variant)
        diffs.append(IRStageDiff(stage, _cut(d.text, full), d.changed_lines,
                                 raw_changed_lines(a.stages[stage], b.stages[stage]),
                                 len(d.text.splitlines()), raw_diff_length(a.stages[stage], b.stages[stage])))
    return IRPair(a.variant, b.variant, tuple(diffs))


def run(family, variants, shape, dtype: str, target: str = DEFAULT_TARGET, gpu: bool = False, stages=STAGES,
        full: bool = False, cache: CompileCache | None = None, step=lambda _: None, kernel: str = "forward") -> IRSection:
    """Compile, summarize and diff the `kernel` ("forward" or "backward") each of `variants` runs (the first
    is the baseline), for one shape and dtype, as `family`'s launcher runs it. On a GPU (`gpu=True`) these
    are the kernels Triton launched there and `target` is ignored; otherwise they are compiled offline for
    `target`. Op variants contribute the kernels they launch (compare.checks.ir.ops), named OP:KERNEL and paired
    by kernel name with the first op's."""
    stages = check_stages(stages)
    cache = cache or CompileCache()
    triton_variants = [v for v in variants if v.kind == "triton"]
    op_variants = [v for v in variants if v.kind == "op"]
    step(f"IR: compiling the {kernel} kernels of {len(triton_variants)} variants for {shape.label}, {dtype}"
         + ("" if gpu else f", {target} (offline)"))
    entries = [compile_entry(family, v, kernel) for v in triton_variants]
    kernels = _compilable(entries)
    done = iter(cache.compile(family, kernels, shape, dtype, target, launched=gpu, role=kernel) if kernels else ())
    compiled = [next(done) if isinstance(e, ToCompile) else e for e in entries]
    spec = _specializations(family, kernel, shape, dtype, kernels)
    if gpu and spec:
        spec = f"the JIT's own for the launcher's arguments (offline it would assume: {spec})"
    skipped = [v.name for v in variants if v.kind not in ("triton", "op")]
    note = ("kernels read back from Triton's JIT cache after one launch of the family launcher on this GPU"
            if gpu else f"compiled offline for {target} (no GPU needed); pointers assumed 16-byte aligned")
    if skipped:
        note += f"; not Triton kernels, no IR: {', '.join(skipped)}"
    rows = [_variant(c, stages, full) for c in compiled]
    ok = [c for c, row in zip(compiled, rows) if row.status == "ok"]
    pairs: tuple = ()
    if ok and ok[0] is compiled[0]:
        for c in ok[1:]:
            try:
                pairs += (_pair(ok[0], c, stages, full),)
            except Exception as exc:  # noqa: BLE001 - one diff that fails must not take the section down
                note += f"; the diff of {c.variant} against {ok[0].variant} failed: {errors.summarize(exc)}"
    matches: tuple = ()
    notes: tuple = ()
    if op_variants:
        step(f"IR: running {len(op_variants)} ops to find the Triton kernels they launch")
        found = op_ir.compile_ops(op_variants, family, shape, dtype, capability(target), gpu, cache.warm)
        for v in op_variants:
            if v.name in found.problems:
                rows.append(IRVariant(v.name, NOT_RUN, found.problems[v.name]))
            rows.extend(_variant(c, stages, full) for _, c in found.kernels.get(v.name, ()))
        with_kernels = [v.name for v in op_variants if v.name in found.kernels]
        for other in with_kernels[1:]:
            these, op_pairs = op_ir.match(found, with_kernels[0], other, lambda a, b: _pair(a, b, stages, full))
            matches += these
            pairs += op_pairs
        notes = found.notes
        note += ("; op-level variants: the Triton kernels each launched in one forward and one backward pass, "
                 + ("as launched on this GPU (after one unrecorded pass)" if gpu else
                    "compiled offline for the argument types they were launched with under the interpreter")
                 + f", listed as OP{op_ir.SEPARATOR}KERNEL and paired by kernel name")
    summaries = {r.variant: r for r in rows}
    pairs = tuple(dataclasses.replace(p, loops=pair_matches(summaries[p.a], summaries[p.b], stages)) for p in pairs)
    return IRSection("launched" if gpu else "offline", target if not gpu else "the GPU's", shape.label, dtype, spec,
                     note, stages, tuple(rows), pairs, matches, kernel, notes)


def run_passes(family, chosen, shape, dtype: str, target: str = DEFAULT_TARGET, gpu: bool = False, stages=STAGES,
               full: bool = False, cache: CompileCache | None = None, step=lambda _: None) -> Findings:
    """The IR's findings: a section (`run`) per kernel (forward, backward) the Triton variants do not all share,
    and the skipped reasons; a kernel they all share is identical code, said so. Every pass is compiled in one
    worker. An error of the IR step costs its section (a skipped line), never the report."""
    triton = [v for v in chosen if v.kind == "triton"]
    ops = [v for v in chosen if v.kind == "op"]
    if not triton and not ops:
        return Findings(skipped=(Skip("ir", "none of the variants is a Triton kernel or an op that launches them"),))
    skipped, passes, notes = [], [], []
    for kernel in ("forward", "backward") if family.grads and triton else ("forward",) if triton else ():
        found = [_kernel_or_own(family, v, kernel) for v in triton]
        if any(k is None for k, _ in found):
            notes.append(IRPassNote(kernel, PassStatus.NOT_COMPARED, why=f"a variant has no {kernel} Triton kernel"))
            continue
        shared = len({(id(k), launcher) for k, launcher in found}) == 1
        if shared and len(triton) > 1:
            fn = getattr(found[0][0], "fn", found[0][0])
            skipped.append(Skip("ir", f"every variant runs the same {kernel} kernel ({fn.__module__}.{fn.__name__}): "
                                "identical code, not compiled", kernel))
            notes.append(IRPassNote(kernel, PassStatus.SHARED, why=skipped[-1].why))
        elif not shared or kernel in triton[0].own_kernels:
            passes.append((kernel, [v for v in chosen if v.kind != "op" or not passes]))   # ops join the first
    if ops and not passes:
        passes.append(("forward", ops))
    cache = cache or CompileCache()
    sections = []
    if len(passes) > 1:
        step(f"IR: compiling the {' and '.join(k for k, _ in passes)} kernels of {len(triton)} variants for "
             f"{shape.label}, {dtype}" + ("" if gpu else f", {target} (offline)"))
        with contextlib.suppress(Exception):   # each pass's `run` below meets the same error and says it
            jobs = [(kernel, _compilable([compile_entry(family, v, kernel) for v in variants if v.kind == "triton"]))
                    for kernel, variants in passes]
            cache.compile_passes(family, jobs, shape, dtype, target, launched=gpu)
    for kernel, variants in passes:
        why = ""
        try:
            sections.append(run(family, variants, shape, dtype, target, gpu, stages, full, cache, step, kernel))
        except RuntimeError as exc:
            why = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bug of the IR step costs its section, not the report
            why = f"the IR step failed: {errors.summarize(exc)}"
        if why:
            skipped.append(Skip("ir", why, kernel))
            notes.append(IRPassNote(kernel, PassStatus.NOT_COMPARED, why=why))
    if sections and notes:   # what no section compares, told once: by the first section
        sections[0] = dataclasses.replace(sections[0], passes=sections[0].passes + tuple(notes))
    return Findings(ir=sections[0] if sections else None, ir_kernels=tuple(sections[1:]), skipped=tuple(skipped))


def _kernel_or_own(family, variant, kernel: str) -> tuple:
    """kernel_of, or (a kernel of its own, None) where asking raised (`run` reports why, as the variant's row)."""
    try:
        return kernel_of(family, variant, kernel)
    except Exception:  # noqa: BLE001 - reported by run, for this variant alone
        return object(), None


def kernel_of(family, variant, kernel: str) -> tuple:
    """(the @triton.jit kernel, its launcher: None for the family's) a Triton variant runs for `kernel`
    (forward or backward)."""
    if kernel == "forward":
        return family.forward_kernel_of(variant), variant.forward_launcher
    return family.backward_kernel_of(variant), family.backward_launch_of(variant)


class ToCompile(NamedTuple):
    """One variant's kernel to compile: the variant's name, the kernel, its import roots, its launcher's ref."""

    name: str
    kernel: object
    import_roots: tuple
    launcher: str


def compile_entry(family, variant, kernel: str) -> ToCompile | Compiled:
    """What to compile of one variant's `kernel` pass, or a failed Compiled saying why it cannot be."""
    try:
        fn, launcher = kernel_of(family, variant, kernel)
        return ToCompile(variant.name, fn, variant.import_roots, launcher_ref(family, launcher) if launcher else "")
    except Exception as exc:  # noqa: BLE001 - reported as this variant's failure, the others still compiled
        why = f"the IR step could not find its {kernel} kernel and launcher: {errors.summarize(exc)}"
        return Compiled(variant.name, False, why, "", {}, {}, {})


def _compilable(entries: list) -> list:
    """The entries (`compile_entry`) that are kernels to compile, not failures."""
    return [e for e in entries if isinstance(e, ToCompile)]


def _specializations(family, kernel: str, shape, dtype: str, kernels) -> str:
    """The argument types and constants the kernels were compiled for: the first's, then each other's that
    differs (a variant with a launcher of its own), as `NAME: ...`."""
    lines: dict[str, list[str]] = {}
    for name, fn, _, launcher in kernels:
        try:
            args, kwargs = recorded_launch(family, kernel, shape, dtype, launcher)
            lines.setdefault(describe(specialization(fn, args, kwargs)), []).append(name)
        except Exception:  # noqa: BLE001 - that variant's row says why it did not compile
            continue
    if not lines:
        return ""
    first, *others = lines
    return "; ".join([first] + [f"{', '.join(lines[o])}: {o}" for o in others])
