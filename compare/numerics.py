"""The numerics comparison: each variant against the float64 reference, and each pair bit by bit.

Every output buffer is filled with a NaN of a distinctive payload before the launch, so an element
the kernel never wrote is told apart from a NaN it computed. Inputs are drawn fresh for every trial.
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterable, Optional

import torch

from compare.backend import Backend, synchronize
from compare.errors import summarize
from compare.results import NumericsCase, OutputError, PairBitwise, VariantNumerics

# assert_close's default tolerances (torch.testing), by dtype
TOLERANCES = {
    torch.float32: (1.3e-6, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float64: (1e-7, 1e-7),
}
# (integer view dtype, poison bit pattern: a quiet NaN with a payload no arithmetic produces)
_POISON = {
    torch.float32: (torch.int32, 0x7FC0DEAD),
    torch.float16: (torch.int16, 0x7E5B),
    torch.bfloat16: (torch.int16, 0x7FA5),
    torch.float64: (torch.int64, 0x7FF8DEADBEEF0001),
}
# (explicit mantissa bits, smallest normal exponent) for units in the last place
_FORMAT = {torch.float32: (23, -126), torch.float16: (10, -14), torch.bfloat16: (7, -126), torch.float64: (52, -1022)}


def poison_(t: torch.Tensor) -> torch.Tensor:
    int_dtype, bits = _POISON[t.dtype]
    t.view(int_dtype).fill_(bits)
    return t


def unwritten_mask(t: torch.Tensor) -> torch.Tensor:
    int_dtype, bits = _POISON[t.dtype]
    return t.view(int_dtype) == bits


def ulp(ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at each (float64) reference value, subnormals included."""
    mantissa, emin = _FORMAT[dtype]
    _, exponent = torch.frexp(ref.abs())
    exponent = torch.clamp(exponent.to(torch.float64) - 1, min=emin)
    return torch.exp2(exponent - mantissa)


def measure(out: torch.Tensor, ref: torch.Tensor, name: str) -> OutputError:
    """Error statistics of one output against its float64 reference."""
    rtol, atol = TOLERANCES[out.dtype]
    unwritten = unwritten_mask(out)
    o = out.detach().to(torch.float64)
    ref = ref.to(o.device, torch.float64)
    written = ~unwritten
    o_fin, r_fin = torch.isfinite(o), torch.isfinite(ref)
    both = o_fin & r_fin & written
    diff = (o - ref).abs()[both]
    r = ref[both]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    ref_norm = float(torch.linalg.vector_norm(r)) if r.numel() else 0.0
    err_norm = float(torch.linalg.vector_norm(diff)) if diff.numel() else 0.0
    rel_l2 = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    max_ulp = float((diff / ulp(r, out.dtype)).max()) if diff.numel() else 0.0
    close = torch.isclose(o, ref, rtol=rtol, atol=atol, equal_nan=True)
    beyond = int((~close & written).sum())
    nan = int((torch.isnan(o) & written).sum())
    inf = int(torch.isinf(o).sum())
    mismatch = int(((o_fin != r_fin) & written).sum())
    return OutputError(name, str(out.dtype).removeprefix("torch."), out.numel(), max_abs, rel_l2, max_ulp,
                       beyond, rtol, atol, nan, inf, mismatch, int(unwritten.sum()))


def merge(errors: list[OutputError]) -> OutputError:
    """Worst case over trials (maxima of errors, sums of counts)."""
    first = errors[0]
    return OutputError(
        first.output, first.dtype, sum(e.numel for e in errors),
        max(e.max_abs for e in errors), max(e.rel_l2 for e in errors), max(e.max_ulp for e in errors),
        sum(e.beyond_tol for e in errors), first.rtol, first.atol, sum(e.nan for e in errors),
        sum(e.inf for e in errors), sum(e.nonfinite_mismatch for e in errors), sum(e.unwritten for e in errors))


