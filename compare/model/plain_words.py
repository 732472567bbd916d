"""Plain words for the compiled code, for the lines a reviewer reads first (the headline): the stages by what
they are, and instructions by kind ("2 more pointer additions"), summed over the kind, so that a swap of one
integer add for another counts as none. The folded details keep the stages' short names and the op names."""
from __future__ import annotations

STAGE_WORDS = {"ttir": "Triton's IR", "ttgir": "Triton's GPU IR", "llir": "the LLVM IR", "ptx": "the PTX assembly",
               "sass": "the machine code"}

# (singular, plural) of a kind, and what names an instruction of it at any stage (TTIR, LLIR, PTX, SASS): an exact
# name, or a prefix ending in "." or "*"; the first kind that names an op is its kind, so the narrow come first
_KINDS = (
    (("pointer addition", "pointer additions"), ("tt.addptr", "getelementptr")),
    (("address computation", "address computations"), ("LEA*", "ULEA*")),
    (("memory load", "memory loads"), ("tt.load", "load", "ld.", "LDG*", "LDS*", "ldmatrix.", "llvm.nvvm.ldmatrix*",
                                      "LDC*", "ULDC*")),
    (("memory store", "memory stores"), ("tt.store", "store", "st.", "STG*", "STS*")),
    (("comparison", "comparisons"), ("arith.cmp*", "icmp", "fcmp", "setp.", "ISETP*", "UISETP*", "FSETP*", "PLOP3*")),
    (("select", "selects"), ("arith.select", "select", "selp.", "SEL", "USEL", "FSEL")),
    (("conversion", "conversions"), ("arith.sitofp", "arith.fptosi", "arith.extsi", "arith.extui", "arith.trunci",
                                     "sitofp", "fptosi", "sext", "zext", "trunc", "bitcast", "tt.bitcast", "cvt.",
                                     "I2F*", "F2I*")),
    (("register move", "register moves"), ("mov.", "MOV", "UMOV", "IMAD.MOV*", "R2UR", "S2UR", "CS2R")),
    (("shift", "shifts"), ("arith.shli", "arith.shrsi", "arith.shrui", "shl", "lshr", "ashr", "shl.", "shr.", "SHF.",
                           "USHF.", "IMAD.SHL*")),
    (("integer add", "integer adds"), ("arith.addi", "arith.subi", "add", "sub", "add.s*", "add.u*", "sub.s*",
                                       "sub.u*", "IADD*", "UIADD*", "VIADD*", "IMAD.IADD*")),
    (("integer multiply", "integer multiplies"), ("arith.muli", "mul", "mul.lo.", "mul.wide.", "mul.hi.", "mad.",
                                                  "IMAD*", "UIMAD*")),
    (("integer division", "integer divisions"), ("arith.divsi", "arith.divui", "sdiv", "udiv", "div.s*", "div.u*")),
    (("minimum or maximum", "minimums and maximums"), ("arith.max*", "arith.min*", "llvm.smax*", "llvm.smin*",
                                                       "llvm.umax*", "llvm.umin*", "max.", "min.", "VIMNMX*",
                                                       "IMNMX*")),
    (("floating-point operation", "floating-point operations"), ("arith.*f", "math.", "fadd", "fsub", "fmul", "fdiv",
                                                                 "fneg", "llvm.fabs*", "llvm.maxnum*", "llvm.minnum*",
                                                                 "llvm.nvvm.div*", "*.f32", "*.f16", "*.f64", "F*",
                                                                 "HFMA*", "HADD*", "HMUL*", "MUFU*")),
    (("bit operation", "bit operations"), ("arith.andi", "arith.ori", "arith.xori", "and", "or", "xor", "and.",
                                           "or.", "xor.", "bfe.", "LOP3*", "SGXT*")),
    (("branch", "branches"), ("br", "bra", "bra.", "BRA", "cf.br", "cf.cond_br")),
    (("barrier or shuffle", "barriers and shuffles"), ("bar.", "BAR*", "llvm.nvvm.barrier*", "shfl.",
                                                       "llvm.nvvm.shfl*", "SHFL*")),
)
OTHER = ("instruction of another kind", "instructions of other kinds")


def _names(op: str, pattern: str) -> bool:
    if pattern.startswith("*"):
        return op.endswith(pattern[1:])
    if pattern.endswith("*"):
        return op.startswith(pattern[:-1])
    if "*" in pattern:   # "arith.*f": the dialect's floating-point ops
        head, tail = pattern.split("*")
        return op.startswith(head) and op.endswith(tail)
    return op.startswith(pattern) if pattern.endswith(".") else op == pattern


def kind(op: str) -> tuple[str, str]:
    """The (singular, plural) words for the kind of instruction `op` is: LLIR's inline "asm X" and "call X" as X."""
    bare = op.removeprefix("asm ").removeprefix("call ")
    return next((words for words, patterns in _KINDS if any(_names(bare, p) for p in patterns)), OTHER)


def counted(n: int, words: tuple[str, str], what: str = "more") -> str:
    """'2 more pointer additions', '1 fewer integer add' (n < 0), with `what` the word of n > 0."""
    return f"{abs(n)} {what if n > 0 else 'fewer'} {words[0] if abs(n) == 1 else words[1]}"


def delta(mine: dict[str, int], theirs: dict[str, int], top: int = 3) -> str:
    """B's instructions against A's in plain words, by kind, the largest change first ("" when the counts agree
    op by op): one kind alone as itself, several under the change in all."""
    ops = set(mine) | set(theirs)
    if all(mine.get(op, 0) == theirs.get(op, 0) for op in ops):
        return ""
    by: dict[tuple[str, str], int] = {}
    for op in ops:
        by[kind(op)] = by.get(kind(op), 0) + mine.get(op, 0) - theirs.get(op, 0)
    changed = sorted(((w, n) for w, n in by.items() if n), key=lambda x: (-abs(x[1]), x[0]))
    total = sum(n for _, n in changed)
    if not changed:
        return "as many instructions of each kind, some swapped for others of the kind"
    if len(changed) == 1:   # a kind that nets to nothing is still said to have changed, not left for unchanged
        swapped = any(kind(op) != changed[0][0] and mine.get(op, 0) != theirs.get(op, 0) for op in ops)
        return counted(*reversed(changed[0])) + (" (others swapped within their kind)" if swapped else "")
    kinds = ", ".join(counted(n, w) for w, n in changed[:top]) + (", and more" if len(changed) > top else "")
    whole = counted(total, ("instruction", "instructions")) if total else "as many instructions"
    return f"{whole} ({kinds})"


def stages(names) -> str:
    """'Triton's IR and the LLVM IR'."""
    return listed([STAGE_WORDS.get(s, s) for s in names])


def listed(items: list[str]) -> str:
    """'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
