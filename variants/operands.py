"""What a family reads and writes, by name: its operands (`Operand`), its outputs and gradients (`Output`),
and one trial's drawn values (`Operands`), the record every variant reads a sealed copy of.

From these declarations the protocol's defaults draw the inputs, allocate buffers, count bytes moved and
pass the op its arguments. variants/README.md tables the protocol.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Union

import torch

# a size from the case's shape: "input" (shape.tensor_shape), "rows" (shape.rows,), "scalar" (), or a callable
SIZES: dict[str, Callable[[Any], tuple]] = {
    "input": lambda s: tuple(s.tensor_shape),
    "rows": lambda s: (s.rows,),
    "scalar": lambda s: (),
}
Size = Union[str, Callable[[Any], tuple]]


def size_of(size: Size, shape) -> tuple[int, ...]:
    """The tensor size `size` names for `shape`."""
    return tuple(size(shape) if callable(size) else SIZES[size](shape))


def _check_size(owner: str, size: Size) -> None:
    if not callable(size) and size not in SIZES:
        raise ValueError(f"{owner}: size {size!r} is not one of {', '.join(SIZES)} or a callable of the shape")


@dataclasses.dataclass(frozen=True)
class Operand:
    """One input of the op. `dtype` None is the case's dtype (--dtype); an integer dtype (int64 targets) is
    drawn as integers and never cast, poisoned or perturbed as a float. `draw`: None takes the family's
    generator of the input kind (`Family.input_kinds`); a callable serves every kind; a mapping, by kind.
    A generator is `(shape, torch.Generator, dtype) -> tensor` of this operand's size (float64 for floats)."""

    name: str
    size: Size = "input"
    dtype: Optional[torch.dtype] = None
    differentiable: bool = False
    draw: Union[None, Callable[..., torch.Tensor], Mapping[str, Callable[..., torch.Tensor]]] = None

    def __post_init__(self):
        _check_size(f"operand {self.name}", self.size)
        if self.differentiable and self.dtype is not None and not self.dtype.is_floating_point:
            raise ValueError(f"operand {self.name}: an integer operand cannot be differentiable")

    @property
    def integer(self) -> bool:
        return self.dtype is not None and not self.dtype.is_floating_point

    def generator(self, family, kind: str) -> Callable[..., torch.Tensor]:
        if self.draw is None:
            return family.input_kinds[kind]
        if callable(self.draw):
            return self.draw
        if kind not in self.draw:
            raise ValueError(f"operand {self.name} of family {family.name} has no generator for input kind {kind!r}")
        return self.draw[kind]


@dataclasses.dataclass(frozen=True)
class Output:
    """One output of a pass (forward output or gradient). `dtype` None: the case's dtype (a callable:
    `dtype(shape, case dtype)`, for an output whose dtype a shape's mode decides). `of`: for a gradient, the
    operand it is the gradient of. `overwrites`: the input this output is written over (the kernel stores the output
    in its place; the launcher hands it the input's values in the output's buffer). `upstream`: this output's
    upstream gradient among the inputs, drawn standard normal (the op's result has one: default "d" + its name)."""

    name: str
    size: Size = "input"
    dtype: Union[None, torch.dtype, Callable[[Any, torch.dtype], torch.dtype]] = None
    of: Optional[str] = None
    overwrites: Optional[str] = None
    upstream: Optional[str] = None

    def __post_init__(self):
        _check_size(f"output {self.name}", self.size)


def declare(items) -> tuple[tuple[str, ...], dict[str, Output]]:
    """(names, {name: Output}) of a family's outputs or grads given as names or `Output`s."""
    decls = {}
    for item in items:
        o = item if isinstance(item, Output) else Output(item)
        decls[o.name] = o
    return tuple(decls), decls


def settle(family) -> None:
    """A family's declarations made whole (Family.__init__): `outputs` and `grads` become names with their
    `Output`s in `output_decls` and `grad_decls`; with a backward, the op's result has an upstream gradient
    (default "d" + its name); op_params and op_grads default to the operands and the grads' `of`."""
    family.outputs, family.output_decls = declare(family.outputs)
    family.grads, family.grad_decls = declare(family.grads)
    first = family.output_decls[family.outputs[0]]
    if family.grads and first.upstream is None:
        family.output_decls[first.name] = dataclasses.replace(first, upstream="d" + first.name)
    names = [o.name for o in family.operands]
    family.op_params = family.op_params or tuple(names)
    family.op_grads = family.op_grads or {g: o.of for g, o in family.grad_decls.items() if o.of}
    for o in (*family.output_decls.values(), *family.grad_decls.values()):
        if names and o.overwrites and o.overwrites not in names:
            raise ValueError(f"family {family.name}: {o.name} overwrites {o.overwrites!r}, not one of its operands")
    differentiable = {o.name for o in family.operands if o.differentiable}
    for g, o in family.grad_decls.items():
        if names and o.of and o.of not in differentiable:
            raise ValueError(f"family {family.name}: {g} is the gradient of {o.of!r}, not a differentiable operand")


