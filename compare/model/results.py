"""The one result model: every comparison fills these frozen records, every renderer reads them.

`to_dict`/`from_dict` give the JSON form (schema `SCHEMA_VERSION`); a report saved as JSON loads
back into the same records, so any renderer can re-render it anywhere.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any, Optional

from compare.model.fouls import Finding, Foul  # noqa: F401  re-exported: one result model
from compare.model.habits import LibraryImport, MissingPackage  # noqa: F401  re-exported: one result model
from compare.model.check_sections import CheckSection  # noqa: F401  re-exported: one result model
from compare.model.jsonform import ObjectForm, omitted_empty, ReportFormatError, _decode, _encode, _kind  # noqa: F401
from compare.model.migrations import MIGRATIONS
from compare.model.results_gates import Gate  # noqa: F401  re-exported: one result model
from compare.model.skips import Interruption, Skip  # noqa: F401  re-exported: one result model
from compare.model.states import (Accuracy, Bits, Failure, LoadStatus, Status, TimingBasis,  # noqa: F401 (re-exported)
                                  TimingStatus, TimingVerdict)
from compare.model.vocabulary import MANTISSA_BITS

SCHEMA_VERSION = 4   # older versions are migrated by `from_dict` (compare/model/migrations.py says what each lacks)
# the top-level key and value by which a report.json says kernel-ab wrote it (the JSON renderer writes it;
# reports from before it have none); kept apart from the model like the derived headline and verdicts
MARKER_KEY, MARKER = "kernel_ab", "report"
DERIVED = ("headline", "verdicts")   # what the JSON renderer adds for readers, recomputed from the rest on load

# a pair's bitwise difference counts as run-to-run spread when its largest |A - B| is at most this
# many times the spread A shows when run twice on the same inputs (one repeat only samples the spread)
SPREAD_FACTOR = 2.0


# ---------------------------------------------------------------- numerics
@dataclasses.dataclass(frozen=True)
class OutputError:
    """One output of one variant against the float64 reference, over all trials of a case."""

    output: str
    dtype: str
    numel: int
    max_abs: float          # over elements where output and reference are both finite
    rel_l2: float           # ||out - ref|| / ||ref|| over the same elements
    max_ulp: float          # max |out - ref| in units in the last place of the output's dtype
    beyond_tol: int         # elements outside assert_close's default rtol/atol for the dtype (NaN == NaN)
    rtol: float
    atol: float
    nan: int                # NaNs the kernel wrote (not the poison)
    inf: int
    nonfinite_mismatch: int  # non-finite where the reference is finite, or finite where it is not
    unwritten: int          # elements still holding the poison the buffer was filled with
    ref_max: float = 0.0    # largest |reference| over the elements the errors are measured on

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and self.beyond_tol == 0 and self.nonfinite_mismatch == 0

    @property
    def ulps_of_max(self) -> float:
        """max_abs in units in the last place of max|reference| in the output's dtype: unlike the per-element
        ULP, it stays meaningful where outputs are near zero (an ULP there is tiny)."""
        mantissa = MANTISSA_BITS.get(self.dtype)
        if mantissa is None or self.ref_max <= 0 or not math.isfinite(self.ref_max):
            return float("nan")
        return self.max_abs / math.ldexp(1.0, math.frexp(self.ref_max)[1] - 1 - mantissa)


@dataclasses.dataclass(frozen=True)
class RunSpread:
    """One output of one variant run twice on the same inputs (first trial): how far the runs differ.
    Non-zero only where the output is not deterministic (e.g. atomic adds landing in any order)."""

    output: str
    numel: int
    n_diff: int             # elements whose bits differ between the two runs
    max_abs: float          # largest |run1 - run2| among them (inf if one is non-finite and the other not)


@dataclasses.dataclass(frozen=True)
class InputWrite:
    """An input a variant wrote into: its own sealed copy no longer held the family's values afterwards."""

    input: str
    changed: int            # elements whose bits changed, summed over the runs that wrote
    numel: int              # elements of the input, summed over the same runs


@dataclasses.dataclass(frozen=True)
class VariantNumerics:
    variant: str
    status: Status                  # (compare/model/states.py) reasons say why it failed or was not run
    reasons: tuple[str, ...] = ()   # why it failed, crashed or was not run, one line each
    outputs: tuple[OutputError, ...] = ()
    spread: tuple[RunSpread, ...] = ()   # run-to-run spread per output (empty in reports made before it)
    writes: tuple[InputWrite, ...] = ()  # inputs it wrote into (each run reads its own copy: no other saw it)
    failure: Failure = Failure.NONE      # status "error": what kind of failure (reasons[0] says the error)
    failed_at: str = ""                  # LIBRARY: file:line of the innermost frame in the library's tree

    @property
    def produced(self) -> bool:
        """Whether it gave numbers (passed or failed the tolerance) in this case."""
        return Status(self.status).produced


