"""Whether a comparison's buffers fit, decided before anything is allocated: each case is sized from
the family's own allocations on the meta device (shapes only, nothing allocated) times the copies a
run holds, against the free memory of the device (torch.cuda.mem_get_info) and of the host
(MemAvailable in /proc/meminfo). The estimate counts the large buffers only, so a case refused here
cannot fit; one that passes may still need more (a variant's own temporaries).
"""
from __future__ import annotations

import dataclasses

import torch

from compare.runtime import sealing
from compare.model.errors import UsageError
from compare.model.vocabulary import BACKWARD, IR, NUMERICS, TIMING, dtype_name

FLOAT64 = 8                 # bytes per element of the float64 reference
PLACEMENTS = 3              # timing: output-buffer sets rotated round by round (TimingConfig.placements)


@dataclasses.dataclass(frozen=True)
class Need:
    """Bytes one case holds at its peak: on the device the kernels run on, and on the host."""

    device: int
    host: int


def _size(tensors) -> tuple[int, int]:
    """(elements, bytes) of the tensors among `tensors` (None and non-tensors left out)."""
    found = [t for t in tensors if isinstance(t, torch.Tensor)]
    return sum(t.numel() for t in found), sum(t.numel() * t.element_size() for t in found)


def meta_sizes(family, shape, dtype, backward: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """(elements, bytes) of one call's inputs, and of its outputs and (`backward`) gradients, sized on the meta
    device: nothing allocated (variants.inputs.draw allocates nothing there)."""
    inputs = family.make_inputs(shape, dtype, "meta", 0)
    outputs = family.alloc_outputs(shape, dtype, "meta")
    grads = family.alloc_grads(shape, dtype, "meta") if backward and family.grads else {}
    return _size(sealing.tensors(inputs).values()), _size([*outputs.values(), *grads.values()])


def case_need(family, shape, dtype: torch.dtype, variants: int, numerics: bool, backward: bool,
              on_gpu: bool) -> Need:
    """What one case of `variants` variants holds. Numerics: the float64 reference of the inputs and
    outputs, a pristine copy of the inputs and the copy a variant runs on, every variant's outputs
    (kept for the pairwise check) and one more set (the run-to-run check). Otherwise (timing, IR):
    the inputs and PLACEMENTS sets of outputs. The inputs are drawn in float64 on the host first."""
    (in_n, in_b), (out_n, out_b) = meta_sizes(family, shape, dtype, backward)
    if numerics:
        held = FLOAT64 * (in_n + out_n) + 2 * in_b + (variants + 1) * out_b
    else:
        held = in_b + PLACEMENTS * out_b
    drawn = FLOAT64 * in_n
    return Need(held, drawn) if on_gpu else Need(held + drawn, held + drawn)


def host_available() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def device_available() -> int:
    return torch.cuda.mem_get_info()[0]


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def refuse_what_cannot_fit(plan, backend) -> None:
    """UsageError (one line, with the estimate) for the first case of the plan (compare.comparison.plan.Plan) whose
    buffers exceed the free memory of the device or the host."""
    family, chosen, preset, dtypes = plan.family, plan.variants, plan.preset, plan.dtypes
    asked = plan.request.timing.modes
    checks = set(plan.checks)
    numerics = bool(checks & {NUMERICS, BACKWARD})
    timed = TIMING in checks and backend.gpu   # timing runs on a GPU only
    # the IR compiles on meta tensors; only ops are run, on real ones, to find the kernels they launch
    if not (numerics or timed or (IR in checks and any(v.kind == "op" for v in chosen))):
        return
    grads = BACKWARD in checks or (timed and (not asked or set(asked) - {"forward"}))
    # the accuracy reference point (torch) joins the numerics when not named
    variants = len(chosen) + (family.accuracy_reference not in {v.name for v in chosen})
    free = {"host": host_available(), "GPU": device_available() if backend.gpu else None}
    for shape in preset.shapes:
        for dtype in dtypes:
            need = case_need(family, shape, dtype, variants, numerics, bool(grads), backend.gpu)
            for where, needed in (("GPU", need.device if backend.gpu else 0), ("host", need.host)):
                if free[where] is not None and needed > free[where]:
                    name = dtype_name(dtype)
                    raise UsageError(
                        f"the case {shape.label} {name} needs about {_gb(needed)} of {where} memory "
                        f"({variants} variants' buffers{', the float64 reference' if numerics else ''}); "
                        f"{_gb(free[where])} is free; give a smaller --shape or preset, or fewer variants")

