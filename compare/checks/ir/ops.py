"""The compiled code of op-level variants: the kernels each op launched, paired by kernel name. Each op runs
forward, then backward as timing runs it (autograd through a forward made first, whose launches count as the
forward's), under `LaunchRecorder` (on a GPU each pass once unrecorded first: JIT compiles and autotuning done).
Kernels pair by name: "identical" when every stage's normalized listing and the grid agree, else "changed";
"only in" one op; "failed" when it did not compile; a backward that fails leaves its kernels "not found"."""
from __future__ import annotations

import contextlib
import dataclasses
import os

from compare.runtime import supervisor
from compare.checks.harness import OpPass
from compare.checks.ir.compile import Compiled, kernel_spec, run_worker
from compare.checks.ir.launches import Launch, LaunchRecorder
from compare.model.results import IRKernelMatch, IRPassNote, PassStatus
from compare.model.states import KernelStatus
from compare.model.results_ir import OP_KERNEL_SEPARATOR as SEPARATOR, op_kernel as label  # noqa: F401


@dataclasses.dataclass(frozen=True)
class Discovered:
    """The launches of an op's passes that ran: the forward's, then the backward's new ones; `backward_failed`:
    why the backward did not run to its end ("" when it did, or the family has none)."""

    launches: tuple[Launch, ...]
    backward_failed: str = ""
    passes: dict = dataclasses.field(default_factory=dict)   # pass -> the kernel names it launched
    grids: dict = dataclasses.field(default_factory=dict)    # kernel name -> the grids it ran on


@dataclasses.dataclass(frozen=True)
class OpKernels:
    """What `compile_ops` found: per op its kernels as (kernel name, Compiled) in launch order, why an op has
    none, the passes whose kernels are not known (an op's backward that failed), and per op which pass
    launched which kernel ({op: {pass: names}})."""

    kernels: dict
    problems: dict
    notes: tuple[IRPassNote, ...] = ()
    passes: dict = dataclasses.field(default_factory=dict)
    grids: dict = dataclasses.field(default_factory=dict)   # {op: {kernel name: grids}}


def discover(variant, family, shape, dtype: str, device: str, warm: bool, drawn=None) -> Discovered:
    """The Triton launches of one forward and one backward pass of the op `variant`, each on its own copy of
    `drawn` (the inputs, drawn once: at a GPU's sizes a host draw takes seconds). A forward that fails
    raises; a backward that fails keeps the forward's launches and says why (`Discovered.backward_failed`)."""
    import torch
    torch_dtype = family.dtypes[dtype]
    first = family.outputs[0]
    drawn = drawn if drawn is not None else family.make_inputs(shape, torch_dtype, device, 0)

    def fresh():   # an op may write into its inputs: each pass gets its own
        return drawn.replace(**{k: t.clone() for k, t in drawn.named_tensors().items()})

    def forward():
        outputs = {k: t for k, t in family.alloc_outputs(shape, torch_dtype, device).items() if k == first}
        variant.run(fresh(), outputs, shape)

    def backward(recorded: bool):   # as a timed backward runs: autograd's, through a forward made first
        with recorder.during("forward") if recorded else contextlib.nullcontext():
            timed = OpPass(family, variant, fresh(), shape, "backward")
        with recorder.during("backward") if recorded else contextlib.nullcontext():
            timed()
    recorder = LaunchRecorder()   # entered once per pass: one record, so a kernel of both passes is listed once
    if warm:   # JIT compiles and autotuning done before what is recorded, so their launches are not
        forward()
    with recorder.during("forward"):
        forward()
    why, found = "", len(recorder.launches)
    if family.grads:
        try:
            if warm:
                backward(recorded=False)
            backward(recorded=True)
            found = len(recorder.launches)
        except BaseException as exc:  # noqa: BLE001 - the forward's kernels are still known; the line says why
            why = supervisor.variant_fault(variant.name, exc)
    if device != "cpu":
        torch.cuda.synchronize()
    kept = recorder.launches[:found]
    names = {launch.name for launch in kept}
    return Discovered(tuple(kept), why, {p: tuple(n for n in launched if n in names)
                                         for p, launched in recorder.passes.items()},
                      {n: tuple(recorder.grids.get(n, ())) for n in names})


def _in_process(name: str, launch: Launch) -> Compiled:
    """A kernel the JIT launched on this GPU, described here (its stages are in the CompiledKernel)."""
    from compare.checks.ir import worker
    kernel = launch.kernel
    if kernel is None:
        cached = worker._launched_kernels(launch.function)
        kernel = cached[0] if len(cached) == 1 else None
    if kernel is None:
        return Compiled(name, False, "Triton did not give back the kernel it launched, and its JIT cache holds "
                                     "other than one", "", {}, {}, {})
    try:
        return Compiled.of(name, worker.describe(kernel, name, launched=True))
    except Exception as exc:  # noqa: BLE001 - one kernel that cannot be read must not hide the others
        return Compiled.of(name, worker.failed(name, exc))