@dataclasses.dataclass(frozen=True)
class PairBitwise:
    """Raw-bit comparison of one output of two variants (so -0.0 vs +0.0 and NaN payloads count)."""

    a: str
    b: str
    output: str
    numel: int
    n_diff: int                       # summed over trials
    first_diff: Optional[tuple[int, ...]] = None   # index of the first differing element (first trial that differs)
    max_abs: float = 0.0              # largest |a - b| where the bits differ (inf: one non-finite, the other not)
    spread_n_diff: int = 0            # A's run-to-run spread on this output (RunSpread)
    spread_max_abs: float = 0.0

    @property
    def equal(self) -> bool:
        return self.n_diff == 0

    @property
    def verdict(self) -> Bits:
        """Identical, within run-to-run spread (A's output is not deterministic, and B differs from A by
        no more than SPREAD_FACTOR x what A differs from itself when run twice), or differ."""
        if self.n_diff == 0:
            return Bits.IDENTICAL
        if self.spread_n_diff > 0 and self.max_abs <= SPREAD_FACTOR * self.spread_max_abs:
            return Bits.WITHIN_SPREAD
        return Bits.DIFFER


@dataclasses.dataclass(frozen=True)
class PairVerdict:
    """Is B more, as or less accurate than A in this case? B loses on an output with more non-finite
    mismatches or unwritten elements than A, or with rel L2 or max abs error beyond `factor` times A's
    plus a floor (the dtype's u for rel L2; half an ULP of max|reference| for max abs; none within 1 ULP
    everywhere). Less accurate: B loses on some output (never over-claim); more accurate: B gains and
    loses nowhere; as accurate otherwise, and always when bitwise equal."""

    a: str
    b: str
    accuracy: Accuracy
    basis: str                        # "bitwise equal", "error within factor", "B worse", "B better" or "mixed"
    detail: tuple[str, ...] = ()      # each output and measure where B lost, then where it gained
    lost: tuple[str, ...] = ()        # the outputs where B lost
    gained: tuple[str, ...] = ()      # the outputs where B gained

    @property
    def as_accurate(self) -> bool:
        return self.accuracy != Accuracy.LESS


@dataclasses.dataclass(frozen=True)
class NumericsCase:
    shape: str
    dtype: str
    input_kind: str
    seeds: tuple[int, ...]
    variants: tuple[VariantNumerics, ...]
    pairs: tuple[PairBitwise, ...]
    direction: str = "forward"        # "forward" (the family's outputs) or "backward" (its gradients)
    verdicts: tuple[PairVerdict, ...] = ()
    reference: str = ""               # the variant every other one is also judged against (e.g. torch), if run
    fouls: tuple[Finding, ...] = ()   # what variants did to win rather than compute (compare/model/fouls.py)


@dataclasses.dataclass(frozen=True)
class NumericsSection:
    backend: str
    note: str
    cases: tuple[NumericsCase, ...]
    verdict_factor: float = 2.0       # the factor of PairVerdict
    added_reference: str = ""         # a variant run as an accuracy reference point though not named
    plan: tuple[str, ...] = ()        # how the cases were chosen (input kinds, dtypes, trials), one line each
    forward_legend: tuple[str, ...] = ()          # the family's words on its outputs, under forward tables
    backward_legend: tuple[str, ...] = ()         # the family's words on its backward pass, under backward tables
    backward_pairs_legend: tuple[str, ...] = ()   # ... and under backward bitwise tables


# ---------------------------------------------------------------- timing
@dataclasses.dataclass(frozen=True)
class TimingVariant:
    """Every sample of one variant in one case (shape and mode), and what they add up to."""

    variant: str
    status: TimingStatus              # not_run: the variant's run said the shape is not its own
    reason: str = ""
    samples_ms: tuple[float, ...] = ()  # all timed calls, round by round
    rounds: int = 0
    calls_per_round: int = 0
    p20_ms: float = 0.0
    median_ms: float = 0.0
    p80_ms: float = 0.0
    peak_memory_bytes: int = 0        # allocated by one call, beyond what was allocated before it
    bytes_moved: int = 0              # the family's fewest bytes for this pass
    gbs: float = 0.0                  # bytes_moved / median time
    fraction_of_copy: float = 0.0     # gbs / the measured device-to-device copy bandwidth
    launch_cpu_ms: float = 0.0        # host time to issue one eager call (0: not measured)
    writes: tuple[InputWrite, ...] = ()   # inputs its calls wrote into: restored before every timed call


