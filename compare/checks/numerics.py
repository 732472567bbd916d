"""The numerics comparison: each variant against the float64 reference and each pair bit by bit, forward
or backward, with an accuracy verdict per pair. Outputs are pre-filled with a NaN of a distinctive payload
(an unwritten element is told from a computed NaN); each variant runs twice on its first inputs, so a
difference within its run-to-run spread (atomic adds) is said as such. Dtypes the interpreter does not
compute faithfully (`INTERPRETER_UNTRUSTED`) are not run there for Triton variants."""
from __future__ import annotations

import dataclasses
import itertools
import warnings
from typing import Callable, Iterable, Optional

import torch

from compare.checks import harness, referee
from compare.checks.accuracy import VERDICT_FACTOR, _verdicts, verdict  # noqa: F401 (re-exported)
from compare.checks.failures import classify
from compare.runtime import sealing, supervisor
from compare.runtime.backend import Backend, synchronize
from compare.runtime.progress import Step
from compare.model.results import NumericsCase, OutputError, PairBitwise, RunSpread, VariantNumerics
from compare.model.states import Failure, Status
from compare.model.vocabulary import MANTISSA_BITS, MIN_NORMAL_EXPONENT, dtype_name
from variants.family import NotForThisShape
from variants.variant import NotPlainTensor

