"""The group-norm family (shared/specs/group_norm.md): shapes, presets, input kinds, reference,
bytes moved, the shared launcher, the backward pass (float64 autograd reference, and the runner that
puts each variant's forward in front of the shared backward kernel), and the registered variants.

Every Triton variant has the spec's forward signature, so `launch_forward` runs any of them,
including kernels loaded from elsewhere that follow it.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
import time
from typing import Callable

import torch

from variants import Family, Variant

BLOCK_CAP = 65536
OUTPUTS = ("y", "mean", "rstd")


@dataclasses.dataclass(frozen=True)
class Shape:
    """A group-norm problem: input (batch, channels, *spatial), `num_groups` groups."""

    batch: int
    channels: int
    num_groups: int
    spatial: tuple[int, ...]
    eps: float = 1e-6

    def __post_init__(self):
        for field, value in (("batch", self.batch), ("channels", self.channels), ("num_groups", self.num_groups)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}")
        if not self.spatial or any((not isinstance(s, int)) or s < 1 for s in self.spatial):
            raise ValueError(f"spatial sizes must be positive integers, got {self.spatial!r}")
        if self.channels % self.num_groups:
            raise ValueError(f"channels ({self.channels}) must be divisible by num_groups ({self.num_groups}); "
                             f"divisors of {self.channels} are {', '.join(map(str, _divisors(self.channels)))}")
        if not self.eps > 0:
            raise ValueError(f"eps must be positive, got {self.eps!r}")

    @property
    def channels_per_group(self) -> int:
        return self.channels // self.num_groups

    @property
    def spatial_size(self) -> int:
        return math.prod(self.spatial)

    @property
    def hidden_size(self) -> int:
        return self.channels_per_group * self.spatial_size

    @property
    def numel(self) -> int:
        return self.batch * self.channels * self.spatial_size

    @property
    def block_size(self) -> int:
        return min(BLOCK_CAP, triton_next_power_of_2(self.hidden_size))

    @property
    def label(self) -> str:
        spatial = "x".join(map(str, self.spatial))
        return f"N{self.batch} C{self.channels} G{self.num_groups} S{spatial}"

    def as_dict(self) -> dict:
        return {"batch": self.batch, "channels": self.channels, "num_groups": self.num_groups,
                "spatial": list(self.spatial), "eps": self.eps}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def triton_next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    description: str
    shapes: tuple[Shape, ...]
    x_name: str = "channels"

    def x_value(self, shape: Shape):
        return getattr(shape, self.x_name)


def _seed_sweep(batch: int, spatial: int, channels: tuple[int, ...]) -> tuple[Shape, ...]:
    return tuple(Shape(batch, c, c // 4, (spatial,)) for c in channels)


PRESETS = {p.name: p for p in (
    Preset("default", "the seed's structure (4 channels per group, channel sweep) at a size the CPU "
           "interpreter runs in seconds", _seed_sweep(2, 256, (32, 64, 128))),
    Preset("seed", "the seed's benchmark sweep: batch 128, spatial 512, 4 channels per group, "
           "channels 32..2048, eps 1e-6", _seed_sweep(128, 512, (32, 64, 128, 256, 512, 1024, 2048))),
    Preset("seed512", "the seed's 512-channel shape alone", _seed_sweep(128, 512, (512,))),
    Preset("edge", "edge cases: 1 channel of 1 element; hidden size not a power of two; a group "
           "larger than BLOCK_SIZE's cap (both passes loop more than once); batch 1",
           (Shape(2, 1, 1, (1,)), Shape(3, 6, 2, (7, 5)), Shape(2, 2, 1, (300, 300)), Shape(1, 8, 2, (16,))),
           x_name="hidden_size"),
    Preset("image", "an image-model shape: batch 16, 320 channels, 32 groups, 64x64",
           (Shape(16, 320, 32, (64, 64)),), x_name="hidden_size"),
)}

def parse_shape(text: str, eps: float = 1e-6) -> Preset:
    """A one-shape preset from 'BATCH,CHANNELS,GROUPS,SPATIAL' with SPATIAL like 64x64 (ValueError if bad)."""
    parts = text.split(",")
    try:
        if len(parts) != 4:
            raise ValueError
        batch, channels, groups = (int(p) for p in parts[:3])
        spatial = tuple(int(s) for s in parts[3].lower().split("x"))
    except ValueError:
        raise ValueError(f"--shape {text!r} is not BATCH,CHANNELS,GROUPS,SPATIAL (for example 16,320,32,64x64)") from None
    shape = Shape(batch, channels, groups, spatial, eps)
    return Preset("custom", f"the one shape {shape.label}", (shape,))


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclasses.dataclass(frozen=True)
class Inputs:
    x: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    seed: int
    kind: str
    dy: torch.Tensor | None = None    # upstream gradient for the backward pass, standard normal


def _normal(shape: Shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal values: the easy case."""
    return torch.randn(shape.batch, shape.channels, *shape.spatial, generator=gen, dtype=torch.float64)


