"""Op-level variants: a Python function or an autograd Function's `apply`, compared as its users call it.

`op_variant` makes a Variant of kind "op" from a callable and its argument mapping (`CallMap`): its forward
calls the op and copies the result into the family's first output, its backward runs through autograd, and
its timed passes (`OpPass`) capture themselves in CUDA graphs so Python and autograd overhead stay untimed."""
from __future__ import annotations

import inspect

from variants.spec import BadSpec, CallMap
from variants.variant import NotPlainTensor, OpCallError, Variant  # noqa: F401 (re-exported)

from variants.variant import MODES  # noqa: E402 (one list of passes, the protocol's)


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


class NoGradient(RuntimeError):
    """The op's result carries no gradient (a forward-only function, or a result made outside autograd):
    its backward cannot run through autograd, however the kernels compute."""


def differentiable_result(returned, name: str):
    """The op's result (`result_of`) when autograd can run back through it; NoGradient saying why not."""
    result = result_of(returned)
    many = f"a tuple of {len(returned)}, whose first is " if isinstance(returned, (tuple, list)) else ""
    if not hasattr(result, "requires_grad"):
        raise NoGradient(f"{name} returned {many}{type(result).__name__}, not a tensor: autograd cannot run back through it")
    if not result.requires_grad:
        raise NoGradient(f"{name} returned {many}a tensor without a gradient (made outside autograd: the "
                         "function is forward-only), so its backward cannot run through autograd")
    return result


def result_of(returned):
    """The op's result as timed passes see it (a MappedOp has already picked its output); NotPlainTensor for
    a torch.Tensor subclass, whose work could run when it is read (it is never read)."""
    import torch
    result = returned[0] if isinstance(returned, (tuple, list)) else returned
    if isinstance(result, torch.Tensor) and type(result) is not torch.Tensor:
        raise NotPlainTensor(type(result).__name__)
    return result


def _signature(fn):
    """The parameters a call must fit: an autograd Function's `apply` takes its `forward`'s, ctx left out."""
    owner = getattr(fn, "__self__", None)
    if getattr(fn, "__name__", "") == "apply" and isinstance(owner, type) and hasattr(owner, "forward"):
        params = list(inspect.signature(owner.forward).parameters.values())[1:]
        return inspect.Signature(params)
    return inspect.signature(fn)


def check_call(fn, call: CallMap, known: tuple[str, ...], where: str) -> None:
    """BadSpec (one line) unless `call` names only arguments the family gives and fits `fn`'s
    signature where Python can read it (an autograd Function's by its `forward`)."""
    unknown = [n for n in call.names if n not in known]
    if unknown:
        raise BadSpec(f"{where}: {unknown[0]!r} is not an argument of the family's op; arguments: {', '.join(known)}")
    try:
        signature = _signature(fn)
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


class OpPass:
    """One timed pass of an op on fixed inputs. forward: the op as training calls it; backward:
    autograd's backward through one forward's graph, kept across calls; full: both."""

    prefers_graph = True   # an op-level call's host overhead can exceed a small kernel's time
    timed_code = None      # what an op launches is not known, so no two ops are ever "identical timed code"

    def __init__(self, family, variant: Variant, inputs, shape, mode: str):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
        self.mode = mode
        self.call, leaves = family.op_call(variant.op, inputs, shape, variant.op_order or None)
        self.leaves = tuple(leaves.values())
        self.dy = family.upstream(inputs)
        self._kept: list = []        # what a captured graph reads or writes: kept alive with the graph
        self._y = self._forward() if mode == "backward" else None
        self.first = family.outputs[0]
        self.grad_names = tuple(g for a in leaves for g, of in family.op_grads.items() if of == a)
        self._last = self._static = None   # the last eager call's result, and the captured graph's

    def _forward(self):
        return result_of(self.call())

    def _grad(self, y, retain: bool):
        import torch
        return torch.autograd.grad(differentiable_result(y, "the op"), self.leaves, self.dy, retain_graph=retain)

    def __call__(self) -> None:
        if self.mode == "forward":
            self._last = self._forward()
        elif self.mode == "backward":
            self._last = self._grad(self._y, retain=True)
        else:
            self._last = self._grad(self._forward(), retain=False)

    def timed_outputs(self, graphed: bool = False) -> dict:
        """What the last call wrote, by the family's names: the op's result forward, its gradients otherwise
        (from the captured graph's buffers when replayed)."""
        last = self._static if graphed else self._last
        if last is None:
            return {}
        if self.mode == "forward":
            return {self.first: last}
        return dict(zip(self.grad_names, last))

    def capture_graph(self):
        """A CUDA graph whose replay is this pass (warm-up first, on a side stream); raises if the op cannot be
        captured (say it synchronizes with the host). The backward captures alone on one capture stream after an
        eager forward there: a leaf's AccumulateGrad runs on the stream it was made on, and one made on the
        default stream breaks the capture, so the forward made at __init__ is dropped first."""
        import torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                if self.mode == "forward":
                    self._forward()
                else:
                    self._grad(self._forward(), retain=False)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        capture = torch.cuda.Stream()   # one stream for every capture of this pass (see the backward)
        graph = torch.cuda.CUDAGraph()
        if self.mode == "forward":
            with torch.cuda.graph(graph, stream=capture):
                self._kept.append(self._forward())
        elif self.mode == "full":
            with torch.cuda.graph(graph, stream=capture):
                y = self._forward()
                self._kept.extend((y, self._grad(y, retain=False)))
        else:
            self._y = None   # frees the leaves' gradient nodes made on the default stream (see above)
            with torch.cuda.stream(capture):
                self._y = self._forward()   # eager calls (if the case falls back to them) run from it too
                self._grad(self._y, retain=True)
            torch.cuda.synchronize()
            with torch.cuda.graph(graph, stream=capture):
                self._kept.append(self._grad(self._y, retain=True))
        self._static = self._kept[-1]   # the buffers every replay writes
        torch.cuda.synchronize()
        return graph


def argument_names(family) -> tuple[str, ...]:
    """Every argument name a mapping may use: `op_params`, then whatever else `op_arguments` gives
    (asked once on meta tensors of the default preset's first shape: nothing is computed)."""
    import torch
    shape = family.preset(family.default_preset).shapes[0]
    inputs = family.make_inputs(shape, torch.float32, "meta", 0)
    return tuple(dict.fromkeys((*family.op_params, *family.op_arguments(inputs, shape))))


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
