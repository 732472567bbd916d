"""The result model's states, each a closed set of words: what a variant's run ended as, how a pair's bits
and accuracy compare, what a timing comparison found, what is wrong with an output and how a variant's
process ended. Each is a `str`-valued enum whose values are the words report.json holds, so a report's
text is the same as when they were bare strings, and a saved report loads back into these values."""
from __future__ import annotations

import enum


class Word(str, enum.Enum):
    """A state that reads as its word everywhere: in f-strings, joins and JSON (Python 3.12 would format
    a mixed-in enum as `Class.MEMBER`)."""

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @classmethod
    def rank(cls, member: "Word") -> int:
        """The member's place in its declaration (the states that are ordered are declared in order)."""
        return list(cls).index(member)


class Failure(Word):
    """Why a variant's run failed (compare/checks/failures.py decides it from the exception's type and state)."""

    NONE = ""                   # it did not fail
    INTERPRETER = "interpreter"  # Triton's CPU interpreter cannot run the kernel (InterpreterError)
    CALL = "call"               # the op cannot be called as the family calls it (arguments; no gradient)
    LIBRARY = "library"         # raised inside the variant's own (library) code
    CRASH = "crash"             # anything else, or the process it ran in crashed
    LOAD = "load"               # could not be loaded or compiled (VariantInfo only)
    TAMPER = "tamper"           # changed what the process shares (a patched function, a flag, the environment,
                                # signals, atexit, kernel-ab's status): excluded, and the run made again without it
    FOUL = "foul"               # stopped for a foul (its case's `fouls` say which): no numbers to judge
    BUSY = "busy"               # kept the GPU busy between its calls (work its threads, processes or calls left
                                # in flight): its timing process ended, the dtype timed again without it


class Status(Word):
    """One variant's numerics in one case."""

    PASS = "pass"               # every output within tolerance and fully written
    FAIL = "fail"               # gave numbers, some beyond tolerance or unwritten (reasons say which)
    ERROR = "error"             # it failed when run (its `failure` says how)
    NOT_RUN = "not_run"         # not for this case (no GPU, not for this shape, no backward)
    UNTRUSTED = "untrusted"     # not run: the backend is known not to compute this dtype faithfully

    @property
    def produced(self) -> bool:
        """Whether it gave numbers (passed or failed the tolerance)."""
        return self in (Status.PASS, Status.FAIL)


class TimingStatus(Word):
    OK = "ok"
    ERROR = "error"
    NOT_RUN = "not_run"         # the variant's run said the shape is not its own


class LoadStatus(Word):
    OK = "ok"
    FAILED = "failed"           # could not be loaded, or excluded after a run (VariantInfo.failure says why)


class Bits(Word):
    """A pair's raw-bit comparison of one output, best first."""

    IDENTICAL = "identical"
    WITHIN_SPREAD = "within run-to-run spread"   # A is not deterministic and B differs no more than A from itself
    DIFFER = "differ"


class Accuracy(Word):
    MORE = "more accurate"
    AS = "as accurate"
    LESS = "less accurate"


class TimingVerdict(Word):
    FASTER = "faster"
    SLOWER = "slower"
    NO_DIFFERENCE = "no difference beyond noise"
    NA = "n/a"                  # not compared (a side failed or was not run; a foul withheld it)


class TimingBasis(Word):
    """What set a timing verdict's margin, or settled the verdict without one."""

    NOT_DECIDED = ""                                  # no verdict (n/a), or a report older than the basis
    NOISE_BAND = "noise band"
    AA_CONTROL = "A/A control"
    DRIFT = "drift across runs"                       # the band beyond the least change across runs of the case's other variants
    IDENTICAL_TIMED_CODE = "identical timed code"     # one kernel and launcher timed under two names
    IDENTICAL_COMPILED_CODE = "identical compiled code"   # a pass whose kernels are identical on both sides


# the bases on which both sides run the same code: a timing difference between them is measurement noise
SAME_CODE_BASES = (TimingBasis.IDENTICAL_TIMED_CODE, TimingBasis.IDENTICAL_COMPILED_CODE)


class ProblemKind(Word):
    """What is wrong with one output of a variant in one case, most severe first (an output shows its worst)."""

    CRASHED = "crashed"
    UNWRITTEN = "never written"
    NONFINITE = "non-finite where the reference is finite (or the reverse)"
    BEYOND_TOLERANCE = "beyond tolerance"
    LESS_ACCURATE = "less accurate than the reference point"
    WRITES_INPUT = "writes into its input"


class Crash(Word):
    """How a failed variant's process-level error starts ("variant X crashed the process (SIGSEGV) while ...")."""

    CRASHED = "crashed the process"
    POISONED = "poisoned the CUDA context"
    ENDED = "ended the process"
    HUNG = "did not return"


class IRStatus(Word):
    """One variant's compiled code in an IRSection."""

    OK = "ok"
    FAILED = "failed"           # did not compile, or its compiled code could not be summarized
    NOT_RUN = "not run"         # an op that failed when run to find its kernels: none is known


class KernelStatus(Word):
    """A launched kernel of two ops, paired by name (IRKernelMatch.status; "only in OP" and "not found in OP" are open)."""

    IDENTICAL = "identical"     # every stage's normalized listing and the grid agree
    CHANGED = "changed"
    FAILED = "failed"           # did not compile


class Level(Word):
    """How a verdict line, a glance row or a notice reads, worst first: the mark and colour a renderer gives it."""

    FAIL = "fail"
    WARN = "warn"
    INFO = "info"
    OK = "ok"
    SKIP = "skip"


class GateOutcome(Word):
    PASSED = "passed"
    FAILED = "failed"
    NOT_JUDGED = "not judged"   # its evidence is missing


class LoopMatch(Word):
    """How a loop of B pairs with A's in one stage (compare/model/loopmatch.py)."""

    MATCHED = "matched"         # one each
    REMOVED = "removed"         # A's only
    ADDED = "added"             # B's only
    UNSURE = "unsure"           # no confident pairing among these loops, so none is claimed