def failure_reasons(e: OutputError) -> list[str]:
    reasons = []
    if e.unwritten:
        reasons.append(f"{e.output}: {e.unwritten} of {e.numel} elements never written")
    if e.nonfinite_mismatch:
        reasons.append(f"{e.output}: {e.nonfinite_mismatch} elements non-finite where the reference is finite "
                       f"(or the reverse)")
    if e.beyond_tol:
        reasons.append(f"{e.output}: {e.beyond_tol} of {e.numel} elements beyond rtol {e.rtol:g} / atol {e.atol:g} "
                       f"(max abs error {e.max_abs:.3g})")
    return reasons


def bitwise(a: torch.Tensor, b: torch.Tensor) -> tuple[int, Optional[tuple[int, ...]]]:
    """Number of elements whose raw bits differ, and the index of the first."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return a.numel(), tuple(0 for _ in a.shape)
    int_dtype = _POISON[a.dtype][0]
    differ = a.view(int_dtype) != b.view(int_dtype)
    n = int(differ.sum())
    if not n:
        return 0, None
    flat = int(torch.nonzero(differ.reshape(-1))[0])
    return n, tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape))




def run_case(family, variants, shape, dtype: torch.dtype, backend: Backend, seeds: Iterable[int],
             input_kind: str = "normal", progress: Callable[[str], None] = lambda _: None) -> NumericsCase:
    """Run every variant on fresh inputs for each seed; compare with the reference and pairwise."""
    seeds = tuple(seeds)
    errors: dict[str, list[OutputError]] = {v.name: [] for v in variants}
    status: dict[str, VariantNumerics] = {}
    diffs: dict[tuple[str, str, str], list] = {}
    for v in variants:
        if v.needs_gpu and not backend.gpu:
            status[v.name] = VariantNumerics(v.name, "not_run", ("needs a GPU; this run has none",))
    for seed in seeds:
        inputs = family.make_inputs(shape, dtype, backend.device, seed, input_kind)
        ref = family.reference(inputs, shape)
        produced: dict[str, dict[str, torch.Tensor]] = {}
        for v in variants:
            if v.name in status:
                continue
            progress(f"numerics {shape.label} {dtype} {input_kind} seed {seed}: {v.name}")
            outputs = {k: poison_(t) for k, t in family.alloc_outputs(shape, dtype, backend.device).items()}
            try:
                v.run(inputs, outputs, shape)
                synchronize(backend)
            except Exception as exc:  # a crashing variant is reported, the others still run
                status[v.name] = VariantNumerics(v.name, "error", (summarize(exc),))
                continue
            produced[v.name] = outputs
            for name, t in outputs.items():
                errors[v.name].append(measure(t, ref[name], name))
        if hasattr(progress, "advance"):
            progress.advance()
        for a, b in itertools.combinations(produced, 2):
            for name in produced[a]:
                diffs.setdefault((a, b, name), []).append(bitwise(produced[a][name], produced[b][name]))
    results = []
    for v in variants:
        if v.name in status:
            results.append(status[v.name])
            continue
        by_output: dict[str, list[OutputError]] = {}
        for e in errors[v.name]:
            by_output.setdefault(e.output, []).append(e)
        merged = tuple(merge(es) for es in by_output.values())
        reasons = tuple(r for e in merged for r in failure_reasons(e))
        results.append(VariantNumerics(v.name, "fail" if reasons else "pass", reasons, merged))
    pairs = []
    for (a, b, name), trials in diffs.items():
        if a in status or b in status:
            continue
        numel = _total_numel(errors[a], name)
        first = next((idx for n, idx in trials if n), None)
        pairs.append(PairBitwise(a, b, name, numel, sum(n for n, _ in trials), first))
    return NumericsCase(shape.label, str(dtype).removeprefix("torch."), input_kind, seeds, tuple(results), tuple(pairs))


def _total_numel(errors: list[OutputError], name: str) -> int:
    return sum(e.numel for e in errors if e.output == name)