def _grouped(shape: Shape, t: torch.Tensor) -> torch.Tensor:
    return t.view(shape.batch, shape.num_groups, -1)


def _large_mean(shape: Shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """1000 + s * randn: a mean large against the spread, where var = E[x^2] - E[x]^2 cancels
    catastrophically. s = 0.01, or 16 units in the last place of 1000 in `dtype` where that is
    larger (float16: 8, bfloat16: 64), so that the spread survives the cast to the dtype."""
    spread = max(0.01, 16 * _ulp_at(1000.0, dtype))
    return 1000.0 + spread * _normal(shape, gen)


def _all_equal(shape: Shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Every even-numbered group of every sample holds one value repeated (var = 0, so
    rstd = 1/sqrt(eps) and y = B exactly); odd-numbered groups are standard normal. The values are
    drawn as 4 * randn, so most are not exactly representable squares."""
    x = _normal(shape, gen)
    g = _grouped(shape, x)
    const = 4.0 * torch.randn(shape.batch, shape.num_groups, 1, generator=gen, dtype=torch.float64)
    g[:, 0::2, :] = const[:, 0::2, :].to(dtype).to(torch.float64)
    return x


def _huge(shape: Shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Magnitudes near the top of the dtype's range: random sign, |x| uniform in
    [finfo.max / 16, finfo.max / 8]. Every value is representable; a float32 sum of squares (and for
    float32 and bfloat16 even the plain sum) of such values overflows, which the float64 reference
    does not."""
    top = torch.finfo(dtype).max
    n = _normal(shape, gen)
    u = torch.rand(n.shape, generator=gen, dtype=torch.float64)
    return torch.sign(n) * (top / 16) * (1.0 + u)


def _tiny(shape: Shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Tiny magnitudes: 8 * (smallest normal of the dtype) * randn, so some values are subnormal
    and every square underflows (var << eps, so rstd is about 1/sqrt(eps))."""
    return 8.0 * torch.finfo(dtype).tiny * _normal(shape, gen)


def _nonfinite(shape: Shape, gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal, with a NaN in one group, a +Inf in another and a -Inf in a third (of
    sample 0; fewer groups, fewer kinds), each at a seeded position. The reference's outputs are
    non-finite exactly in those groups; a kernel must be non-finite there and nowhere else."""
    x = _normal(shape, gen)
    g = _grouped(shape, x)
    h = g.shape[-1]
    for group, value in zip(range(shape.num_groups), (float("nan"), float("inf"), float("-inf"))):
        pos = int(torch.randint(h, (1,), generator=gen))
        g[0, group, pos] = value
    return x


def _ulp_at(value: float, dtype: torch.dtype) -> float:
    """The spacing of `dtype` at the normal number `value`."""
    return float(torch.finfo(dtype).eps) * 2.0 ** math.floor(math.log2(abs(value)))


# name -> generator(shape, torch.Generator, dtype) -> float64 tensor (cast to the dtype by make_inputs)
INPUT_KINDS: dict[str, Callable[..., torch.Tensor]] = {
    "normal": _normal,
    "large_mean": _large_mean,
    "all_equal": _all_equal,
    "huge": _huge,
    "tiny": _tiny,
    "nonfinite": _nonfinite,
}


def make_inputs(shape: Shape, dtype: torch.dtype, device: str, seed: int, kind: str = "normal") -> Inputs:
    """Fresh inputs for one trial, drawn on the CPU from `seed` (so CPU and GPU runs see the same
    values) and moved to `device` in `dtype`: x from the generator of input `kind` (INPUT_KINDS), then
    W, B and the upstream gradient dy (for the backward pass) from the same seeded stream."""
    if kind not in INPUT_KINDS:
        raise ValueError(f"unknown input kind {kind!r}; known kinds: {', '.join(INPUT_KINDS)}")
    gen = torch.Generator().manual_seed(seed)
    x = INPUT_KINDS[kind](shape, gen, dtype)
    weight = 1.0 + 0.5 * torch.randn(shape.channels, generator=gen, dtype=torch.float64)
    bias = 0.5 * torch.randn(shape.channels, generator=gen, dtype=torch.float64)
    dy = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    x, weight, bias, dy = (t.to(dtype=dtype, device=device) for t in (x, weight, bias, dy))
    return Inputs(x, weight, bias, seed=seed, kind=kind, dy=dy)


def reference(inputs: Inputs, shape: Shape) -> dict[str, torch.Tensor]:
    """y, mean and rstd in float64, on the inputs' device, from the inputs as the kernels see them."""
    x, w, b = (t.detach().to(torch.float64) for t in (inputs.x, inputs.weight, inputs.bias))
    groups = x.reshape(shape.batch, shape.num_groups, -1)
    mean = groups.mean(dim=-1)
    var = groups.var(dim=-1, unbiased=False)
    rstd = 1.0 / torch.sqrt(var + shape.eps)
    y = torch.nn.functional.group_norm(x, shape.num_groups, w, b, shape.eps)
    return {"y": y, "mean": mean, "rstd": rstd}


def alloc_outputs(shape: Shape, dtype: torch.dtype, device: str) -> dict[str, torch.Tensor]:
    """Uninitialised output buffers: y in the input's dtype, mean and rstd in float32."""
    return {
        "y": torch.empty(shape.batch, shape.channels, *shape.spatial, dtype=dtype, device=device),
        "mean": torch.empty(shape.batch, shape.num_groups, dtype=torch.float32, device=device),
        "rstd": torch.empty(shape.batch, shape.num_groups, dtype=torch.float32, device=device),
    }


def bytes_moved(shape: Shape, dtype: torch.dtype, mode: str) -> int:
    """The fewest bytes a pass must move through device memory: each input read once, each output
    written once. forward: x, W, B in; y, mean, rstd out. backward: x, dy, W, mean, rstd in; dx, dW,
    dB out. full: both."""
    es = torch.empty((), dtype=dtype).element_size()
    stats = 2 * shape.batch * shape.num_groups * 4
    forward = 2 * shape.numel * es + 2 * shape.channels * es + stats
    backward = 3 * shape.numel * es + shape.channels * es + stats + 2 * shape.channels * 4
    if mode == "forward":
        return forward
    if mode == "backward":
        return backward
    if mode == "full":
        return forward + backward
    raise ValueError(f"unknown mode {mode!r}; known modes: forward, backward, full")


# The spec's forward signature: what `launch_forward` passes, in this order (BLOCK_SIZE by name).
FORWARD_PARAMS = (
    "Y_ptr", "Y_row_stride", "Y_col_stride",
    "X_ptr", "X_row_stride", "X_col_stride",
    "Mean_ptr", "Mean_row_stride", "Mean_col_stride",
    "RSTD_ptr", "RSTD_row_stride", "RSTD_col_stride",
    "W_ptr", "B_ptr",
    "hidden_size", "channels_per_group", "eps",
    "BLOCK_SIZE",
)


def launch_forward(kernel, inputs: Inputs, outputs: dict[str, torch.Tensor], shape: Shape) -> None:
    """The shared launcher: one program per (batch, group) over the (batch, groups, hidden) view."""
    n, g, h = shape.batch, shape.num_groups, shape.hidden_size
    x = inputs.x.contiguous().view(n, g, h)
    y = outputs["y"].view(n, g, h)
    mean, rstd = outputs["mean"], outputs["rstd"]
    kernel[(n, g)](
        y, y.stride(0), y.stride(1),
        x, x.stride(0), x.stride(1),
        mean, mean.stride(0), mean.stride(1),
        rstd, rstd.stride(0), rstd.stride(1),
        inputs.weight, inputs.bias,
        h, shape.channels_per_group, shape.eps,
        BLOCK_SIZE=shape.block_size,
    )


def torch_forward(inputs: Inputs, outputs: dict[str, torch.Tensor], shape: Shape) -> None:
    """The eager baseline: aten's native_group_norm, which also returns mean and rstd."""
    y, mean, rstd = torch.native_group_norm(inputs.x, inputs.weight, inputs.bias, shape.batch,
                                            shape.channels, shape.spatial_size, shape.num_groups, shape.eps)
    outputs["y"].copy_(y)
    outputs["mean"].copy_(mean.view(shape.batch, shape.num_groups))
    outputs["rstd"].copy_(rstd.view(shape.batch, shape.num_groups))


def _allow_recompiles(limit: int = 256) -> None:
    """One compiled function serves every shape of a preset (dynamic=False: one graph per shape). Past
    dynamo's recompile limit (8 by default) it would silently run eager torch under the inductor name."""
    import torch._dynamo
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name) and getattr(torch._dynamo.config, name) < limit:
            setattr(torch._dynamo.config, name, limit)


class InductorForward:
    """The torch baseline through torch.compile; compiles on first call and records how long it took."""

    def __init__(self):
        self._compiled = None
        self._autograd = None
        self.compile_seconds: float | None = None

    def autograd_function(self):
        """torch.nn.functional.group_norm through torch.compile, for the timed backward (compiled on first call)."""
        if self._autograd is None:
            _allow_recompiles()
            self._autograd = torch.compile(torch.nn.functional.group_norm, dynamic=False)
        return self._autograd

    def __call__(self, inputs: Inputs, outputs: dict[str, torch.Tensor], shape: Shape) -> None:
        first = self._compiled is None
        if first:
            _allow_recompiles()
            self._compiled = torch.compile(torch.native_group_norm, dynamic=False)
            start = time.perf_counter()
        y, mean, rstd = self._compiled(inputs.x, inputs.weight, inputs.bias, shape.batch, shape.channels,
                                       shape.spatial_size, shape.num_groups, shape.eps)
        if first:
            torch.cuda.synchronize()
            self.compile_seconds = time.perf_counter() - start
        outputs["y"].copy_(y)
        outputs["mean"].copy_(mean.view(shape.batch, shape.num_groups))
        outputs["rstd"].copy_(rstd.view(shape.batch, shape.num_groups))


GRADS = ("dx", "dW", "dB")


def reference_backward(inputs: Inputs, shape: Shape) -> dict[str, torch.Tensor]:
    """dx, dW and dB in float64 on the inputs' device: autograd through float64 group_norm, upstream gradient dy."""
    x, w, b, dy = (t.detach().to(torch.float64) for t in (inputs.x, inputs.weight, inputs.bias, inputs.dy))
    x, w, b = (t.clone().requires_grad_(True) for t in (x, w, b))
    y = torch.nn.functional.group_norm(x, shape.num_groups, w, b, shape.eps)
    dx, dw, db = torch.autograd.grad(y, (x, w, b), dy)
    return {"dx": dx, "dW": dw, "dB": db}


def alloc_grads(shape: Shape, dtype: torch.dtype, device: str) -> dict[str, torch.Tensor]:
    """Uninitialised gradient buffers, all in the input's dtype (as autograd returns them)."""
    return {
        "dx": torch.empty(shape.batch, shape.channels, *shape.spatial, dtype=dtype, device=device),
        "dW": torch.empty(shape.channels, dtype=dtype, device=device),
        "dB": torch.empty(shape.channels, dtype=dtype, device=device),
    }


def backward_unsupported(variant: Variant) -> str | None:
    """Why `run_backward` cannot run this variant's backward, or None if it can."""
    if variant.kind in ("triton", "torch"):
        return None
    return f"no backward for {variant.kind} variants (the spec's backward is the shared Triton kernel)"


def run_backward(variant: Variant, inputs: Inputs, grads: dict[str, torch.Tensor], shape: Shape,
                 backward_kernel=None) -> None:
    """The backward pass of one variant into `grads` (alloc_grads).

    Triton variants: the variant's own forward gives mean and rstd, then the shared backward kernel
    (variants/group_norm/backward.py, or `backward_kernel` of the same signature) computes dx into
    grads["dx"] and atomically adds dW, dB into zeroed float32 buffers, which are then cast to the
    input's dtype. torch: autograd through torch.nn.functional.group_norm in the input's dtype."""
    if variant.kind == "torch":
        x, w, b = (t.detach().clone().requires_grad_(True) for t in (inputs.x, inputs.weight, inputs.bias))
        y = torch.nn.functional.group_norm(x, shape.num_groups, w, b, shape.eps)
        for name, g in zip(GRADS, torch.autograd.grad(y, (x, w, b), inputs.dy)):
            grads[name].copy_(g)
        return
    reason = backward_unsupported(variant)
    if reason:
        raise ValueError(reason)
    from variants.group_norm.backward import group_norm_backward, launch_backward
    forward = alloc_outputs(shape, inputs.x.dtype, inputs.x.device)
    variant.run(inputs, forward, shape)
    dw = torch.zeros(shape.channels, dtype=torch.float32, device=inputs.x.device)
    db = torch.zeros_like(dw)
    launch_backward(backward_kernel or group_norm_backward, inputs.x, inputs.dy, inputs.weight,
                    forward["mean"], forward["rstd"], grads["dx"], dw, db, shape)
    grads["dW"].copy_(dw)
    grads["dB"].copy_(db)


def bench_call(variant: Variant, inputs: Inputs, shape: Shape, mode: str) -> Callable[[], None]:
    """A zero-argument closure that runs one pass of `variant` for timing, buffers allocated up front.

    forward: the variant's forward. backward: for Triton variants the shared backward kernel (dW, dB
    accumulators zeroed each call, as a backward pass must) on the mean and rstd of the variant's own
    forward; for torch and inductor autograd's backward through a graph kept across calls. full: both."""
    if mode not in ("forward", "backward", "full"):
        raise ValueError(f"unknown mode {mode!r}; known modes: forward, backward, full")
    outputs = alloc_outputs(shape, inputs.x.dtype, inputs.x.device)

    def forward():
        variant.run(inputs, outputs, shape)
    if mode == "forward":
        return forward
    if variant.kind == "triton":
        from variants.group_norm.backward import group_norm_backward, launch_backward
        forward()
        dx = torch.empty_like(inputs.x)
        dw = torch.zeros(shape.channels, dtype=torch.float32, device=inputs.x.device)
        db = torch.zeros_like(dw)

        def backward():
            dw.zero_()
            db.zero_()
            launch_backward(group_norm_backward, inputs.x, inputs.dy, inputs.weight, outputs["mean"],
                            outputs["rstd"], dx, dw, db, shape)
        if mode == "backward":
            return backward

        def full():
            forward()
            backward()
        return full
    fn = torch.nn.functional.group_norm if variant.kind == "torch" else variant.run.autograd_function()
    x, w, b = (t.detach().clone().requires_grad_(True) for t in (inputs.x, inputs.weight, inputs.bias))
    if mode == "backward":
        y = fn(x, shape.num_groups, w, b, shape.eps)
        return lambda: torch.autograd.grad(y, (x, w, b), inputs.dy, retain_graph=True)
    return lambda: torch.autograd.grad(fn(x, shape.num_groups, w, b, shape.eps), (x, w, b), inputs.dy)


TRITON_VARIANTS = (
    ("pointer_mutation", "the kernel before the seed's change: base pointers advanced per channel (A)"),
    ("explicit_offset", "the seed's change: explicit channel offsets and a tl.range inner loop (B)"),
    ("explicit_offset_range", "explicit channel offsets only, inner loop still range (edit 1 of B alone)"),
    ("pointer_mutation_tlrange", "pointer mutation kept, inner loop tl.range (edit 2 of B alone)"),
    ("flat", "no channel loop: one tl.range loop over the group, W and B gathered per element"),
)


def triton_variant(name: str, kernel, why: str, origin: str) -> Variant:
    """A Variant for a Triton kernel with the family's forward signature."""
    def run(inputs, outputs, shape, _kernel=kernel):
        launch_forward(_kernel, inputs, outputs, shape)
    return Variant(name=name, family="group_norm", why=why, kind="triton", run=run, kernel=kernel, origin=origin)


def variants() -> list[Variant]:
    found = []
    for name, why in TRITON_VARIANTS:
        module = importlib.import_module(f"variants.group_norm.{name}")
        found.append(triton_variant(name, module.group_norm_forward, why, f"variants/group_norm/{name}.py"))
    found.append(Variant("torch", "group_norm", "torch.native_group_norm, eager, in the input's dtype",
                         "torch", torch_forward, origin="torch"))
    found.append(Variant("inductor", "group_norm", "the torch baseline through torch.compile (GPU only)",
                         "inductor", InductorForward(), needs_gpu=True, origin="torch.compile"))
    return found


FAMILY = Family(
    name="group_norm",
    presets=PRESETS,
    parse_shape=parse_shape,
    default_preset="default",
    default_pair=("pointer_mutation", "explicit_offset"),
    make_inputs=make_inputs,
    reference=reference,
    alloc_outputs=alloc_outputs,
    bytes_moved=bytes_moved,
    bench_call=bench_call,
    triton_variant=triton_variant,
    variants=variants,
    forward_params=FORWARD_PARAMS,
    reference_backward=reference_backward,
    alloc_grads=alloc_grads,
    run_backward=run_backward,
    backward_unsupported=backward_unsupported,
)
