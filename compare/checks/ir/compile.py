"""Compile variants for one specialization at every stage (TTIR, TTGIR, LLIR, PTX, SASS).

Compiles run in a child process (`compare.checks.ir.worker`) without TRITON_INTERPRET: an interpreting process
cannot compile, and a crashing compile must not take the report down. Results are cached per (variant,
specialization, target, mode); the specialization is what Triton infers from the launcher's arguments."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from compare.model.vocabulary import STAGES, dtype_name  # noqa: F401 (re-exported: compare.checks.ir.STAGES)
from compare.model import scratch
from compare.runtime import warm_worker
from compare.runtime.warm_worker import WarmWorker

PROJECT_ROOT = Path(__file__).resolve().parents[3]
_TARGET = re.compile(r"^sm_(\d{2,3})a?$")
# what Triton's NVIDIA backend compiles for (Turing on), as far as the ptxas it ships knows the GPU
CAPABILITIES = (75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121)
_PTR_TYPES = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16", "float64": "*fp64",
              "int32": "*i32", "int64": "*i64", "int8": "*i8", "uint8": "*u8", "bool": "*i1"}
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
WORKER_TIMEOUT_S = 600


class TargetError(ValueError):
    """A target that is not `sm_NN`."""


@dataclasses.dataclass(frozen=True)
class Compiled:
    """One variant compiled: every stage's text and its resource usage, or why it failed."""

    variant: str
    ok: bool
    error: str
    kernel_name: str
    stages: dict
    resources: dict
    launched: dict     # on a GPU: what the launched kernel reports (n_regs, n_spills, shared)

    @classmethod
    def of(cls, name: str, r: dict) -> "Compiled":
        """`name`'s record of a worker's result for one kernel (compare.checks.ir.worker.describe or failed)."""
        return cls(name, r["ok"], r["error"], r["kernel_name"], r["stages"], r["resources"], r["launched"])


def capability(target: str) -> int:
    """90 for 'sm_90' (or 'sm_90a'); TargetError for anything else, or a capability no ptxas here has."""
    m = _TARGET.match(target)
    if not m:
        raise TargetError(f"unknown target {target!r}; use sm_NN, for example sm_80 or sm_90")
    cap = int(m.group(1))
    if cap not in CAPABILITIES:
        raise TargetError(f"unknown target {target!r}; Triton compiles for "
                          f"{', '.join(f'sm_{c}' for c in CAPABILITIES)}")
    return cap


def _int_spec(name: str, value: int, signature: dict, constexprs: dict, divisible: list) -> None:
    """What Triton's JIT does with an int argument: 1 becomes a constant, multiples of 16 get
    tt.divisibility = 16, and the type is i32 when it fits, else i64."""
    if value == 1:
        signature[name], constexprs[name] = "constexpr", 1
        return
    signature[name] = "i32" if -2**31 <= value < 2**31 else "i64"
    if value % 16 == 0:
        divisible.append(name)


class _Recorder:
    """Stands in for a kernel in a family's launcher: records `kernel[grid](*args, **kwargs)`, launches nothing."""

    def __init__(self):
        self.calls: list[tuple] = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((grid, args, kwargs))

    def warmup(self, *args, **kwargs):
        # a launcher that compiles its kernel to size the launch (a persistent grid) needs a GPU
        raise RuntimeError("the launcher compiles the kernel on a GPU to size its launch (kernel.warmup), "
                           "which a launch on meta tensors cannot do")


def launcher_ref(family, launcher) -> str:
    """How the worker finds a launcher again: "" for the family's `backward_call` or `launch_forward`, a family
    method's name, or MODULE:NAME of a module-level function (a variant's own); ValueError for any other."""
    if launcher is None or getattr(launcher, "__func__", None) in (type(family).backward_call, type(family).launch_forward):
        return ""
    if getattr(launcher, "__self__", None) is family:
        return launcher.__name__
    ref = f"{getattr(launcher, '__module__', '')}:{getattr(launcher, '__qualname__', '')}"
    try:
        found = launcher_of(family, ref)
    except (ImportError, AttributeError, ValueError):
        found = None
    if found is not launcher:
        raise ValueError(f"launcher {launcher!r} is neither a method of family {family.name} "
                         "nor a module-level function the compile worker can import again")
    return ref