def _launches(v, family, shape, dtype: str, gpu: bool, drawn) -> tuple[Discovered | None, str]:
    """(what the op launched, "") or (None, why it has no kernels)."""
    try:
        with supervisor.running((v.name,), f"ir: running the op for {shape.label} {dtype} to find its kernels"):
            found = discover(v, family, shape, dtype, "cuda" if gpu else "cpu", warm=gpu, drawn=drawn)
    except BaseException as exc:  # noqa: BLE001 - an op that crashes is reported, the others still compiled
        return None, f"the op failed when run to find its kernels: {supervisor.variant_fault(v.name, exc)}"
    if not found.launches:
        return None, "the op launched no Triton kernel" + (
            f" before its backward failed ({found.backward_failed})" if found.backward_failed else "")
    return found, ""


def compile_ops(ops, family, shape, dtype: str, capability: int, gpu: bool, warm=None) -> OpKernels:
    """The kernels the op variants `ops` launched, compiled (OpKernels); offline in `warm`'s process where given
    (compare.checks.ir.compile.WarmCompiler)."""
    kernels: dict[str, list] = {}
    problems: dict[str, str] = {}
    notes: list[IRPassNote] = []
    passes: dict[str, dict] = {}
    grids: dict[str, dict] = {}
    offline: list[tuple[str, str, dict]] = []
    launched: list[tuple] = []
    drawn = family.make_inputs(shape, family.dtypes[dtype], "cuda" if gpu else "cpu", 0) if ops else None
    for v in ops:
        found, why = _launches(v, family, shape, dtype, gpu, drawn)
        if found is None:
            problems[v.name] = why
            continue
        if found.backward_failed:
            notes.append(IRPassNote("backward", PassStatus.NOT_FOUND, v.name, found.backward_failed))
        kernels[v.name], passes[v.name], grids[v.name] = [], found.passes, found.grids
        for launch in found.launches:
            name = label(v.name, launch.name)
            failed = Compiled(name, False, launch.problem, "", {}, {}, {}) if launch.problem and not gpu else None
            kernels[v.name].append((launch.name, failed))   # None: compiled below (on a GPU, read back)
            if gpu:
                launched.append((v.name, launch.name, name, launch))
            elif failed is None:
                request = {**kernel_spec(name, launch.function, v.import_roots), "specialization": launch.specialization}
                offline.append((v.name, launch.name, request))
    done = _described(launched)
    if offline:
        results = run_worker({"mode": "offline", "capability": capability, "dtype": dtype, "shape": {},
                              "kernels": [request for *_, request in offline]}, warm)
        done.update({(op, kernel): Compiled.of(label(op, kernel), r) for (op, kernel, _), r in zip(offline, results)})
    kernels = {op: [(k, c if c is not None else done[(op, k)]) for k, c in items] for op, items in kernels.items()}
    return OpKernels(kernels, problems, tuple(notes), passes, grids)


def _described(launched: list[tuple]) -> dict:
    """{(op, kernel): Compiled} of kernels launched on this GPU, read in a few threads: most of the time goes
    to cuobjdump's processes (SASS and resource usage, about 0.5 s a kernel), which run side by side."""
    if not launched:
        return {}
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, min(8, len(launched), (os.cpu_count() or 1))),
                            thread_name_prefix="kernel-ab IR read") as pool:
        compiled = list(pool.map(lambda item: _in_process(item[2], item[3]), launched))
    return {(op, kernel): c for (op, kernel, _, _), c in zip(launched, compiled)}


def _grid_changed(found: OpKernels, baseline: str, other: str, name: str) -> tuple[str, ...]:
    """("grid",) when the two ops launched kernel `name` on other grids (the same code, other work)."""
    mine, theirs = (found.grids.get(op, {}).get(name, ()) for op in (baseline, other))
    return ("grid",) if mine and theirs and () not in (*mine, *theirs) and set(mine) != set(theirs) else ()


def match(found: OpKernels, baseline: str, other: str, pair) -> tuple[tuple[IRKernelMatch, ...], tuple]:
    """Every kernel name launched by `baseline` or `other`, paired by name: (matches, IRPairs of the
    kernels both compiled, from `pair(a, b)`). A kernel one op lacks is "not found in" it where that op's
    backward failed (the kernel may be among those it did not get to launch), else "only in" the other."""
    mine, theirs = dict(found.kernels.get(baseline, ())), dict(found.kernels.get(other, ()))
    unfinished = {n.variant for n in found.notes if n.status == PassStatus.NOT_FOUND}
    matches, pairs = [], []
    for name in dict.fromkeys([*mine, *theirs]):
        a, b = mine.get(name), theirs.get(name)
        launched_in = tuple(p for p in ("forward", "backward") if any(
            name in found.passes.get(op, {}).get(p, ()) for op in (baseline, other)))
        if a is None or b is None:
            lacking = other if b is None else baseline
            matches.append(IRKernelMatch(name, baseline, other, f"not found in {lacking}" if lacking in unfinished
                                         else f"only in {baseline if b is None else other}", passes=launched_in))
        elif not (a.ok and b.ok):
            matches.append(IRKernelMatch(name, baseline, other, KernelStatus.FAILED, passes=launched_in))
        else:
            p = pair(a, b)
            changed = tuple(d.stage for d in p.stages if not d.identical) + _grid_changed(found, baseline, other, name)
            status = KernelStatus.CHANGED if changed else KernelStatus.IDENTICAL
            matches.append(IRKernelMatch(name, baseline, other, status, changed, launched_in))
            pairs.append(p)
    return tuple(matches), tuple(pairs)