class Operands:
    """One trial's values by name (`inputs.x`, `inputs["x"]`): the operands, then the upstream gradients
    (`upstream` names them), with the seed and input kind they were drawn from, the case's dtype and the device.
    A value may be None (an operand the family leaves out, such as a bias)."""

    __slots__ = ("values", "seed", "kind", "dtype", "device", "upstream")

    def __init__(self, values: Mapping[str, Optional[torch.Tensor]], seed: int = 0, kind: str = "normal",
                 dtype: Optional[torch.dtype] = None, device=None, upstream: tuple[str, ...] = ()):
        first = next((t for t in values.values() if isinstance(t, torch.Tensor) and t.is_floating_point()), None)
        for slot, value in (("values", dict(values)), ("seed", seed), ("kind", kind), ("upstream", tuple(upstream)),
                            ("dtype", dtype if dtype is not None else getattr(first, "dtype", None)),
                            ("device", device if device is not None else getattr(first, "device", None))):
            object.__setattr__(self, slot, value)

    def __getattr__(self, name: str):
        if name in Operands.__slots__:   # not set yet (copy, unpickling): no recursion through `values`
            raise AttributeError(name)
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(f"the inputs have no operand {name!r}; they have {', '.join(self.values)}") from None

    def __setattr__(self, name, value):
        raise AttributeError("Operands are immutable: use replace()")

    def __getitem__(self, name: str):
        return self.values[name]

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def __reduce__(self):
        return (_rebuild, (self.values, self.seed, self.kind, self.dtype, self.device, self.upstream))

    def __repr__(self) -> str:
        said = ", ".join(f"{k}={'None' if t is None else f'{str(t.dtype)[6:]}{list(t.shape)}'}" for k, t in self.values.items())
        return f"Operands({said}, seed={self.seed}, kind={self.kind!r})"

    def named_tensors(self) -> dict[str, torch.Tensor]:
        """Every tensor by name, operands and upstream gradients (the ones compare.runtime.sealing copies and checks)."""
        return {k: t for k, t in self.values.items() if isinstance(t, torch.Tensor)}

    def replace(self, **values) -> "Operands":
        unknown = set(values) - set(self.values)
        if unknown:
            raise KeyError(f"no operand {sorted(unknown)[0]!r} to replace; operands: {', '.join(self.values)}")
        return Operands({**self.values, **values}, self.seed, self.kind, self.dtype, self.device, self.upstream)


def _rebuild(values, seed, kind, dtype, device, upstream) -> Operands:
    return Operands(values, seed, kind, dtype, device, upstream)


def draw_declared(family, shape, dtype: torch.dtype, device, seed: int, kind: str) -> Operands:
    """A trial's inputs from the family's declarations: each operand in order from its generator, then each
    upstream gradient standard normal, all from one stream seeded with `seed`, drawn on the CPU and moved
    to `device`. On "meta" nothing is drawn: tensors of the declared sizes and dtypes."""
    family.check_input_kind(kind)
    meta = torch.device(device).type == "meta"
    gen = torch.Generator().manual_seed(seed)
    values: dict[str, torch.Tensor] = {}
    for op in family.operands:
        size, want = size_of(op.size, shape), op.dtype or dtype
        if meta:
            values[op.name] = torch.empty(size, dtype=want, device="meta")
            continue
        t = op.generator(family, kind)(shape, gen, want)
        if tuple(t.shape) != size:
            raise ValueError(f"family {family.name}: the {kind} generator of operand {op.name} gave size "
                             f"{tuple(t.shape)}, the declaration says {size}")
        if op.integer and t.is_floating_point():   # integers are drawn as integers, never rounded from floats
            raise ValueError(f"family {family.name}: operand {op.name} is {op.dtype}, its generator gave {t.dtype}")
        values[op.name] = t.to(dtype=want, device=device)
    upstream = []
    for o in (o for o in family.output_decls.values() if o.upstream):
        size, want = size_of(o.size, shape), o.dtype or dtype
        t = (torch.empty(size, dtype=want, device="meta") if meta
             else torch.randn(size, generator=gen, dtype=torch.float64).to(dtype=want, device=device))
        values[o.upstream] = t
        upstream.append(o.upstream)
    return Operands(values, seed, kind, dtype, device, tuple(upstream))


def allocate(decls: Mapping[str, Output], shape, dtype: torch.dtype, device, like=None) -> dict[str, torch.Tensor]:
    """Uninitialised buffers of the declared sizes; dtype: the declaration's, else (a gradient) its operand's
    in `like` (the trial's inputs), else the case's."""
    def dtype_of(o: Output) -> torch.dtype:
        if callable(o.dtype):
            return o.dtype(shape, dtype)
        if o.dtype is not None:
            return o.dtype
        source = like[o.of] if like is not None and o.of is not None and o.of in like else None
        return source.dtype if isinstance(source, torch.Tensor) else dtype
    return {name: torch.empty(size_of(o.size, shape), dtype=dtype_of(o), device=device) for name, o in decls.items()}


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def declared_bytes(family, shape, dtype: torch.dtype, mode: str) -> int:
    """Bytes a pass moves by the declarations: forward, the operands read and the outputs written; backward,
    the upstream gradients and the operands read (or `family.backward_reads`) and the gradients written;
    full: the operands, the op's results (outputs with an upstream gradient), the upstream gradients and the
    gradients, each once (what a forward saves for its backward is a design's: a fused pass need not move it)."""
    from variants.variant import MODES
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
    inputs = family.make_inputs(shape, dtype, "meta", 0)
    operands = nbytes(inputs[o.name] for o in family.operands)
    outputs = family.alloc_outputs(shape, dtype, "meta")
    forward = operands + nbytes(outputs.values())
    read = nbytes(inputs[n] if n in inputs else outputs[n] for n in family.backward_reads) if family.backward_reads \
        else operands
    upstream = nbytes(inputs[n] for n in inputs.upstream)
    grads = nbytes(family.alloc_grads(shape, dtype, "meta").values())
    backward = upstream + read + grads
    if mode != "full":
        return {"forward": forward, "backward": backward}[mode]
    results = nbytes(outputs[name] for name, o in family.output_decls.items() if o.upstream)
    return operands + results + upstream + grads