def launcher_of(family, ref: str, role: str = "backward"):
    """The launcher `ref` (from `launcher_ref`) names; "" is the family's own for `role`."""
    if ":" not in ref:
        return getattr(family, ref or ("launch_forward" if role == "forward" else "backward_call"))
    module, _, name = ref.partition(":")
    found = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


def launch_as(family, role: str, launcher: str, kernel, shape, dtype, device: str) -> None:
    """`kernel` launched once, on inputs of `shape` and `dtype` (torch's) drawn on `device`, by the family's `role`
    launcher, or the one `launcher` (from `launcher_ref`) names."""
    inputs = family.make_inputs(shape, dtype, device, 0)
    outputs = family.alloc_outputs(shape, dtype, device)
    if role == "forward":
        launcher_of(family, launcher, role)(kernel, inputs, outputs, shape)
    else:
        launcher_of(family, launcher)(kernel, inputs, outputs, family.alloc_grads(shape, dtype, device), shape)()


def recorded_launch(family, role: str, shape, dtype: str, launcher: str = "") -> tuple[tuple, dict]:
    """(args, kwargs) the family's launcher passes its `role` kernel for `shape` in `dtype`, from a
    launch on meta tensors (nothing is computed, nothing allocated on a device). `launcher` (from
    `launcher_ref`) names the launcher of a backward kernel, when not the family's `backward_call`."""
    import torch
    rec = _Recorder()
    with torch.no_grad():
        launch_as(family, role, launcher, rec, shape, family.dtypes[dtype], "meta")
    if len(rec.calls) != 1:
        raise RuntimeError(f"family {family.name}'s {role} launcher launched {len(rec.calls)} kernels; expected one")
    return rec.calls[0][1], rec.calls[0][2]


