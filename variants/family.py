"""The family protocol: what a kernel family gives kernel-ab, and what it may leave to the defaults.

`compare/` knows no family by name: every shape, input, buffer, launch and legend comes through `Family`.
A family states what it is (declarations, launchers, reference, presets); how a variant is run and timed is the
checks' (compare/checks/harness.py). This module imports no family, no loading and no comparison code. The abstract
members and the defaults are tabled in variants/README.md (docs/variants-and-families.md, "Writing a family").
"""
from __future__ import annotations

import abc
import dataclasses
import importlib
import math
from typing import Any, Callable, Mapping, Optional

import torch

from variants.inputs import DTYPES, INPUT_KINDS
from variants.operands import Operand, Operands, Output, allocate, declared_bytes, draw_declared, settle
from variants.variant import Variant

# the most elements a shape's input may hold: the kernels index with 32-bit offsets (shapes refuse more
# up front, before anything is allocated)
MAX_ELEMENTS = 2**31 - 1


# a shape's float fields reach the kernels as float32 arguments: beyond these they would arrive as inf or 0
FLOAT32_MAX = 3.4028234663852886e38
FLOAT32_TINY = 1.1754943508222875e-38   # the smallest normal float32


def check_float32(name: str, value: float, positive: bool = False) -> None:
    """ValueError (one line) unless `value` is a finite float a float32 kernel argument holds as given: at
    most FLOAT32_MAX in magnitude and, if `positive` (an eps), at least FLOAT32_TINY."""
    low = FLOAT32_TINY if positive else -FLOAT32_MAX
    if not (isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= FLOAT32_MAX):
        raise ValueError(f"{name} must be a finite number from {low:.2g} to {FLOAT32_MAX:.2g} (the kernels take "
                         f"it as a float32), got {value!r}")


def check_elements(numel: int) -> None:
    """ValueError (one line) for a shape whose input would hold more than MAX_ELEMENTS elements."""
    if numel > MAX_ELEMENTS:
        raise ValueError(f"the input would hold {numel:,} elements; at most {MAX_ELEMENTS:,} "
                         "(2**31 - 1: the kernels index with 32-bit offsets)")


class NotForThisShape(ValueError):
    """Raised by a variant's run for a shape it does not handle by design (a limit its file documents, not a
    fault): the comparison reports it "not run" with this message, where any other exception is "error"."""


class UnknownName(LookupError):
    """A name (variant, preset, family, dtype, input kind) that is not registered; the message names the known ones."""


@dataclasses.dataclass(frozen=True)
class Preset:
    """Named shapes; `x_name` is the shape attribute plots and benchmark rows put on the x axis."""

    name: str
    description: str
    shapes: tuple
    x_name: str = "hidden_size"

    def x_value(self, shape):
        return getattr(shape, self.x_name)


