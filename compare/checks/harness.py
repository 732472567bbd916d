"""How the checks run one variant of a family: its backward (autograd through an op, or its forward then its
backward kernel), an op called on the family's canonical arguments, and the zero-argument closures timing one
pass (`bench_call`), each labelled with the compiled code it times.

Everything here is built from the family protocol (variants/family.py: declarations, launchers, reference);
a family states what it is, the checks decide how to run it."""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from variants.operands import Operands
from variants.variant import MODES, Variant, differentiable_result, result_of


def op_call(family, op, inputs: Operands, shape, order: Optional[tuple[str, ...]] = None):
    """(call, leaves): `call()` runs `op` on the family's canonical arguments in `order` (default op_params);
    the tensors that have gradients are leaves requiring grad (made once, here), so autograd can run
    back to them. They share the inputs' storage (each run's inputs are its own sealed copy), so an op
    that writes into them is seen writing into its inputs."""
    args = family.op_arguments(inputs, shape)
    leaves = {a: args[a].detach().requires_grad_(True) for a in family.op_grads.values()}
    args.update(leaves)
    ordered = tuple(args[n] for n in (order or family.op_params))
    return (lambda: op(*ordered)), leaves


def op_backward(family, op, inputs: Operands, grads: dict, shape, order: Optional[tuple[str, ...]] = None) -> None:
    """Every gradient of `op` through autograd, upstream gradient dy, copied into `grads`."""
    call, leaves = op_call(family, op, inputs, shape, order)
    result = differentiable_result(call(), getattr(getattr(op, "fn", op), "__name__", "the op"))
    found = dict(zip(leaves, torch.autograd.grad(result, tuple(leaves.values()), family.upstream(inputs))))
    for g, a in family.op_grads.items():
        grads[g].copy_(found[a])


def backward_unsupported(family, variant: Variant) -> Optional[str]:
    """Why `run_backward` cannot run this variant's backward, or None if it can."""
    if not family.grads:
        return f"family {family.name} has no backward pass"
    if variant.op is not None:
        return None
    if variant.kind == "triton":
        return None if family.backward_kernel_of(variant) is not None else \
            f"family {family.name} has no shared backward kernel and {variant.name} brings none"
    return f"no backward for {variant.kind} variants without an op"


def run_backward(family, variant: Variant, inputs: Operands, grads: dict, shape) -> None:
    """The backward pass of one variant into `grads`. An op (torch, inductor, op-level variants):
    autograd through it. A Triton variant: its forward gives the saved outputs, then its backward
    kernel (own or shared) runs on them."""
    reason = backward_unsupported(family, variant)
    if reason:
        raise ValueError(reason)
    if variant.op is not None:
        op_backward(family, variant.op, inputs, grads, shape, variant.op_order or None)
        return
    saved = family.alloc_outputs(shape, inputs.dtype, inputs.device)
    variant.run(inputs, saved, shape)
    family.backward_launch_of(variant)(family.backward_kernel_of(variant), inputs, saved, grads, shape)()


def bench_call(family, variant: Variant, inputs: Operands, shape, mode: str,
               buffers: Optional[dict] = None) -> Callable[[], None]:
    """A zero-argument closure timing one pass (`mode`) of `variant`, its buffers allocated up front. A Triton
    backward runs on the saved outputs of the variant's own forward. `buffers` is the case's one shared placement
    (made on first use), so where a buffer lands favours no variant; the closure's `timed_code` keys the compiled
    code it times, None when not known (docs/timing.md). Op-level passes, and torch's and inductor's backward and
    full, are `OpPass`es, which allocate their own (and make their forward on the stream they capture on)."""
    # an OpPass's forward runs on the stream it captures the backward on: the inputs' gradient nodes live where
    # the forward made them (made on the default stream, they broke the capture, and the case was timed eagerly)
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
    if variant.kind == "op":
        return OpPass(family, variant, inputs, shape, mode)
    buffers = {} if buffers is None else buffers
    outputs = _shared(buffers, "outputs", lambda: family.alloc_outputs(shape, inputs.dtype, inputs.device))

    def forward():
        variant.run(inputs, outputs, shape)
    fwd = family.forward_kernel_of(variant) if variant.kind == "triton" else None
    # the run's code is part of the key: a run that wraps the same kernel in more work is other code
    runner = getattr(variant.run, "__code__", variant.run)
    forward_code = (("forward", id(fwd), getattr(fwd, "__name__", ""), id(runner)) if fwd is not None
                    else ("forward", variant.name))
    if mode == "forward":   # Triton variants sharing the family's forward kernel time the same code
        return _timed(forward, None if variant.op is not None else forward_code, outputs)
    if variant.op is not None:   # torch and inductor: through autograd, as op-level variants are
        return OpPass(family, variant, inputs, shape, mode)
    forward()
    grads = _shared(buffers, "grads", lambda: family.alloc_grads(shape, inputs.dtype, inputs.device))
    kernel, launch = family.backward_kernel_of(variant), family.backward_launch_of(variant)
    backward = launch(kernel, inputs, outputs, grads, shape)
    backward_code = ("backward", id(kernel), getattr(kernel, "__name__", ""), getattr(launch, "__name__", ""))
    if mode == "backward":
        return _timed(backward, backward_code, grads)

    def full():
        forward()
        backward()
    return _timed(full, ("full", forward_code, backward_code), grads)


REUSED = ("returns the same output buffer on every call (a persistent buffer, or a result cached by its inputs): "
          "no timed call would own its output; not timed")


class ReusedOutput(Exception):
    """An op whose calls return one buffer (`OpPass.reused_output`): its failure in timing, said why."""


class OpPass:
    """One timed pass of an op on fixed inputs. forward: the op as training calls it; backward:
    autograd's backward through one forward's graph, kept across calls; full: both."""

    prefers_graph = True   # an op-level call's host overhead can exceed a small kernel's time
    timed_code = None      # what an op launches is not known, so no two ops are ever "identical timed code"

    def __init__(self, family, variant: Variant, inputs, shape, mode: str):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
        self.mode = mode
        self.call, leaves = op_call(family, variant.op, inputs, shape, variant.op_order or None)
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
        return torch.autograd.grad(differentiable_result(y, "the op"), self.leaves, self.dy, retain_graph=retain)

    def __call__(self) -> None:
        if self.mode == "forward":
            self._last = self._forward()
        elif self.mode == "backward":
            self._last = self._grad(self._y, retain=True)
        else:
            self._last = self._grad(self._forward(), retain=False)

    def reused_output(self) -> bool:
        """Whether, in a pass through autograd (backward, full), two calls' results share memory while the first
        is still held: the op returns one buffer on every call (a persistent output buffer, or a result cached
        by its inputs), so a graph through one call is lost to the next. Forward, such an op is timed (the
        audit judges a cached answer: compare/checks/audit.py)."""
        if self.mode == "forward":
            return False
        with torch.no_grad():
            first, second = result_of(self.call()), result_of(self.call())
        if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)) or not first.numel():
            return False
        return first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr()

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


def _shared(buffers: dict, key: str, make: Callable[[], Any]) -> Any:
    """The case's buffer under `key`, made on first use, so every variant of the case writes there."""
    if key not in buffers:
        buffers[key] = make()
    return buffers[key]


def _timed(fn: Callable[[], None], code, outputs: dict) -> Callable[[], None]:
    """`fn`, labelled with the compiled code its timed pass runs (None: not known) and with what its calls
    write (`timed_outputs(graphed)`: the same buffers eager or replayed; compare/checks/audit.py reads them)."""
    fn.timed_code = code
    fn.timed_outputs = lambda graphed=False: outputs
    return fn