@dataclasses.dataclass(frozen=True)
class RatioVerdict:
    """A variant's timing against another's: the ratio of medians with its interval, and the verdict on it."""

    variant: str
    verdict: TimingVerdict
    ratio: float = dataclasses.field(default=0.0, kw_only=True)
    ci_low: float = dataclasses.field(default=0.0, kw_only=True)
    ci_high: float = dataclasses.field(default=0.0, kw_only=True)
    p_value: float = dataclasses.field(default=1.0, kw_only=True)
    # the interval had to lie wholly outside 1 ± margin for faster/slower; basis: what set the margin
    margin: float = dataclasses.field(default=0.0, kw_only=True)
    basis: TimingBasis = dataclasses.field(default=TimingBasis.NOT_DECIDED, kw_only=True)
    reason: str = dataclasses.field(default="", kw_only=True)   # why there is no verdict (n/a)

    @property
    def reach(self) -> float:
        """How far from 1 this comparison reaches (ratio or either end of its interval), as a fraction."""
        return max(abs(self.ci_low - 1), abs(self.ci_high - 1), abs(self.ratio - 1))


@dataclasses.dataclass(frozen=True, kw_only=True)
class TimingComparison(RatioVerdict):
    """A variant against the baseline in one run: ratio variant / baseline."""

    baseline: str
    rounds: int = 0


@dataclasses.dataclass(frozen=True)
class TimingCase:
    shape: str
    mode: str
    graph: bool                       # replayed from CUDA graphs (launch overhead out of the time)
    seconds: float                    # measurement time of the case, warm-up excluded
    variants: tuple[TimingVariant, ...]
    comparisons: tuple[TimingComparison, ...]
    note: str = ""                   # e.g. why a case meant for graph replay was timed eagerly
    dtype: str = ""                  # the inputs' dtype ("" in reports made before it was recorded)
    control: Optional[TimingComparison] = None   # A/A: the baseline timed again as a hidden entry, against
                                                 # itself (None in reports made before the control existed)
    placements: int = 1               # output-buffer sets rotated round by round (shared by all variants)
    launch_bound: tuple[str, ...] = ()   # variants whose host time per eager call rivals their GPU time
    ran_on: str = ""                  # the GPU (name, UUID, copy bandwidth) when cases ran on several (--jobs, --scheduler)
    fouls: tuple[Finding, ...] = ()   # what variants did to win rather than compute (compare/model/fouls.py)
    audit_seconds: float = 0.0        # what auditing the timed calls cost (compare/checks/audit.py)


@dataclasses.dataclass(frozen=True)
class TimingSection:
    gpu: str
    copy_gbs: float                   # measured device-to-device copy bandwidth (read + write)
    noise: float                      # the verdict's noise band, as a fraction
    confidence: float
    method: str
    cases: tuple[TimingCase, ...]
    compile_seconds: tuple[tuple[str, float], ...] = ()   # e.g. inductor's compile time: reported, not timed
# ---------------------------------------------------------------- IR (compiled code): compare/model/results_ir.py
# re-exported: one result model
from compare.model.results_ir import (IRCarried, IRKernelMatch, IRLoop, IRLoopMatch, IRMemOp, IRPair,  # noqa: E402,F401
                                      IRPassNote, IRSection, IRStage, IRStageDiff, IRVariant, PassStatus)


