"""The results of replaying an op's recorded calls at two revisions: every output and gradient of BASE
against HEAD's, with no reference to say which side is right.

An op no family fits is compared on the calls the library's own tests make (compare/review/replay.py
records and replays them). Each tensor of one call is a `TensorDiff`; each call a `ReplayedCall`; each op a
`ReplayedOp`, whose verdict is decided once, here, when the record is made: renderers and gates read it.
"""
from __future__ import annotations

import dataclasses

from compare.model.jsonform import omitted_empty
from compare.model.states import Word


class Side(Word):
    BASE = "BASE"
    HEAD = "HEAD"


class Pass(Word):
    IMPORT = "import"                        # the op could not be loaded at that side: no call of it ran
    FORWARD = "forward"
    BACKWARD = "backward"


class Agreement(Word):
    """One tensor of BASE against the same tensor of HEAD, the strongest statement that holds."""

    IDENTICAL = "identical bits"
    SPREAD = "differs within run-to-run spread"   # no more than BASE differs from itself run twice
    WITHIN = "differs within tolerance"      # every element within the dtype's rtol/atol (NaN where NaN)
    BEYOND = "differs beyond tolerance"      # some element is not: which side is right is not known here
    UNLIKE = "not comparable"                # other shape, dtype or structure: `why` says which


class ReplayVerdict(Word):
    """An op's replay, most telling first among its calls (decide())."""

    IDENTICAL = "identical"                  # every output and gradient of every call the same bits
    SPREAD = "differs within run-to-run spread"   # only as much as BASE differs from itself
    WITHIN = "differs within tolerance"
    BEYOND = "differs beyond tolerance"
    HEAD_FAILS = "fails at HEAD only"        # a call BASE runs raises at HEAD
    BASE_FAILS = "fails at BASE only"
    BOTH_FAIL = "fails at both"
    NOT_IMPORTED = "could not be imported"   # where its calls were to be recorded: not_imported says what
    NO_CALLS = "no call recorded"            # no test of the library called it (notes say why)


@dataclasses.dataclass(frozen=True)
class TensorDiff:
    """One output (or input gradient, or input the op wrote into) of one call: BASE against HEAD."""

    name: str                       # `out`, `out[1]`, `grad X`, `X (written)`
    dtype: str
    shape: tuple[int, ...]
    agreement: Agreement
    differing: int = 0              # elements whose bits differ
    beyond: int = 0                 # elements outside the dtype's tolerance (NaN against a number counts)
    max_abs: float = 0.0            # over elements finite at both
    max_ulp: float = 0.0            # max |BASE - HEAD| in units in the last place of the dtype at the larger value
    where: tuple[int, ...] = ()     # the index of the largest absolute difference
    base_value: float = 0.0         # the two values there
    head_value: float = 0.0
    ulp_where: float = 0.0          # that difference in units in the last place there
    nan_mismatch: int = 0           # NaN or inf at one side where the other has a finite number
    why: str = ""                   # UNLIKE: what differs (shape, dtype, present at one side only)
    spread: float = -1.0            # BASE's largest |run 1 - run 2| on it (-1: not run twice)


@dataclasses.dataclass(frozen=True)
class ImportFailure:
    """An import that raised at `side`: the op's module (`module`) or a test file of it (`test`), the module
    whose own code raised (that module, a package above it or one it imports; "" where none ran)."""

    side: Side
    error: str                      # the exception's type and first line
    module: str = ""
    test: str = ""
    raised_in: str = ""

    def text(self) -> str:
        what = f"its test file {self.test}" if self.test else f"its module {self.module}"
        where = f" ({self.raised_in} raised)" if self.raised_in not in ("", self.module) else ""
        return f"at {self.side} {what} could not be imported{where}: {self.error}"


@dataclasses.dataclass(frozen=True)
class CallFailure:
    side: Side
    stage: Pass
    error: str                      # the exception's type and first line, as the op raised it
    ended_process: bool = omitted_empty(False)   # the call ended its process (an exit, a signal, a hang): `error` says how


@dataclasses.dataclass(frozen=True)
class ReplayedCall:
    """One recorded call run at both revisions from fresh copies of the same inputs."""

    index: int
    signature: str                  # its arguments in short: `X: float32[4, 128] grad, eps=1e-06`
    test: str                       # the test that made it (pytest's node id)
    tensors: tuple[TensorDiff, ...] = ()
    failures: tuple[CallFailure, ...] = ()

    def failed(self, side: Side) -> bool:
        return any(f.side == side for f in self.failures)


@dataclasses.dataclass(frozen=True)
class ReplayedOp:
    op: str                         # module:callable
    label: str
    tests: tuple[str, ...]          # the test files its calls were recorded from
    recorded_at: Side
    calls: tuple[ReplayedCall, ...]
    notes: tuple[str, ...] = ()     # what the recording or replay could not do, a line each
    stopped: bool = False           # the review's time budget stopped its recording or replay: calls are missing
    verdict: ReplayVerdict = ReplayVerdict.NO_CALLS
    not_imported: tuple[ImportFailure, ...] = ()   # imports that kept calls of it from being recorded
    # timing and compiled code, compared as compare compares an op, in the family made from its recorded calls
    # (variants/recorded.py): the compare Report (None: not run), which call was timed and how it was grown, or
    # why they were not run
    report: object = None
    timed: str = ""

    @classmethod
    def made(cls, **fields) -> "ReplayedOp":
        """The record with its verdict decided from its calls (the one place it is)."""
        return cls(**fields, verdict=decide(fields["calls"], fields.get("not_imported", ())))

    def worst(self) -> TensorDiff | None:
        """The tensor that differs most: beyond tolerance first, then by ULPs."""
        found = [t for c in self.calls for t in c.tensors if t.agreement != Agreement.IDENTICAL]
        order = {Agreement.UNLIKE: 0, Agreement.BEYOND: 1, Agreement.WITHIN: 2, Agreement.SPREAD: 3}
        return min(found, key=lambda t: (order[t.agreement], -t.beyond, -t.ulp_where), default=None)


def decide(calls: tuple[ReplayedCall, ...], not_imported: tuple[ImportFailure, ...] = ()) -> ReplayVerdict:
    """The op's verdict: no call, for an import that failed first; a side failing where the other runs, then
    the largest disagreement."""
    if not calls:
        return ReplayVerdict.NOT_IMPORTED if not_imported else ReplayVerdict.NO_CALLS
    base = [c.failed(Side.BASE) for c in calls]
    head = [c.failed(Side.HEAD) for c in calls]
    if any(h and not b for b, h in zip(base, head)):
        return ReplayVerdict.HEAD_FAILS
    if any(b and not h for b, h in zip(base, head)):
        return ReplayVerdict.BASE_FAILS
    ran = [c for c, b in zip(calls, base) if not b]
    if not ran:
        return ReplayVerdict.BOTH_FAIL
    agreements = {t.agreement for c in ran for t in c.tensors}
    if agreements & {Agreement.BEYOND, Agreement.UNLIKE}:
        return ReplayVerdict.BEYOND
    if Agreement.WITHIN in agreements:
        return ReplayVerdict.WITHIN
    return ReplayVerdict.SPREAD if Agreement.SPREAD in agreements else ReplayVerdict.IDENTICAL


# no call of the op ran: nothing judged
NOT_REPLAYED = frozenset({ReplayVerdict.NOT_IMPORTED, ReplayVerdict.NO_CALLS})
# a difference HEAD brings that --fail-on-numerics fails on
NUMERICS_FAILURES = frozenset({ReplayVerdict.BEYOND, ReplayVerdict.HEAD_FAILS})
