"""Op-level variants: a Python function or an autograd Function's `apply`, compared as its users call it.

`op_variant` makes a Variant of kind "op" from a callable and its argument mapping (`CallMap`): its forward
calls the op and copies the result into the family's first output, its backward runs through autograd
(compare/checks/harness.py runs and times it: its timed passes capture themselves in CUDA graphs)."""
from __future__ import annotations

import inspect

import torch

from variants.spec import BadSpec, CallMap
from variants.variant import OpCallError, Variant, result_of


class MappedOp:
    """`fn` called as its spec says: the family's arguments come in the order `call.names`, each put where
    the call places it, with the call's constants between; `call.select` picks the element of its result."""

    def __init__(self, fn, call: CallMap):
        self.fn, self.call = fn, call

    def __call__(self, *values):
        given = iter(values)
        take = (lambda e: next(given) if isinstance(e, str) else e.value)
        positional = [take(e) for e in self.call.positional]   # before the keywords: the values come in this order
        returned = self.fn(*positional, **{kw: take(e) for kw, e in self.call.keywords})
        return self.selected(returned)

    def selected(self, returned):
        """The family's first output out of what the op returned (OpCallError when the mapping does not fit it)."""
        select = self.call.select
        if isinstance(returned, (tuple, list)):
            if select is None:
                raise OpCallError(f"the op returned a {type(returned).__name__} of {len(returned)}; say which element "
                                  f"is the output: {self.call.text()}[i]")
            if not -len(returned) <= select < len(returned):
                raise OpCallError(f"the op returned {len(returned)} values; [{select}] is none of them")
            return returned[select]
        if select is not None:
            raise OpCallError(f"the op returned one {type(returned).__name__}, not a tuple to take [{select}] of")
        return returned


def call_signature(fn) -> inspect.Signature:
    """The parameters a call of `fn` must fit: an autograd Function's `apply` takes its `forward`'s, less the
    ctx that `forward` takes first unless the Function has its own `setup_context`. TypeError or ValueError
    where Python cannot read them (a builtin)."""
    owner = getattr(fn, "__self__", None)
    if getattr(fn, "__name__", "") == "apply" and isinstance(owner, type) and hasattr(owner, "forward"):
        params = list(inspect.signature(owner.forward).parameters.values())
        takes_ctx = getattr(owner, "setup_context", None) is torch.autograd.Function.setup_context
        return inspect.Signature(params[1:] if takes_ctx else params)
    return inspect.signature(fn)


def check_call(fn, call: CallMap, known: tuple[str, ...], where: str) -> None:
    """BadSpec (one line) unless `call` names only arguments the family gives and fits `fn`'s
    signature where Python can read it (an autograd Function's by its `forward`)."""
    unknown = [n for n in call.names if n not in known]
    if unknown:
        raise BadSpec(f"{where}: {unknown[0]!r} is not an argument of the family's op; arguments: {', '.join(known)}")
    try:
        signature = call_signature(fn)
    except (TypeError, ValueError):   # a builtin that does not say: the call is tried as given
        return
    try:
        signature.bind(*call.positional, **{kw: None for kw, _ in call.keywords})
    except TypeError as exc:
        raise BadSpec(f"{where}: the call {call.text()} does not fit the callable's parameters {signature}: {exc}; "
                      "say what each parameter takes with CALLABLE(arg or constant, ...)") from None


_WIDER = {"torch.float16": ("torch.float32", "torch.float64"), "torch.bfloat16": ("torch.float32", "torch.float64"),
          "torch.float32": ("torch.float64",)}


def _copy_checked(buffer, value, name: str) -> None:
    """Copy the op's result into the family's buffer. A shape or dtype that differs is the mapping's error
    (OpCallError), never a silent broadcast or rounding cast; a float the buffer's wider float holds exactly
    (a bfloat16 loss, where the family keeps it in float32) is copied, its values, and so its error, unchanged."""
    same = hasattr(value, "shape") and tuple(value.shape) == tuple(buffer.shape) and (
        value.dtype == buffer.dtype or str(buffer.dtype) in _WIDER.get(str(value.dtype), ()))
    if not same:
        got = f"{value.dtype} {tuple(value.shape)}" if hasattr(value, "shape") else type(value).__name__
        raise OpCallError(f"the op returned {name} as {got}; the family's {name} is {buffer.dtype} "
                          f"{tuple(buffer.shape)}")
    buffer.copy_(value)


class OpForward:
    """`Variant.run` of an op: the op on the inputs as they are (no gradient asked for), its result
    copied into the family's first output."""

    def __init__(self, family, op, order: tuple[str, ...]):
        self.family, self.op, self.order = family, op, order

    def __call__(self, inputs, outputs, shape) -> None:
        args = self.family.op_arguments(inputs, shape)
        name = self.family.outputs[0]
        _copy_checked(outputs[name], result_of(self.op(*(args[n] for n in self.order))), name)


def argument_names(family) -> tuple[str, ...]:
    """Every argument name a mapping may use: `op_params`, then whatever else `op_arguments` gives
    (asked once on meta tensors of the default preset's first shape, in float32 or else the first dtype that
    shape takes - a recorded call has its own: nothing is computed)."""
    shape = family.preset(family.default_preset).shapes[0]
    refused = None
    for dtype in dict.fromkeys((torch.float32, *family.dtypes.values())):
        try:
            inputs = family.make_inputs(shape, dtype, "meta", 0)
        except ValueError as exc:   # not this shape's dtype
            refused = exc
            continue
        return tuple(dict.fromkeys((*family.op_params, *family.op_arguments(inputs, shape))))
    raise refused


def op_variant(name: str, fn, call: CallMap | None, family, why: str, origin: str, where: str) -> Variant:
    """A Variant of kind "op" for `fn` in `family` (BadSpec if the family has no op or the call does not fit)."""
    if not family.op_params:
        raise BadSpec(f"{where}: family {family.name} does not define its op, so it takes kernels only "
                      "(a @triton.jit function)")
    call = call or CallMap(tuple(family.op_params))
    check_call(fn, call, argument_names(family), where)
    op = MappedOp(fn, call)
    return Variant(name=name, family=family.name, why=why, kind="op", run=OpForward(family, op, call.names),
                   origin=origin, op=op, op_order=call.names)