def _constant(value):
    """A constexpr value in JSON form (Triton dtypes as {"tl_dtype": name}; the worker turns them back)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    name = getattr(value, "name", None)
    if type(value).__name__ == "dtype" and isinstance(name, str):
        return {"tl_dtype": name}
    raise ValueError(f"cannot pass constexpr value {value!r} to an offline compile")


def specialization(kernel, args: tuple, kwargs: dict) -> dict:
    """Signature, constexprs, 16-divisible arguments and launch options of `kernel` called with these
    arguments, as Triton's JIT specializes them.

    Assumed, as on a CUDA device: every tensor's data pointer is 16-byte aligned (torch's caching
    allocator aligns to 512 bytes)."""
    fn = getattr(kernel, "fn", kernel)
    params = list(inspect.signature(fn).parameters.values())
    if len(args) > len(params):
        raise ValueError(f"kernel takes {len(params)} arguments; the launcher passes {len(args)} positionally")
    values = {p.name: a for p, a in zip(params, args)}
    options = {k: v for k, v in kwargs.items() if k in _OPTIONS}
    values.update({k: v for k, v in kwargs.items() if k not in _OPTIONS})
    signature, constexprs, divisible = {}, {}, []
    for p in params:
        if p.name not in values:
            if p.default is inspect.Parameter.empty:
                raise ValueError(f"the launcher does not pass the kernel's parameter {p.name}")
            values[p.name] = p.default
        value = values[p.name]
        if "constexpr" in str(p.annotation) or value is None:
            signature[p.name], constexprs[p.name] = "constexpr", _constant(value)
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            signature[p.name] = _PTR_TYPES[dtype_name(value.dtype)]
            divisible.append(p.name)
        elif isinstance(value, bool):
            signature[p.name] = "i1"
        elif isinstance(value, int):
            _int_spec(p.name, value, signature, constexprs, divisible)
        elif isinstance(value, float):
            signature[p.name] = "fp32"
        else:
            raise ValueError(f"cannot specialize argument {p.name} of type {type(value).__name__}")
    return {"signature": signature, "constexprs": constexprs, "divisible_by_16": divisible, "options": options}


def describe(spec: dict) -> str:
    """One line: the argument types and constants the kernels were compiled for."""
    parts = []
    for name, ty in spec["signature"].items():
        if ty == "constexpr":
            value = spec["constexprs"][name]
            parts.append(f"{name}={value['tl_dtype'] if isinstance(value, dict) else value}")
        else:
            parts.append(f"{name}:{ty}{' (div16)' if name in spec['divisible_by_16'] else ''}")
    parts.extend(f"{k}={v}" for k, v in spec.get("options", {}).items())
    return ", ".join(parts)


def kernel_spec(name: str, kernel, import_roots=()) -> dict:
    """Where the worker finds a kernel again: file, module, function name, import roots."""
    fn = getattr(kernel, "fn", kernel)
    return {"name": name, "file": inspect.getsourcefile(fn), "module": fn.__module__,
            "function": fn.__name__, "root": str(PROJECT_ROOT), "import_roots": list(import_roots)}


def run_worker(request: dict, warm: "WarmCompiler | None" = None) -> list[dict]:
    """Run the worker on `request` (in `warm`'s process, where given); its per-kernel results (RuntimeError if
    the worker itself fails)."""
    warm_worker.refuse_while_stopping("IR worker")
    if warm is not None:
        return warm.compile(request)
    # ptxas's files (Triton keeps them with delete=False) go to a folder of the worker's own, removed
    # whatever happens: also when the run is interrupted or the worker killed
    with tempfile.TemporaryDirectory(prefix="kernel-ab-ir-", dir=scratch.folder()) as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "compare.checks.ir.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT_ROOT,
                                env=_worker_env(tmp))
        try:
            with warm_worker.answering(proc):
                stdout, stderr = proc.communicate(json.dumps(request), timeout=WORKER_TIMEOUT_S)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    proc.stdout, proc.stderr = stdout, stderr   # read as subprocess.run's result was
    try:
        return json.loads(proc.stdout)["results"]
    except (ValueError, KeyError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"IR worker failed (exit {proc.returncode}): {tail}") from None


def _worker_env(tmp: str) -> dict:
    """The compile worker's environment: no TRITON_INTERPRET, and ptxas's files in `tmp`, removed with it."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9 warns when unset; 1 is the default it keeps
    return {**env, "TMPDIR": tmp}


