"""Compile variants for one specialization at every stage (TTIR, TTGIR, LLIR, PTX, SASS).

The compiling happens in a child process (`compare.ir.worker`) with TRITON_INTERPRET removed, because
a process that interprets Triton cannot compile it, and so that a crash in one compile cannot take
the report down. All variants of a request go to one worker; results are cached per
(variant, specialization, target, mode) for the life of a `CompileCache`.

The specialization mirrors what Triton's JIT infers for `variants.group_norm.launch_forward`'s
arguments (see `specialization`): that is the kernel the launcher would run for the shape and dtype.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
_TARGET = re.compile(r"^sm_(\d{2,3})a?$")
_PTR_TYPES = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16"}
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


def capability(target: str) -> int:
    """90 for 'sm_90' (or 'sm_90a'); TargetError for anything else."""
    m = _TARGET.match(target)
    if not m:
        raise TargetError(f"unknown target {target!r}; use sm_NN, for example sm_80 or sm_90")
    return int(m.group(1))


def _int_spec(name: str, value: int, signature: dict, constexprs: dict, divisible: list) -> None:
    """What Triton's JIT does with an int argument: 1 becomes a constant, multiples of 16 get
    tt.divisibility = 16, and the type is i32 when it fits, else i64."""
    if value == 1:
        signature[name], constexprs[name] = "constexpr", 1
        return
    signature[name] = "i32" if -2**31 <= value < 2**31 else "i64"
    if value % 16 == 0:
        divisible.append(name)


def specialization(arg_names: list, shape, dtype: str) -> dict:
    """Signature, constexprs and 16-divisible arguments for `launch_forward(kernel, ..., shape)`.

    Assumed, as on a CUDA device: every tensor's data pointer is 16-byte aligned (torch's caching
    allocator aligns to 512 bytes), and the tensors are contiguous views (batch, groups, hidden)."""
    g, h = shape.num_groups, shape.hidden_size
    ptr = _PTR_TYPES[dtype]
    values = [("Y_ptr", ptr), ("Y_row_stride", g * h), ("Y_col_stride", h),
              ("X_ptr", ptr), ("X_row_stride", g * h), ("X_col_stride", h),
              ("Mean_ptr", "*fp32"), ("Mean_row_stride", g), ("Mean_col_stride", 1),
              ("RSTD_ptr", "*fp32"), ("RSTD_row_stride", g), ("RSTD_col_stride", 1),
              ("W_ptr", ptr), ("B_ptr", ptr),
              ("hidden_size", h), ("channels_per_group", shape.channels_per_group), ("eps", "fp32")]
    if len(arg_names) != len(values) + 1:
        raise ValueError(f"kernel takes {len(arg_names)} arguments; the group-norm launcher passes {len(values) + 1}")
    signature, constexprs, divisible = {}, {}, []
    for name, (_, value) in zip(arg_names, values):
        if isinstance(value, str):
            signature[name] = value
            if value.startswith("*"):
                divisible.append(name)
        else:
            _int_spec(name, value, signature, constexprs, divisible)
    signature[arg_names[-1]], constexprs[arg_names[-1]] = "constexpr", shape.block_size
    return {"signature": signature, "constexprs": constexprs, "divisible_by_16": divisible}


def describe(spec: dict) -> str:
    """One line: the argument types and constants the kernels were compiled for."""
    parts = []
    for name, ty in spec["signature"].items():
        if ty == "constexpr":
            parts.append(f"{name}={spec['constexprs'][name]}")
        else:
            parts.append(f"{name}:{ty}{' (div16)' if name in spec['divisible_by_16'] else ''}")
    return ", ".join(parts)


def kernel_spec(variant) -> dict:
    """Where the worker finds a variant's kernel again: file, module, function name, import roots."""
    fn = getattr(variant.kernel, "fn", variant.kernel)
    return {"name": variant.name, "file": inspect.getsourcefile(fn), "module": fn.__module__,
            "function": fn.__name__, "root": str(PROJECT_ROOT), "import_roots": list(variant.import_roots)}


def arg_names(variant) -> list:
    fn = getattr(variant.kernel, "fn", variant.kernel)
    return list(inspect.signature(fn).parameters)


def run_worker(request: dict) -> list[dict]:
    """Run the worker on `request`; its per-kernel results (RuntimeError if the worker itself fails)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # Triton 3.9 warns when unset; 1 is the default it keeps
    proc = subprocess.run([sys.executable, "-m", "compare.ir.worker"], input=json.dumps(request),
                          capture_output=True, text=True, cwd=PROJECT_ROOT, env=env, timeout=WORKER_TIMEOUT_S)
    try:
        return json.loads(proc.stdout)["results"]
    except (ValueError, KeyError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"IR worker failed (exit {proc.returncode}): {tail}") from None


class CompileCache:
    """Compiles through the worker, remembering results per (variant, specialization, target, mode)."""

    def __init__(self):
        self._done: dict[tuple, Compiled] = {}

    def compile(self, variants, shape, dtype: str, target: str, launched: bool) -> list[Compiled]:
        cap = capability(target)
        mode = "launched" if launched else "offline"
        keyed = []
        for v in variants:
            spec = {**kernel_spec(v), "specialization": specialization(arg_names(v), shape, dtype)}
            keyed.append((v, spec, (json.dumps(spec, sort_keys=True), cap, mode, dtype)))
        todo = [(v, spec, key) for v, spec, key in keyed if key not in self._done]
        if todo:
            request = {"mode": mode, "capability": cap, "dtype": dtype, "shape": shape.as_dict(),
                       "kernels": [spec for _, spec, _ in todo]}
            results = run_worker(request)
            for (v, _, key), r in zip(todo, results):
                self._done[key] = Compiled(v.name, r["ok"], r["error"], r["kernel_name"], r["stages"],
                                           r["resources"], r["launched"])
        return [self._done[key] for _, _, key in keyed]