class Family(abc.ABC):
    """A kernel family: everything a comparison of its variants needs. See the module docstring."""

    # ---------------------------------------------------------------- what every family states
    name: str = ""
    presets: Mapping[str, Preset] = {}
    default_preset: str = "default"
    gpu_preset: str = ""          # the shapes the op is used at, which a review on a GPU takes ("": default_preset)
    default_pair: tuple[str, str] = ("", "")
    outputs: tuple[str | Output, ...] = ()   # names after __init__; the declarations in `output_decls`
    operands: tuple[Operand, ...] = ()
    # what the backward reads besides the upstream gradients, by name: operands and saved forward outputs
    # (bytes_moved counts them; (): every operand)
    backward_reads: tuple[str, ...] = ()
    shape_help: str = ""          # the --shape form, e.g. "ROWS,COLS (e.g. 4096,1024)"

    # ---------------------------------------------------------------- defaults
    dtypes: Mapping[str, torch.dtype] = DTYPES
    input_kinds: Mapping[str, Callable[..., torch.Tensor]] = INPUT_KINDS
    accuracy_reference: str = "torch"
    forward_legend: tuple[str, ...] = ()
    grads: tuple[str | Output, ...] = ()     # names after __init__; the declarations in `grad_decls`
    backward_legend: tuple[str, ...] = ()
    backward_pairs_legend: tuple[str, ...] = ()
    forward_params: tuple[str, ...] = ()
    backward_params: tuple[str, ...] = ()
    op_params: tuple[str, ...] = ()           # the op's canonical arguments, in the order torch_op takes them
    op_grads: Mapping[str, str] = {}          # gradient name -> the op argument it is the gradient of
    # for review's mapping by parameter names (compare/review/calls.py): other names libraries give an op
    # argument, and parameters torch's own signature has that the family does not use, with the constant passed
    op_aliases: Mapping[str, tuple[str, ...]] = {}
    op_neutral: Mapping[str, object] = {}

    def __init__(self):
        missing = [a for a in ("name", "presets", "outputs") if not getattr(self, a)]
        if missing or not all(self.default_pair):
            raise TypeError(f"family {self.name or type(self).__name__} does not set {', '.join(missing) or 'default_pair'}")
        if self.default_preset not in self.presets:
            raise ValueError(f"family {self.name}: default preset {self.default_preset!r} is not a preset")
        if self.gpu_preset and self.gpu_preset not in self.presets:
            raise ValueError(f"family {self.name}: GPU preset {self.gpu_preset!r} is not a preset")
        if not self.operands and type(self).make_inputs is Family.make_inputs:
            raise TypeError(f"family {self.name} declares no operands and has no make_inputs")
        settle(self)   # outputs and grads to names, their declarations kept; op_params, op_grads from them
        unknown = set(self.op_grads) - set(self.grads)
        if unknown or set(self.op_grads.values()) - set(self.op_params):
            raise ValueError(f"family {self.name}: op_grads must map its grads to op_params")

    def __repr__(self) -> str:
        return f"<family {self.name}>"

    # ---------------------------------------------------------------- shapes and inputs
    def preset(self, name: str) -> Preset:
        try:
            return self.presets[name]
        except KeyError:
            raise UnknownName(f"unknown preset {name!r} for family {self.name}; "
                              f"known presets: {', '.join(self.presets)}") from None

    @abc.abstractmethod
    def parse_shape(self, text: str, eps: float = 1e-6) -> Preset:
        """A one-shape preset named "custom" from --shape text; ValueError (one line, giving the form) if bad."""

    @abc.abstractmethod
    def shape_from_dict(self, d: dict):
        """The shape whose `as_dict()` is `d`."""

    def check_input_kind(self, kind: str) -> None:
        """ValueError naming the kinds this family draws, for any other kind (never a silent fallback)."""
        if kind not in self.input_kinds:
            raise ValueError(f"family {self.name} has no input kind {kind!r}; its kinds: {', '.join(self.input_kinds)}")

    def make_inputs(self, shape, dtype: torch.dtype, device: str, seed: int, kind: str = "normal") -> Operands:
        """Fresh inputs drawn on the CPU from `seed` (CPU and GPU runs see the same values), moved to `device`.
        On "meta" nothing may be drawn or allocated (IR compiles and compare/comparison/memory.py size huge shapes there).
        Default: the declared `operands`, then the upstream gradients (variants.operands.draw_declared)."""
        return draw_declared(self, shape, dtype, device, seed, kind)

    def upstream(self, inputs: Operands) -> torch.Tensor:
        """The upstream gradient of the op's result in `inputs` (dy)."""
        return inputs[self.output_decls[self.outputs[0]].upstream]

    def overwrites(self, direction: str) -> dict[str, str]:
        """{output: the input it is written over} for the forward's outputs or the backward's gradients."""
        decls = self.output_decls if direction == "forward" else self.grad_decls
        return {name: o.overwrites for name, o in decls.items() if o.overwrites}

    # ---------------------------------------------------------------- forward
    @abc.abstractmethod
    def reference(self, inputs: Operands, shape) -> dict[str, torch.Tensor]:
        """Every output in float64, from the inputs as the kernels see them."""

    def alloc_outputs(self, shape, dtype: torch.dtype, device) -> dict[str, torch.Tensor]:
        """Uninitialised output buffers, keyed as `outputs`: the declared sizes and dtypes."""
        return allocate(self.output_decls, shape, dtype, device)

    def bytes_moved(self, shape, dtype: torch.dtype, mode: str) -> int:
        """The fewest bytes a pass must move through device memory: each input read once, each output written
        once. Default: from the declarations (variants.operands.declared_bytes)."""
        return declared_bytes(self, shape, dtype, mode)

    @abc.abstractmethod
    def launch_forward(self, kernel, inputs: Operands, outputs: dict, shape) -> None:
        """Run a forward kernel (taking `forward_params`) into `outputs`: `kernel[grid](...)`."""

    @abc.abstractmethod
    def variants(self) -> list[Variant]:
        """The family's registered variants."""

    def shared_forward(self):
        """The forward kernel of Triton variants that replace only the backward (None: each brings its own)."""
        return None

    def reads_x_twice(self, shape) -> Optional[bool]:
        """Whether a forward that gives each normalized unit one program must read x twice on `shape` (it does
        not fit on chip), which caps it at 2/3 of copy bandwidth; None: the family does not say."""
        return None

    # ---------------------------------------------------------------- backward
    def shared_backward(self):
        """The backward kernel of Triton variants that replace only the forward (None: no backward)."""
        return None

    def reference_backward(self, inputs: Operands, shape) -> dict[str, torch.Tensor]:
        """Every gradient in float64: autograd through `torch_op` on float64 copies of the float inputs (integer
        ones as they are), upstream gradient in float64."""
        args = {k: (v.detach().to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
                for k, v in self.op_arguments(inputs, shape).items()}
        return self._autograd(self.torch_op, args, self.upstream(inputs).to(torch.float64))

    def alloc_grads(self, shape, dtype: torch.dtype, device) -> dict[str, torch.Tensor]:
        """Uninitialised gradient buffers, each like the op argument it belongs to (as autograd returns them),
        in the declared dtype where a gradient declares one."""
        inputs = self.make_inputs(shape, dtype, "meta", 0)
        args = self.op_arguments(inputs, shape)
        return {g: torch.empty(args[a].shape, dtype=self.grad_decls[g].dtype or args[a].dtype, device=device)
                for g, a in self.op_grads.items()}

    def backward_call(self, kernel, inputs: Operands, saved: dict, grads: dict, shape) -> Callable[[], None]:
        """A closure running the backward kernel `kernel` (taking `backward_params`) into `grads`, from
        the forward's `saved` outputs; workspaces allocated before, zeroed inside if it accumulates."""
        raise NotImplementedError(f"family {self.name} has no backward kernel launcher")

    # ---------------------------------------------------------------- the op
    def op_arguments(self, inputs: Operands, shape) -> dict[str, Any]:
        """The op's canonical arguments (`op_params`) for these inputs; default: the declared operands by name."""
        if self.operands:
            return {o.name: inputs[o.name] for o in self.operands}
        raise NotImplementedError(f"family {self.name} does not define its op's arguments")

    def torch_op(self, *args):
        """The op as torch computes it, taking `op_params` in order; returns the op's result (outputs[0])."""
        raise NotImplementedError(f"family {self.name} does not define its op in torch")

    def _autograd(self, op, args: dict, dy) -> dict[str, torch.Tensor]:
        leaves = {a: args[a].clone().requires_grad_(True) for a in self.op_grads.values()}
        result = op(*({**args, **leaves}[n] for n in self.op_params))
        found = dict(zip(leaves, torch.autograd.grad(result, tuple(leaves.values()), dy)))
        return {g: found[a] for g, a in self.op_grads.items()}

    # ---------------------------------------------------------------- variants, each pass's kernel and launcher
    def triton_variant(self, name: str, why: str, origin: str, forward=None, backward=None,
                       forward_launcher=None, backward_launcher=None) -> Variant:
        """A Triton variant bringing its own forward kernel, backward kernel, or both (and, optionally, the
        family's launchers for them); the pass it does not bring runs the family's shared kernel."""
        fwd = forward if forward is not None else self.shared_forward()
        if fwd is None:
            raise ValueError(f"variant {name}: family {self.name} has no shared forward kernel; give the forward")

        launch = forward_launcher or self.launch_forward

        def run(inputs, outputs, shape, _kernel=fwd):
            launch(_kernel, inputs, outputs, shape)
        return Variant(name=name, family=self.name, why=why, kind="triton", run=run, kernel=forward,
                       backward_kernel=backward, origin=origin, forward_launcher=forward_launcher,
                       backward_launcher=backward_launcher)

    def module_variants(self, listed, forward: str | None = None, backward: str | None = None) -> list[Variant]:
        """A Triton variant for each (name, why) of `listed`, from the module <name> of the family's own package:
        its kernels that module's functions named `forward` and `backward` (None: the family's shared kernel)."""
        found = []
        for name, why in listed:
            # the subclass's package, so the protocol names no family
            module = importlib.import_module(f"{type(self).__module__}.{name}")
            found.append(self.triton_variant(name, why, module.__name__.replace(".", "/") + ".py",
                                             forward=getattr(module, forward) if forward else None,
                                             backward=getattr(module, backward) if backward else None))
        return found

    def forward_kernel_of(self, variant: Variant):
        """The forward kernel a Triton variant runs: its own, else the family's shared one."""
        return variant.kernel if variant.kernel is not None else self.shared_forward()

    def backward_kernel_of(self, variant: Variant):
        """The backward kernel a Triton variant runs: its own, else the family's shared one."""
        return variant.backward_kernel if variant.backward_kernel is not None else self.shared_backward()

    def forward_launch_of(self, variant: Variant) -> Callable[..., None]:
        """How a Triton variant's forward kernel is launched: its own launcher, else `launch_forward`."""
        return variant.forward_launcher or self.launch_forward

    def backward_launch_of(self, variant: Variant) -> Callable[..., Callable[[], None]]:
        """How a Triton variant's backward kernel is launched: its own launcher, else `backward_call`."""
        return variant.backward_launcher or self.backward_call