class WarmCompiler:
    """The compile worker kept for every compile of a cache (compare.runtime.warm_worker): a review's ops
    compile in one process, which imports each revision of the reviewed library once; one that ended (a
    compile that crashed it) is replaced by the next request's."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kernel-ab-ir-", dir=scratch.folder())
        self.worker = WarmWorker([sys.executable, "-m", "compare.checks.ir.worker", "--serve"], Path(self.tmp.name),
                                 "ir", _worker_env(self.tmp.name), cwd=PROJECT_ROOT)
        self.asked = 0

    def compile(self, request: dict) -> list[dict]:
        self.asked += 1
        answer = Path(self.tmp.name, f"{self.asked}.answer.json")
        self.worker.send({"request": request, "answer": str(answer)})
        try:
            with warm_worker.answering(self.worker.proc):
                said = self.worker.word(WORKER_TIMEOUT_S)
        except BaseException:
            self.worker.kill()
            raise
        if said == "":
            self.worker.kill()
            raise subprocess.TimeoutExpired(self.worker.command, WORKER_TIMEOUT_S)
        if said == "done":
            with contextlib.suppress(OSError, ValueError, KeyError):
                return json.loads(answer.read_text())["results"]
        end = self.worker.failure()
        raise RuntimeError(f"IR worker failed (exit {end.exit_code}): {end.last_line}")

    def close(self) -> None:
        self.worker.close()
        self.tmp.cleanup()


class CompileCache:
    """Compiles through the worker, remembering results per (kernel, specialization, target, mode): a kernel
    that several variants run is compiled once. `warm`: in one worker kept until `close` (WarmCompiler)."""

    def __init__(self, warm: bool = False):
        self._done: dict[tuple, Compiled] = {}
        self.warm = WarmCompiler() if warm else None

    def close(self) -> None:
        if self.warm is not None:
            self.warm.close()

    def compile(self, family, kernels, shape, dtype: str, target: str, launched: bool, role: str = "forward") -> list[Compiled]:
        """Compile `kernels`, (name, @triton.jit kernel, import roots[, launcher ref]) each, as the family's
        `role` launcher (or the named one) runs them. A kernel whose launch cannot be recorded on meta
        tensors fails alone offline; on a GPU it is launched anyway (the JIT specializes it there)."""
        return self.compile_passes(family, [(role, kernels)], shape, dtype, target, launched)[0]

    def compile_passes(self, family, passes, shape, dtype: str, target: str, launched: bool) -> list[list[Compiled]]:
        """`compile` for several (role, kernels) at once, in one worker (its start costs seconds)."""
        cap = capability(target)
        mode = "launched" if launched else "offline"
        done = []
        for role, kernels in passes:
            slots: list = []
            for name, kernel, roots, *launcher in kernels:
                try:
                    slots.append(self._keyed(family, name, kernel, roots, launcher[0] if launcher else "", shape,
                                             dtype, cap, mode, role))
                except Exception as exc:  # noqa: BLE001 - one kernel that cannot be set up must not hide the others
                    from compare.model.errors import summarize
                    slots.append(Compiled(name, False, f"the IR step could not read how its {role} launcher "
                                                       f"launches it: {summarize(exc)}", "", {}, {}, {}))
            done.append(slots)
        # one compile per kernel and specialization: variants sharing the family's kernel share its result
        todo = list({slot[2]: slot for slots in done for slot in slots
                     if isinstance(slot, tuple) and slot[2] not in self._done}.values())
        if todo:
            request = {"mode": mode, "capability": cap, "dtype": dtype, "shape": shape.as_dict(),
                       "family": family.name, "family_module": type(family).__module__,
                       "kernels": [spec for _, spec, _ in todo]}
            results = run_worker(request, self.warm)
            for (n, _, key), r in zip(todo, results):
                self._done[key] = Compiled.of(n, r)
        return [[dataclasses.replace(self._done[slot[2]], variant=slot[0]) if isinstance(slot, tuple) else slot
                 for slot in slots] for slots in done]

    def add(self, family, entry: tuple, shape, dtype: str, target: str, launched: bool, role: str, compiled: Compiled):
        """Remember `compiled` as the result of compiling `entry` ((name, kernel, import roots, launcher ref)),
        compiled elsewhere (compare/processes/tasks.py: one task per variant); a later `compile` of it compiles nothing."""
        name, kernel, roots, launcher = entry
        key = self._keyed(family, name, kernel, roots, launcher, shape, dtype, capability(target),
                          "launched" if launched else "offline", role)[2]
        self._done[key] = compiled

    @staticmethod
    def _keyed(family, name, kernel, roots, launcher: str, shape, dtype: str, cap: int, mode: str, role: str) -> tuple:
        """(name, the worker's spec of the kernel, its cache key)."""
        spec = {**kernel_spec(name, kernel, roots), "role": role, "launcher": launcher, "specialization": None}
        try:
            args, kwargs = recorded_launch(family, role, shape, dtype, launcher)
            spec["specialization"] = specialization(kernel, args, kwargs)
        except Exception:   # on a GPU the launcher runs for real: what it could not do on meta tensors it does there
            if mode == "offline":
                raise
        shape_key = "" if spec["specialization"] else json.dumps(shape.as_dict(), sort_keys=True)
        what = json.dumps({k: v for k, v in spec.items() if k != "name"}, sort_keys=True)
        return name, spec, (what, shape_key, cap, mode, dtype, role)
