"""An op's calls captured at its boundary and made again: arguments packed by value (tensors with their
dtype, shape, strides, device and requires_grad; other values as they are), outputs and gradients named.

Used inside the recording and replaying processes (compare/runtime/replay_worker.py), never in kernel-ab's
own process: these run a reviewed library's code.
"""
from __future__ import annotations

from typing import Any

import torch

# the call kept by value lives with the recorded family, which loads it (variants may not import this layer)
from variants.call_values import (MAX_VALUE_BYTES, TensorMeta, Unrecordable, keep, pack, remake,  # noqa: F401
                                  unpack)
from variants.ops import call_signature
from compare.model.vocabulary import dtype_name


def parameter_names(fn, count: int) -> list[str]:
    """Names for `count` positional arguments of `fn` (an autograd Function's apply: its forward's, less ctx);
    `argI` where its signature does not name them."""
    try:
        params = list(call_signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


def describe(value, names: dict[int, str] | None = None) -> str:
    """An argument in short: `float32[4, 128] grad`, or the value's repr cut to 40 characters."""
    if isinstance(value, torch.Tensor):
        return f"{dtype_name(value.dtype)}{list(value.shape)}" + (" grad" if value.requires_grad else "") + \
            ("" if value.is_contiguous() else " strided")
    if isinstance(value, (tuple, list)) and len(value) <= 4:
        inner = ", ".join(describe(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def signature(names: list[str], args: tuple, kwargs: dict) -> str:
    """The call in short; two calls of one signature test the same thing (shapes, dtypes, flags)."""
    return ", ".join(f"{n}: {describe(a)}" if isinstance(a, torch.Tensor) else f"{n}={describe(a)}"
                     for n, a in [*zip(names, args), *kwargs.items()])


def dtypes(args: tuple, kwargs: dict) -> tuple[str, ...]:
    """The dtypes of a call's tensor arguments, in order: calls in other dtypes test other code paths."""
    def walk(value):
        if isinstance(value, torch.Tensor):
            yield dtype_name(value.dtype)
        elif isinstance(value, (tuple, list, dict)):
            for v in value.values() if isinstance(value, dict) else value:
                yield from walk(v)
    return tuple(walk((args, kwargs)))


def named_outputs(value, name: str = "out") -> dict[str, Any]:
    """Every tensor (and other leaf value) of an op's result, named by where it lies in it."""
    if isinstance(value, torch.Tensor):
        return {name: value}
    if isinstance(value, (tuple, list, dict)):   # out[0], out['key']
        found: dict[str, Any] = {}
        for k, v in value.items() if isinstance(value, dict) else enumerate(value):
            found.update(named_outputs(v, f"{name}[{k!r}]"))
        return found
    return {name: value}


def result_form(value) -> dict:
    """What an op's call returned, for the recorded family to time it: each tensor by name (dtype, shape, whether
    it has a gradient), and `select`, the index of the element of a tuple result that is its output (the first
    tensor with a gradient, else the first tensor; None: the result is that tensor)."""
    found = {name: {"dtype": dtype_name(t.dtype), "shape": list(t.shape), "grad": t.grad_fn is not None}
             for name, t in named_outputs(value).items() if isinstance(t, torch.Tensor)}
    top = list(value) if isinstance(value, (tuple, list)) else []
    tensors = [i for i, v in enumerate(top) if isinstance(v, torch.Tensor)]
    graded = [i for i in tensors if top[i].grad_fn is not None]
    select = (graded or tensors or [None])[0]
    output = "out" if isinstance(value, torch.Tensor) else f"out[{select}]" if select is not None else None
    return {"tensors": found, "select": select, "output": output if output in found else None}


def reached(outputs: list, tensors: list) -> list[int]:
    """The indices of `tensors` whose gradient the outputs' autograd graph reaches (walked, nothing is run)."""
    leaves = {id(t): i for i, t in enumerate(tensors) if t.requires_grad and t.grad_fn is None}
    nodes = {id(t.grad_fn): i for i, t in enumerate(tensors) if t.grad_fn is not None}
    stack = [o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    seen, found = set(), set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in nodes:
            found.add(nodes[id(node)])
            continue
        variable = getattr(node, "variable", None)
        if variable is not None and id(variable) in leaves:
            found.add(leaves[id(variable)])
        stack.extend(n for n, _ in node.next_functions)
    return sorted(found)
