"""The compiled-code (IR) records of the result model (compare.model.results re-exports them): per variant
its resources and per-stage structural summaries, per pair the normalized diffs, per op the kernels it
launched, paired by name."""
from __future__ import annotations

import dataclasses

from compare.model.states import IRStatus, KernelStatus, LoopMatch, Word

OP_KERNEL_SEPARATOR = ":"   # an op's launched kernel is listed as OP:KERNEL


NOT_RUN = IRStatus.NOT_RUN   # IRVariant.status of an op whose forward failed: what it launches is not known


def op_kernel(op: str, kernel: str) -> str:
    """The name an op's launched kernel is listed under in an IRSection's variants."""
    return f"{op}{OP_KERNEL_SEPARATOR}{kernel}"


def failed_at(variants, kernel: str, ops: tuple[str, ...]) -> tuple[str, ...]:
    """Which of `ops` could not compile their launched `kernel`, read from their IRVariant rows (`variants`)."""
    status = {v.variant: v.status for v in variants}
    return tuple(op for op in ops if status.get(op_kernel(op, kernel)) == IRStatus.FAILED)


@dataclasses.dataclass(frozen=True)
class IRCarried:
    """One value a loop carries from one iteration to the next."""

    type: str
    pointer: bool           # a pointer (or, in PTX, a register that feeds an address)
    name: str = ""          # TTIR/TTGIR: the source's name of the value ("X_ptr"); "" where not known


@dataclasses.dataclass(frozen=True)
class IRLoop:
    path: str               # "1", "2", "2.1" (nested): position in the stage's loop nest
    depth: int
    first_line: int         # in the normalized listing, 1-based
    header: str             # the line that opens the loop (normalized)
    carried: tuple[IRCarried, ...]
    ops: tuple[tuple[str, int], ...]   # operations in the loop itself (nested loops excluded), most first
    instructions: int
    variable: str = ""      # TTIR/TTGIR: the induction variable as the source names it ("" if none or unknown)
    trip: str = ""          # TTIR/TTGIR: "LOWER to UPPER step STEP", each bound written back to the kernel's
                            # arguments (a0, a1, ...), constants and program ids ("" if not read)

    @property
    def carried_pointers(self) -> int:
        return sum(1 for c in self.carried if c.pointer)

    @property
    def pointer_names(self) -> tuple[str, ...]:
        """The carried pointers' source names, sorted; () unless every one of them is named."""
        names = [c.name for c in self.carried if c.pointer]
        return tuple(sorted(names)) if all(names) else ()


@dataclasses.dataclass(frozen=True)
class IRMemOp:
    """Global loads or stores of one kind and width, in one loop ("-": outside every loop)."""

    kind: str               # "load" or "store"
    op: str
    width: str              # "scalar", "vector x4", "tensor" (TTIR/TTGIR), ...
    loop: str
    count: int


@dataclasses.dataclass(frozen=True)
class IRStage:
    """The structural summary of one stage of one variant."""

    stage: str
    lines: int              # normalized listing length
    instructions: int
    loops: tuple[IRLoop, ...]
    memory: tuple[IRMemOp, ...]
    listing: str = ""       # the normalized listing, only when asked for (--full)


@dataclasses.dataclass(frozen=True)
class IRVariant:
    variant: str
    status: IRStatus
    error: str = ""         # first lines of the compile error
    registers: int = -1     # from the cubin (cuobjdump -res-usage); -1 unknown
    spill_bytes: int = -1   # local memory per thread (Triton reports n_spills = this / 4)
    stack_bytes: int = -1
    shared_bytes: int = -1  # Triton's metadata.shared
    launched_registers: int = -1   # on a GPU: n_regs of the kernel Triton launched
    launched_spills: int = -1      # on a GPU: n_spills of the kernel Triton launched
    stages: tuple[IRStage, ...] = ()


@dataclasses.dataclass(frozen=True)
class IRStageDiff:
    stage: str
    diff: str               # unified diff of the normalized listings ("" when they agree)
    changed_lines: int      # normalized: lines removed plus added
    raw_changed_lines: int  # the same in a plain diff of the raw listings
    diff_lines: int         # length of the normalized diff, headers and context included
    raw_diff_lines: int     # length of a plain unified diff of the raw listings

    @property
    def identical(self) -> bool:
        return self.changed_lines == 0


@dataclasses.dataclass(frozen=True)
class IRLoopMatch:
    """Which of B's loops is which of A's in one stage, told by what the loops are (nesting, trip count,
    global loads and stores, op mix), not by their position (compare.model.loopmatch)."""

    stage: str
    a: tuple[str, ...]      # A's loop paths
    b: tuple[str, ...]      # B's loop paths
    status: LoopMatch
    score: float = 0.0      # matched: the two loops' similarity, 0 to 1


@dataclasses.dataclass(frozen=True)
class IRPair:
    a: str
    b: str
    stages: tuple[IRStageDiff, ...]
    loops: tuple[IRLoopMatch, ...] = ()   # per stage, B's loops matched to A's (older reports: none recorded)


@dataclasses.dataclass(frozen=True)
class IRKernelMatch:
    """A kernel launched by op-level variants, paired by its name: the baseline op's against another's."""

    kernel: str
    a: str                  # the baseline op
    b: str
    status: str             # a KernelStatus, or "only in OP" (launched by one of the two ops only), "not found in OP"
    changed_stages: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()   # the passes ("forward", "backward") in which either op launched it (() in
                                   # reports made before it was recorded: not known)

    @property
    def identical(self) -> bool:
        return self.status == KernelStatus.IDENTICAL

    @property
    def changed(self) -> bool:
        return self.status == KernelStatus.CHANGED

    @property
    def failed(self) -> bool:
        return self.status == KernelStatus.FAILED


class PassStatus(Word):
    """Why a pass's kernels are in no comparison of an IRSection."""

    SHARED = "shared"               # every Triton variant runs the same kernel for it: identical, not compiled
    NOT_COMPARED = "not compared"   # some variant has no kernel for it that could be compiled
    NOT_FOUND = "not found"         # an op: the pass failed when run, so the kernels it launches are unknown


@dataclasses.dataclass(frozen=True)
class IRPassNote:
    """A pass (forward, backward) whose kernels a compiled-code section does not compare, and why."""

    kernel: str             # the pass: "forward" or "backward"
    status: PassStatus
    variant: str = ""       # the variant or op it concerns ("" for all of them)
    why: str = ""


@dataclasses.dataclass(frozen=True)
class IRSection:
    mode: str               # "offline" (compiled for `target` without a GPU) or "launched" (from the GPU run)
    target: str
    shape: str
    dtype: str
    specialization: str     # argument types and constants the kernels were compiled for
    note: str
    stages: tuple[str, ...]
    variants: tuple[IRVariant, ...]
    pairs: tuple[IRPair, ...]
    kernels: tuple[IRKernelMatch, ...] = ()   # op-level variants' launched kernels, paired by name
    kernel: str = "forward"   # which kernel of the variants this section compares: "forward", "backward", ...
    passes: tuple[IRPassNote, ...] = ()   # passes whose kernels no section compares, and why
