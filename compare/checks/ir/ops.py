"""The compiled code of op-level variants: the kernels each op launched, paired by kernel name.

Each op runs forward and backward under `LaunchRecorder` (on a GPU once more before, unrecorded, so JIT
compiles and autotuning are done). Kernels pair by name with the baseline op's: "identical" when every
stage's normalized listing agrees, else "changed"; "only in" one op; "failed" when it did not compile."""
from __future__ import annotations

from compare.running import supervisor
from compare.checks.ir.compile import Compiled, kernel_spec, run_worker
from compare.checks.ir.launches import Launch, LaunchRecorder
from compare.model.results import IRKernelMatch

SEPARATOR = ":"   # an op's kernel is listed as OP:KERNEL


def label(op: str, kernel: str) -> str:
    return f"{op}{SEPARATOR}{kernel}"


def discover(variant, family, shape, dtype: str, device: str, warm: bool) -> list[Launch]:
    """The Triton launches of one forward and one backward pass of the op `variant`."""
    import torch
    torch_dtype = family.dtypes[dtype]
    first = family.outputs[0]

    def one_pass():
        inputs = family.make_inputs(shape, torch_dtype, device, 0)
        outputs = {k: t for k, t in family.alloc_outputs(shape, torch_dtype, device).items() if k == first}
        variant.run(inputs, outputs, shape)
        if family.grads:
            family.run_backward(variant, inputs, family.alloc_grads(shape, torch_dtype, device), shape)
    if warm:
        one_pass()
    with LaunchRecorder() as recorder:
        one_pass()
    if device != "cpu":
        torch.cuda.synchronize()
    return recorder.launches


def _from_worker(r: dict, name: str) -> Compiled:
    return Compiled(name, r["ok"], r["error"], r["kernel_name"], r["stages"], r["resources"], r["launched"])


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
        return _from_worker(worker.describe(kernel, name, launched=True), name)
    except Exception as exc:  # noqa: BLE001 - one kernel that cannot be read must not hide the others
        return _from_worker(worker.failed(name, exc), name)


def compile_ops(ops, family, shape, dtype: str, capability: int, gpu: bool):
    """({op name: [(kernel name, Compiled)]}, {op name: why it has none}) for the op variants `ops`."""
    kernels: dict[str, list] = {}
    problems: dict[str, str] = {}
    offline: list[tuple[str, str, dict]] = []
    for v in ops:
        try:
            with supervisor.running((v.name,), f"ir: running the op for {shape.label} {dtype} to find its kernels"):
                launches = discover(v, family, shape, dtype, "cuda" if gpu else "cpu", warm=gpu)
        except Exception as exc:  # noqa: BLE001 - an op that crashes is reported, the others still compiled
            from compare.model.errors import summarize
            if supervisor.is_fatal(exc):   # ... unless nothing can run after it (the supervisor reruns without it)
                supervisor.poisoned(v.name, f"{supervisor.CRASHES[1]} ({summarize(exc)})")
            problems[v.name] = f"the op failed when run to find its kernels: {summarize(exc)}"
            continue
        if not launches:
            problems[v.name] = "the op launched no Triton kernel"
            continue
        kernels[v.name] = []
        for launch in launches:
            name = label(v.name, launch.name)
            if gpu:
                kernels[v.name].append((launch.name, _in_process(name, launch)))
            elif launch.problem:
                kernels[v.name].append((launch.name, Compiled(name, False, launch.problem, "", {}, {}, {})))
            else:
                kernels[v.name].append((launch.name, None))
                request = {**kernel_spec(name, launch.function, v.import_roots), "specialization": launch.specialization}
                offline.append((v.name, launch.name, request))
    if offline:
        results = run_worker({"mode": "offline", "capability": capability, "dtype": dtype, "shape": {},
                              "kernels": [request for *_, request in offline]})
        done = {(op, kernel): _from_worker(r, label(op, kernel)) for (op, kernel, _), r in zip(offline, results)}
        kernels = {op: [(k, c if c is not None else done[(op, k)]) for k, c in items] for op, items in kernels.items()}
    return kernels, problems


def match(kernels: dict[str, list], baseline: str, other: str, pair) -> tuple[tuple[IRKernelMatch, ...], tuple]:
    """Every kernel name launched by `baseline` or `other`, paired by name: (matches, IRPairs of the
    kernels both compiled, from `pair(a, b)`)."""
    mine, theirs = dict(kernels.get(baseline, ())), dict(kernels.get(other, ()))
    matches, pairs = [], []
    for name in dict.fromkeys([*mine, *theirs]):
        a, b = mine.get(name), theirs.get(name)
        if a is None or b is None:
            matches.append(IRKernelMatch(name, baseline, other, f"only in {baseline if b is None else other}"))
        elif not (a.ok and b.ok):
            matches.append(IRKernelMatch(name, baseline, other, "failed"))
        else:
            p = pair(a, b)
            changed = tuple(d.stage for d in p.stages if not d.identical)
            matches.append(IRKernelMatch(name, baseline, other, "changed" if changed else "identical", changed))
            pairs.append(p)
    return tuple(matches), tuple(pairs)