# ---------------------------------------------------------------- report
@dataclasses.dataclass(frozen=True)
class ShapeParams(ObjectForm):
    """One shape's parameters (the family's Shape.as_dict, and `reads_x_twice` where the family says), written
    in report.json as a JSON object (schema 3 and before: its JSON text, migrated on load)."""

    values: dict[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    @property
    def reads_x_twice(self) -> bool:
        """Whether its family said a forward must read x twice there (False where it did not say)."""
        return bool(self.values.get("reads_x_twice"))


@dataclasses.dataclass(frozen=True)
class VariantInfo:
    name: str
    family: str
    kind: str
    why: str
    origin: str
    status: LoadStatus = LoadStatus.OK   # failed: could not be loaded, or excluded
    error: str = ""
    failure: Failure = Failure.NONE   # status "failed": LOAD (not loaded or compiled), CRASH (a run crashed) or
                                      # TAMPER (it changed the process's shared state; `error` says what)
    kernels: tuple[str, ...] = ()   # the passes whose Triton kernel the variant brings (forward, backward);
                                    # for the others it runs the family's shared kernel
    needs: Optional[MissingPackage] = None   # failure LOAD: a package its import needs that this environment lacks


@dataclasses.dataclass(frozen=True)
class Environment:
    """Where and how a report was made."""

    device: str
    gpu_name: str = ""
    gpu_count: int = 0
    driver: str = ""
    cuda: str = ""
    torch: str = ""
    triton: str = ""
    python: str = ""
    platform: str = ""
    clocks: str = ""
    git_commit: str = ""
    git_dirty: bool = False
    command: str = ""
    time_utc: str = ""
    kernel_ab_version: str = ""   # the version of kernel-ab that made it ("" in reports made before it was recorded)

    @property
    def ran_on(self) -> str:
        """Where the kernels ran, in words: the GPU's name, or Triton's CPU interpreter."""
        if self.device.startswith("cpu"):
            return "Triton's CPU interpreter (no GPU)"
        return self.gpu_name or self.device


@dataclasses.dataclass(frozen=True)
class Report:
    family: str
    preset: str
    dtype: str
    baseline: str
    variants: tuple[VariantInfo, ...]
    environment: Environment
    shapes: tuple[str, ...] = ()
    x_name: str = ""                 # the preset's x axis (for plots and benchmark rows), one value per shape
    x_values: tuple[float, ...] = ()
    shape_params: tuple[ShapeParams, ...] = ()   # each shape's parameters
    numerics: Optional[NumericsSection] = None
    timing: Optional[TimingSection] = None
    ir: Optional[IRSection] = None
    ir_kernels: tuple[IRSection, ...] = ()   # further kernels compared (e.g. the backward), one section each
    skipped: tuple[Skip, ...] = ()   # checks and parts of checks not run, each with its reason
    schema_version: int = SCHEMA_VERSION
    incidents: tuple[str, ...] = ()  # what variants did to the process beyond their results (threads left running)
    gates: tuple[Gate, ...] = ()     # the exit-code gates asked for and how each ended (compare/model/gates.py)
    library: tuple[LibraryImport, ...] = ()   # what the libraries' imports did alike at every revision: their own
    interrupted: Optional[Interruption] = None   # a stop signal ended the run: how far it got, what never ran
    checks: tuple[CheckSection, ...] = omitted_empty()   # the sections of checks outside the built-in four

    @property
    def ir_sections(self) -> tuple[IRSection, ...]:
        """Every compiled-code section, the first (`ir`) first."""
        return ((self.ir,) if self.ir is not None else ()) + self.ir_kernels

    @property
    def reads_x_twice(self) -> tuple[bool, ...]:
        """Per shape, whether its family said a forward must read x twice there (Family.reads_x_twice;
        False where the family did not say). Stored in each shape's parameters, so saved reports keep it."""
        return tuple(p.reads_x_twice for p in self.shape_params)


# ---------------------------------------------------------------- JSON form
# to_dict: the JSON-ready form of a report (non-finite floats become the strings NaN/Infinity); decode(tp, value):
# any record of the model from its JSON form, ReportFormatError naming the field where it is not
to_dict, decode = _encode, _decode


def from_dict(data: dict) -> Report:
    """Load a report saved by `to_dict` (or the JSON renderer, whose derived `headline` is dropped: it is
    recomputed from the rest), migrating older schema versions; refuses unknown ones, and (ReportFormatError,
    one line naming the field) any value of the wrong type."""
    if not isinstance(data, dict):
        raise ReportFormatError(f"a report is a JSON object, got {_kind(data)}")
    if data.get(MARKER_KEY, MARKER) != MARKER:
        value = data[MARKER_KEY]
        raise ReportFormatError(f"field report.{MARKER_KEY}: expected {MARKER!r}, got {_kind(value)} {str(value)[:40]!r}")
    data = {k: v for k, v in data.items() if k not in (*DERIVED, MARKER_KEY)}
    version = data.get("schema_version")
    while version in MIGRATIONS:
        data = MIGRATIONS[version](copy.deepcopy(data))
        version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(f"report schema version {version!r} is not a supported version (1 to {SCHEMA_VERSION})")
    report = _decode(Report, data)
    # reports made before backward kernels could be variants: every Triton variant brought its forward
    old = [dataclasses.replace(v, kernels=("forward",)) if v.kind == "triton" and "kernels" not in raw else v
           for v, raw in zip(report.variants, data.get("variants", ()))]
    return dataclasses.replace(report, variants=tuple(old))