# assert_close's default tolerances (torch.testing), by dtype
TOLERANCES = {
    torch.float32: (1.3e-6, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float64: (1e-7, 1e-7),
}

# Dtypes Triton's CPU interpreter does not compute faithfully (found with triton 3.9, pinned by
# tests/test_interpreter_dtypes.py): dtype name -> reason shown instead of numbers.
INTERPRETER_UNTRUSTED = {
    "bfloat16": "not trustworthy on the interpreter: it rounds float32 to bfloat16 by truncation (toward zero) "
                "instead of to nearest even as compiled Triton does, and mis-rounds subnormals",
}

# (integer view dtype, poison bit pattern: a quiet NaN with a payload no arithmetic produces)
_POISON = {
    torch.float32: (torch.int32, 0x7FC0DEAD),
    torch.float16: (torch.int16, 0x7E5B),
    torch.bfloat16: (torch.int16, 0x7FA5),
    torch.float64: (torch.int64, 0x7FF8DEADBEEF0001),
}
# (explicit mantissa bits, smallest normal exponent) for units in the last place
_FORMAT = {getattr(torch, n): (bits, MIN_NORMAL_EXPONENT[n]) for n, bits in MANTISSA_BITS.items()}


def _poison_of(dtype: torch.dtype) -> tuple[torch.dtype, int] | None:
    """(the dtype to view a buffer as, the poison's bits): a NaN payload for floats, the most negative value
    for integers (no index or count is that); None for bool (no value is out of reach)."""
    if dtype in _POISON:
        return _POISON[dtype]
    if dtype == torch.bool or dtype.is_floating_point or dtype.is_complex:
        return None
    return dtype, torch.iinfo(dtype).min


def poison_(t: torch.Tensor) -> torch.Tensor:
    found = _poison_of(t.dtype)
    if found is not None:
        t.view(found[0]).fill_(found[1])
    return t


def unwritten_mask(t: torch.Tensor, stale: torch.Tensor | None = None) -> torch.Tensor:
    """Elements still holding the poison; with `stale` (the input an in-place output is written over), also
    those still holding that input's bits (the caller keeps those only where they are wrong)."""
    found = _poison_of(t.dtype)
    mask = t.view(found[0]) == found[1] if found is not None else torch.zeros(t.shape, dtype=torch.bool, device=t.device)
    if stale is not None:
        mask = mask | same_bits(t, stale.to(t.device))
    return mask


def same_bits(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: the raw bits of a and b are equal (so -0.0 differs from 0.0 and NaN payloads count)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return torch.zeros(a.shape, dtype=torch.bool, device=a.device)
    view = sealing.int_view(a)
    return a == b if view is None else a.contiguous().view(view) == b.contiguous().view(view)


def ulp(ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at each (float64) reference value, subnormals included."""
    mantissa, emin = _FORMAT[dtype]
    _, exponent = torch.frexp(ref.abs())
    exponent = torch.clamp(exponent.to(torch.float64) - 1, min=emin)
    return torch.exp2(exponent - mantissa)


def measure(out: torch.Tensor, ref: torch.Tensor, name: str, tol_dtype: torch.dtype | None = None,
            stale: torch.Tensor | None = None) -> OutputError:
    """Error statistics of one output (any rank, 0-d too) against its float64 reference, at the tolerance
    of `tol_dtype` (default: the output's own dtype; integer outputs must be exact). An element non-finite
    in both is not an error (NaN and Inf must propagate where the reference's do, and nowhere else).
    `stale`: the input an in-place output was written over; an element still holding its bits where the
    reference differs counts as unwritten (where the right answer is those bits, nothing tells them apart)."""
    exact = not out.is_floating_point()
    rtol, atol = (0.0, 0.0) if exact else TOLERANCES[tol_dtype or out.dtype]
    o = out.detach().to(torch.float64)
    ref = ref.to(o.device, torch.float64)
    close = torch.isclose(o, ref, rtol=rtol, atol=atol, equal_nan=True) | (~torch.isfinite(o) & ~torch.isfinite(ref))
    unwritten = unwritten_mask(out)
    if stale is not None:
        unwritten = unwritten | (unwritten_mask(out, stale) & ~close)
    written = ~unwritten
    o_fin, r_fin = torch.isfinite(o), torch.isfinite(ref)
    both = o_fin & r_fin & written
    diff = (o - ref).abs()[both]
    r = ref[both]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    ref_max = float(r.abs().max()) if r.numel() else 0.0
    ref_norm = float(torch.linalg.vector_norm(r)) if r.numel() else 0.0
    err_norm = float(torch.linalg.vector_norm(diff)) if diff.numel() else 0.0
    rel_l2 = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    max_ulp = (max_abs if exact else float((diff / ulp(r, out.dtype)).max())) if diff.numel() else 0.0
    beyond = int((~close & written).sum())
    nan = int((torch.isnan(o) & written).sum())
    inf = int(torch.isinf(o).sum())
    mismatch = int(((o_fin != r_fin) & written).sum())
    return OutputError(name, dtype_name(out.dtype), out.numel(), max_abs, rel_l2, max_ulp,
                       beyond, rtol, atol, nan, inf, mismatch, int(unwritten.sum()), ref_max)


def merge(errors: list[OutputError]) -> OutputError:
    """Worst case over trials (maxima of errors, sums of counts)."""
    first = errors[0]
    return OutputError(
        first.output, first.dtype, sum(e.numel for e in errors),
        max(e.max_abs for e in errors), max(e.rel_l2 for e in errors), max(e.max_ulp for e in errors),
        sum(e.beyond_tol for e in errors), first.rtol, first.atol, sum(e.nan for e in errors),
        sum(e.inf for e in errors), sum(e.nonfinite_mismatch for e in errors), sum(e.unwritten for e in errors),
        max(e.ref_max for e in errors))


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


def bitwise(a: torch.Tensor, b: torch.Tensor) -> tuple[int, Optional[tuple[int, ...]], float]:
    """Number of elements whose raw bits differ, the index of the first, and the largest |a - b|
    among them (inf where one is finite and the other not; two NaNs or equal infinities count 0)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return a.numel(), tuple(0 for _ in a.shape), float("inf")
    differ = ~same_bits(a, b)
    n = int(differ.sum())
    if not n:
        return 0, None, 0.0
    flat = int(torch.nonzero(differ.reshape(-1))[0])
    da, db = a[differ].detach().to(torch.float64), b[differ].detach().to(torch.float64)
    fa, fb = torch.isfinite(da), torch.isfinite(db)
    gap = torch.where(fa & fb, (da - db).abs(), torch.zeros_like(da))
    if bool((fa != fb).any()) or bool(((~fa & ~fb) & ~(da.isnan() & db.isnan()) & (da != db)).any()):
        max_abs = float("inf")
    else:
        max_abs = float(gap.max())
    return n, tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)), max_abs


def interpreter_untrusted(backend: Backend, dtype: torch.dtype) -> str | None:
    """Why Triton kernels in `dtype` cannot be trusted on this backend, or None."""
    if not backend.interpreted:
        return None
    return INTERPRETER_UNTRUSTED.get(dtype_name(dtype))


@dataclasses.dataclass(frozen=True)
class _Pass:
    """One variant's pass as the numerics check runs it. An op-level variant returns the family's first
    output only, so its forward is measured on that."""

    unsupported: Optional[str]                      # why the variant cannot run this pass (None: it can)
    alloc: Callable[[], dict[str, torch.Tensor]]   # its output buffers
    run: Callable[[dict, dict], None]              # run(inputs, outputs)
    reference: Callable[[dict], dict[str, torch.Tensor]]   # the float64 reference of the pass


def pass_of(family, v, direction: str, shape, dtype, device) -> _Pass:
    """`v`'s `direction` pass as the numerics run it, its buffers on `device` (the timing audit's checked run too)."""
    if direction == "forward":
        first = family.outputs[0]
        return _Pass(None, lambda: {k: t for k, t in family.alloc_outputs(shape, dtype, device).items()
                                    if v.kind != "op" or k == first},
                     lambda inputs, out: v.run(inputs, out, shape), lambda inputs: family.reference(inputs, shape))
    return _Pass(harness.backward_unsupported(family, v), lambda: family.alloc_grads(shape, dtype, device),
                 lambda inputs, out: harness.run_backward(family, v, inputs, out, shape),
                 lambda inputs: family.reference_backward(inputs, shape))


@dataclasses.dataclass
class _Tally:
    """What one variant gave over the trials of a case, until it is said as a VariantNumerics."""

    runner: _Pass
    errors: list[OutputError] = dataclasses.field(default_factory=list)   # per output per trial
    written: list = dataclasses.field(default_factory=list)   # the inputs it wrote into, per trial
    spread: Optional[dict[str, RunSpread]] = None   # its run-to-run spread (first trial), once measured
    ended: Optional[VariantNumerics] = None          # decided before every trial ran: not run, untrusted, failed


@dataclasses.dataclass
class _Case:
    """One numerics case being run: what every trial of it shares, and the pairs' bitwise trials."""

    family: object
    shape: object
    dtype: torch.dtype
    backend: Backend
    direction: str
    input_kind: str
    progress: Step
    overwrites: dict[str, str]    # output -> the input it is written over by design (Family.overwrites)
    expected: set[str]            # the inputs whose writes are no fault
    fouls: list = dataclasses.field(default_factory=list)
    diffs: dict[tuple[str, str, str], list] = dataclasses.field(default_factory=dict)   # (a, b, output) -> trials

    def what(self, seed: int) -> str:
        return (f"numerics {self.direction} {self.shape.label} {dtype_name(self.dtype)} "
                f"{self.input_kind} seed {seed}")


def run_case(family, variants, shape, dtype: torch.dtype, backend: Backend, seeds: Iterable[int],
             input_kind: str = "normal", progress: Step = Step(),
             direction: str = "forward", reference: str = "", draw=None) -> NumericsCase:
    """Run every variant on fresh inputs for each seed; compare with the reference and pairwise.

    direction "forward" checks the family's outputs; "backward" its gradients (harness.run_backward).
    `reference`, if one of the variants, is the one every other variant also gets a verdict against.
    `draw(shape, dtype, seed, kind)` gives a trial's inputs (compare.checks.draws); default: drawn here."""
    if direction not in ("forward", "backward"):
        raise ValueError(f"unknown direction {direction!r}; known: forward, backward")
    seeds = tuple(seeds)
    # outputs written over an input by design (Family.overwrites): that input's write is no fault, and the
    # output's buffer starts as the input's values, so an element still holding them (and wrong) is unwritten
    overwrites = family.overwrites(direction)
    expected = set(overwrites.values())
    if direction == "backward":   # a backward pass runs its forward first: the forward's documented writes too
        expected |= set(family.overwrites("forward").values())
    case = _Case(family, shape, dtype, backend, direction, input_kind, progress, overwrites, expected)
    tallies = {v.name: _tally(case, v) for v in variants}
    ref_fn = next((t.runner.reference for t in tallies.values()), None)
    for seed in seeds:
        if all(t.ended is not None for t in tallies.values()):
            break
        # every run reads a copy of these (compare.runtime.sealing): no variant's writes reach another
        pristine = draw(shape, dtype, seed, input_kind) if draw else \
            family.make_inputs(shape, dtype, backend.device, seed, input_kind)
        kept = {v.name: stowed for v in variants if tallies[v.name].ended is None
                and (stowed := _trial(case, v, tallies[v.name], pristine, seed)) is not None}
        produced = _measured(kept, ref_fn, pristine, overwrites, dtype, tallies)
        for a, b in itertools.combinations(produced, 2):
            for name in [n for n in produced[a] if n in produced[b]]:   # an op gives only its result
                case.diffs.setdefault((a, b, name), []).append(bitwise(produced[a][name], produced[b][name]))
    results = [_said(v.name, tallies[v.name]) for v in variants]
    pairs = _pairs(case.diffs, tallies)
    verdicts = _verdicts(results, pairs, reference, dtype)
    return NumericsCase(shape.label, dtype_name(dtype), input_kind, seeds, tuple(results),
                        tuple(pairs), direction, verdicts, reference if reference in tallies else "", tuple(case.fouls))


def _tally(case: _Case, v) -> _Tally:
    """A variant's tally, ended at once where it cannot run in this case (no GPU, an untrusted dtype, no pass)."""
    runner = pass_of(case.family, v, case.direction, case.shape, case.dtype, case.backend.device)
    untrusted = interpreter_untrusted(case.backend, case.dtype)
    tally = _Tally(runner)
    if v.needs_gpu and not case.backend.gpu:
        tally.ended = VariantNumerics(v.name, Status.NOT_RUN, ("needs a GPU; this run has none",))
    elif untrusted and v.kind in ("triton", "op"):   # an op launches Triton kernels too
        tally.ended = VariantNumerics(v.name, Status.UNTRUSTED, (f"{dtype_name(case.dtype)}: {untrusted}",))
    elif runner.unsupported:
        tally.ended = VariantNumerics(v.name, Status.NOT_RUN, (runner.unsupported,))
    return tally


def _trial(case: _Case, v, tally: _Tally, pristine, seed: int) -> Optional[dict[str, referee.Stowed]]:
    """Run `v` once on its own sealed copy of `pristine`: its outputs as bare storage until the reference
    exists (compare/checks/referee.py), or None where the run ended its tally (a failure, a foul, a limit)."""
    dtype = dtype_name(case.dtype)
    case.progress(f"{v.name}: {case.direction} {case.shape.label} {dtype} {case.input_kind} seed {seed}")
    runner, what = tally.runner, case.what(seed)
    allocated = {k: poison_(t) for k, t in runner.alloc().items()}   # measured, whatever `outputs` is made to hold
    outputs = dict(allocated)
    inputs = sealing.sealed_copy(pristine)
    referee.scrub_freed(allocated, poison_)
    try:
        with supervisor.running((v.name,), what), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow/invalid warnings from the
            runner.run(inputs, outputs)                      # interpreter: the measured NaN/Inf say it better
            synchronize(case.backend)
            odd = referee.not_plain(outputs)
            if odd:
                raise NotPlainTensor(odd)
    except NotPlainTensor as exc:   # a foul: the subclass is never read
        case.fouls.append(referee.subclass_finding(v.name, str(exc)))
        tally.ended = VariantNumerics(v.name, Status.ERROR, (f"returned a Tensor subclass ({exc})",),
                                      failure=Failure.FOUL)
        return None
    except NotForThisShape as exc:   # a limit the variant documents, not a fault
        tally.ended = VariantNumerics(v.name, Status.NOT_RUN, (f"not for this shape: {exc}",))
        return None
    except BaseException as exc:  # a failing variant is reported (SystemExit too), the others still run
        why = supervisor.variant_fault(v.name, exc)
        kind = classify(exc, v.import_roots, case.backend.interpreted)
        tally.ended = VariantNumerics(v.name, Status.ERROR, (why,),
                                      writes=sealing.writes(pristine, inputs, case.expected),
                                      failure=kind.kind, failed_at=kind.at)
        return None
    tally.written.append(sealing.writes(pristine, inputs, case.expected))
    if tally.spread is None and case.backend.interpreted and v.kind in ("triton", "op"):
        tally.spread = {}   # the interpreter runs programs one after another: no spread to find
    if tally.spread is None:
        tally.spread = _run_twice(runner.run, runner.alloc, sealing.sealed_copy(pristine), allocated,
                                  case.backend, (v.name, f"{what}, run again"))
    return referee.stow(allocated)


def _said(name: str, tally: _Tally) -> VariantNumerics:
    """The variant's numerics over every trial: the worst of each output, and why it failed."""
    if tally.ended is not None:
        return tally.ended
    by_output: dict[str, list[OutputError]] = {}
    for e in tally.errors:
        by_output.setdefault(e.output, []).append(e)
    merged = tuple(merge(es) for es in by_output.values())
    reasons = tuple(r for e in merged for r in failure_reasons(e))
    return VariantNumerics(name, Status.FAIL if reasons else Status.PASS, reasons, merged,
                           tuple((tally.spread or {}).values()), sealing.merge(tally.written))


def _pairs(diffs: dict[tuple[str, str, str], list], tallies: dict[str, _Tally]) -> list[PairBitwise]:
    """Each pair's bitwise comparison per output, over the trials both gave numbers in."""
    pairs = []
    for (a, b, name), trials in diffs.items():
        if tallies[a].ended is not None or tallies[b].ended is not None:
            continue
        numel = sum(e.numel for e in tallies[a].errors if e.output == name)
        first = next((idx for n, idx, _ in trials if n), None)
        own = (tallies[a].spread or {}).get(name)     # A's: a B noisier than A differs from it
        pairs.append(PairBitwise(a, b, name, numel, sum(n for n, _, _ in trials), first,
                                 max(m for _, _, m in trials), own.n_diff if own else 0, own.max_abs if own else 0.0))
    return pairs


def _measured(kept: dict, ref_fn, pristine, overwrites: dict, dtype,
              tallies: dict[str, _Tally]) -> dict[str, dict[str, torch.Tensor]]:
    """Every variant's outputs of one trial, measured against the float64 reference, computed only now that
    each has run (compare/checks/referee.py): the outputs by variant, for the pairwise comparison."""
    ref = ref_fn(sealing.sealed_copy(pristine))
    produced = {name: referee.unstow(outs) for name, outs in kept.items()}
    for name, outputs in produced.items():
        for out, t in outputs.items():
            stale = sealing.tensors(pristine)[overwrites[out]] if out in overwrites else None
            tallies[name].errors.append(measure(t, ref[out], out, dtype, stale))
    return produced


def _run_twice(run, alloc, inputs, first: dict[str, torch.Tensor], backend: Backend,
               running: tuple[str, str]) -> dict[str, RunSpread]:
    """Run a variant again on the same inputs and compare each output's bits with the first run's.
    A crash on the repeat (it did not crash the first time) counts as no spread measured."""
    again = {k: poison_(t) for k, t in alloc().items()}
    try:
        with supervisor.running((running[0],), running[1]), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            run(inputs, again)
            synchronize(backend)
    except BaseException as exc:
        supervisor.variant_fault(running[0], exc)
        return {}
    out = {}
    for name, t in first.items():
        n, _, max_abs = bitwise(t, again[name])
        out[name] = RunSpread(name, t.numel(), n, max_abs)
    return out
