"""An op's call kept by value: its arguments with each tensor replaced by a marker into a list of tensors kept
apart (their elements on the CPU, with dtype, shape, strides, device and requires_grad), other values as they
are. The recorder (compare/runtime/replay_worker.py) packs calls; the replayer and the recorded family
(variants/recorded.py) unpack them onto fresh tensors."""
from __future__ import annotations

import dataclasses
import pickle

import torch

MARK = "__kernel_ab_tensor__"
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

    @classmethod
    def of(cls, saved: dict) -> "TensorMeta":
        """The record as a recording's file holds it (a dict of lists)."""
        return cls(**{**saved, "shape": tuple(saved["shape"]), "stride": tuple(saved["stride"])})


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def pack(value, tensors: list, seen: dict, where: str):
    """`value` with each tensor replaced by a marker indexing `tensors` (the same tensor object twice is
    one entry: an op handed one buffer twice gets one buffer again)."""
    if isinstance(value, torch.Tensor):
        if id(value) not in seen:
            seen[id(value)] = len(tensors)
            tensors.append(value)
        return {MARK: seen[id(value)]}
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


def is_marker(value) -> bool:
    return isinstance(value, dict) and set(value) == {MARK}


def unpack(value, tensors: list):
    """`value` with each marker replaced by its tensor of `tensors`."""
    if is_marker(value):
        return tensors[value[MARK]]
    if isinstance(value, (tuple, list)):
        out = [unpack(v, tensors) for v in value]
        return tuple(out) if isinstance(value, tuple) else out
    if isinstance(value, dict):
        return {k: unpack(v, tensors) for k, v in value.items()}
    return value


def keep(t: torch.Tensor) -> tuple[torch.Tensor, TensorMeta]:
    """A tensor by value: its elements on the CPU, and what it was."""
    meta = TensorMeta(dtype_name(t.dtype), tuple(t.shape), tuple(t.stride()), t.device.type, bool(t.requires_grad))
    return t.detach().to("cpu", copy=True).contiguous(), meta


def remake(value: torch.Tensor, meta: TensorMeta, device: str | None = None) -> torch.Tensor:
    """A fresh tensor like the one kept: the same strides, on `device` (default: the one it was on); on
    "meta", its size and dtype only."""
    t = torch.empty_strided(meta.shape, meta.stride, dtype=getattr(torch, meta.dtype), device=device or meta.device)
    if t.device.type != "meta":
        with torch.no_grad():
            t.copy_(value)
    return t.requires_grad_(True) if meta.requires_grad else t
