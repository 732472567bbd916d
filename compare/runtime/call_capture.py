"""An op's calls captured at its boundary and made again: arguments packed by value (tensors with their
dtype, shape, strides, device and requires_grad; other values as they are), outputs and gradients named.

Used inside the recording and replaying processes (compare/runtime/replay_worker.py), never in kernel-ab's
own process: these run a reviewed library's code.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
from typing import Any

import torch

_MARK = "__kernel_ab_tensor__"
MAX_VALUE_BYTES = 1 << 20   # a non-tensor argument larger than this pickled is not recorded


class Unrecordable(ValueError):
    """An argument that cannot be kept by value (the message names it and why)."""


@dataclasses.dataclass(frozen=True)
class TensorMeta:
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    device: str
    requires_grad: bool


def resolve(module: str, name: str) -> tuple[Any, str, Any]:
    """(owner, attribute, callable) for `module`'s `name` (`f`, or `Cls.apply`)."""
    owner: Any = importlib.import_module(module)
    *path, attribute = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, attribute, getattr(owner, attribute)


def parameter_names(fn, count: int) -> list[str]:
    """Names for `count` positional arguments of `fn` (an autograd Function's apply: its forward's, less ctx)."""
    target = getattr(getattr(fn, "__self__", None), "forward", None) if getattr(fn, "__name__", "") == "apply" else fn
    try:
        params = list(inspect.signature(target if target is not None else fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    if target is not None and params and params[0].name == "ctx":
        params = params[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def pack(value, tensors: list, seen: dict, where: str):
    """`value` with each tensor replaced by a marker indexing `tensors` (the same tensor object twice is
    one entry: an op handed one buffer twice gets one buffer again)."""
    if isinstance(value, torch.Tensor):
        if id(value) not in seen:
            seen[id(value)] = len(tensors)
            tensors.append(value)
        return {_MARK: seen[id(value)]}
    if isinstance(value, (tuple, list)):
        packed = [pack(v, tensors, seen, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(packed) if isinstance(value, tuple) else packed
    if isinstance(value, dict):
        return {k: pack(v, tensors, seen, f"{where}[{k!r}]") for k, v in value.items()}
    try:
        size = len(pickle.dumps(value))
    except Exception as exc:  # noqa: BLE001 - any object may refuse pickling in its own way
        raise Unrecordable(f"{where} ({type(value).__name__}) cannot be kept by value: {type(exc).__name__}") from None
    if size > MAX_VALUE_BYTES:
        raise Unrecordable(f"{where} ({type(value).__name__}) is {size:,} bytes pickled")
    return value


def unpack(value, tensors: list):
    if isinstance(value, dict) and set(value) == {_MARK}:
        return tensors[value[_MARK]]
    if isinstance(value, (tuple, list)):
        out = [unpack(v, tensors) for v in value]
        return tuple(out) if isinstance(value, tuple) else out
    if isinstance(value, dict):
        return {k: unpack(v, tensors) for k, v in value.items()}
    return value


def keep(t: torch.Tensor) -> tuple[torch.Tensor, TensorMeta]:
    """A tensor by value: its elements on the CPU, and what it was."""
    meta = TensorMeta(_dtype_name(t.dtype), tuple(t.shape), tuple(t.stride()), t.device.type, bool(t.requires_grad))
    return t.detach().to("cpu", copy=True).contiguous(), meta


def remake(value: torch.Tensor, meta: TensorMeta, device: str | None = None) -> torch.Tensor:
    """A fresh tensor like the one kept: the same strides, on `device` (default: the one it was on)."""
    t = torch.empty_strided(meta.shape, meta.stride, dtype=getattr(torch, meta.dtype), device=device or meta.device)
    with torch.no_grad():
        t.copy_(value)
    return t.requires_grad_(True) if meta.requires_grad else t


def describe(value, names: dict[int, str] | None = None) -> str:
    """An argument in short: `float32[4, 128] grad`, or the value's repr cut to 40 characters."""
    if isinstance(value, torch.Tensor):
        return f"{_dtype_name(value.dtype)}{list(value.shape)}" + (" grad" if value.requires_grad else "") + \
            ("" if value.is_contiguous() else " strided")
    if isinstance(value, (tuple, list)) and len(value) <= 4:
        inner = ", ".join(describe(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def signature(names: list[str], args: tuple, kwargs: dict) -> str:
    """The call in short; two calls of one signature test the same thing (shapes, dtypes, flags)."""
    said = [f"{n}: {describe(a)}" if isinstance(a, torch.Tensor) else f"{n}={describe(a)}" for n, a in zip(names, args)]
    said += [f"{k}: {describe(v)}" if isinstance(v, torch.Tensor) else f"{k}={describe(v)}" for k, v in kwargs.items()]
    return ", ".join(said)


def dtypes(args: tuple, kwargs: dict) -> tuple[str, ...]:
    """The dtypes of a call's tensor arguments, in order: calls in other dtypes test other code paths."""
    def walk(value):
        if isinstance(value, torch.Tensor):
            yield _dtype_name(value.dtype)
        elif isinstance(value, (tuple, list)):
            for v in value:
                yield from walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                yield from walk(v)
    return tuple(walk((args, kwargs)))


def named_outputs(value, name: str = "out") -> dict[str, Any]:
    """Every tensor (and other leaf value) of an op's result, named by where it lies in it."""
    if isinstance(value, torch.Tensor):
        return {name: value}
    if isinstance(value, (tuple, list)):
        found: dict[str, Any] = {}
        for i, v in enumerate(value):
            found.update(named_outputs(v, f"{name}[{i}]"))
        return found
    if isinstance(value, dict):
        found = {}
        for k, v in value.items():
            found.update(named_outputs(v, f"{name}[{k!r}]"))
        return found
    return {name: value}
