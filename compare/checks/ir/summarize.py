"""The structural summary of one normalized stage: its loop nest, what each loop carries, what it
executes, and how wide its global loads and stores are.

Loops are read from what the stage really holds, after Triton's unrolling and pipelining (regions in
TTIR/TTGIR, back-edges in LLIR, PTX and SASS); SASS registers are physical, so no carried values there."""
from __future__ import annotations

import collections
import re

from compare.model.results import IRCarried, IRLoop, IRMemOp, IRStage


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside <>, () or []."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "<([" 
        depth -= ch in ">)]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _paths(spans: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(path like '2.1', depth) for loop spans (first, last line), nesting by containment."""
    order = sorted(range(len(spans)), key=lambda k: (spans[k][0], -spans[k][1]))
    out: dict[int, tuple[str, int]] = {}
    stack: list[int] = []
    counters: dict[str, int] = collections.defaultdict(int)
    for k in order:
        while stack and not (spans[stack[-1]][0] <= spans[k][0] and spans[k][1] <= spans[stack[-1]][1]):
            stack.pop()
        parent = out[stack[-1]][0] if stack else ""
        counters[parent] += 1
        out[k] = (f"{parent}.{counters[parent]}" if parent else str(counters[parent]), len(stack))
        stack.append(k)
    return [out[k] for k in range(len(spans))]


def _own_lines(k: int, spans: list[tuple[int, int]]) -> list[int]:
    """Line indexes of loop k that are in no loop nested inside it (the opening line is the loop itself)."""
    first, last = spans[k]
    inner = [s for j, s in enumerate(spans) if j != k and first <= s[0] and s[1] <= last and s != spans[k]]
    return [i for i in range(first + 1, last + 1) if not any(a <= i <= b for a, b in inner)]


# ---------------------------------------------------------------- opcodes and memory ops
_MLIR_OP = re.compile(r'^\s*(?:%[\w.$#:-]+(?:\s*,\s*%[\w.$#:-]+)*\s*=\s*)?"?([a-z_]+\.[\w.]+)')
_LL_OP = re.compile(r"^\s*(?:%[\w.$-]+\s*=\s*)?(?:tail\s+|notail\s+|musttail\s+)?([a-z][\w.]*)")
_PTX_OP = re.compile(r"^(?:@!?%p\w+\s+)?([a-z][\w.]*)")
_SASS_OP = re.compile(r"^(?:@!?U?P\w+\s+)?([A-Z][\w.]*)")


def opcode(stage: str, line: str) -> str:
    """The operation or instruction a normalized line executes ('' for labels, braces, declarations)."""
    s = line.strip()
    if not s or s.endswith(":") or s in ("{", "}", "})", ")"):
        return ""
    if stage in ("ttir", "ttgir"):
        m = _MLIR_OP.match(s)
        return m.group(1) if m else ""
    if stage == "llir":
        asm = re.search(r'asm\s+(?:sideeffect\s+)?"([^"]*)"', s)
        if asm:  # inline PTX: name it by its memory instruction if it has one, else its first
            mem = re.search(r"\b(?:ld|st)\.global[\w.]*", asm.group(1))
            first = re.search(r"[a-z][\w.]*", asm.group(1))
            return f"asm {mem.group(0) if mem else (first.group(0) if first else '')}"
        m = _LL_OP.match(s)
        if not m or s.startswith(("define", "attributes", "declare", "target", "@")):
            return ""
        op = m.group(1)
        call = re.search(r"call\s+[^@]*@([\w.]+)", s)
        return f"call {call.group(1)}" if op == "call" and call else op
    if stage == "ptx":
        if s.startswith("."):
            return ""
        m = _PTX_OP.match(s)
        return m.group(1) if m else ""
    m = _SASS_OP.match(s)
    return m.group(1) if m and not s.startswith((".", "code for", "Function")) else ""


def memory_op(stage: str, line: str) -> tuple[str, str, str] | None:
    """(load|store, the operation, width) for a global load or store, else None."""
    op = opcode(stage, line)
    if stage in ("ttir", "ttgir"):
        if op not in ("tt.load", "tt.store"):
            return None
        types = line.rsplit(":", 1)[-1]
        width = "tensor" if "tensor<" in types else "scalar"
        return ("load" if op == "tt.load" else "store", op, width)
    if stage in ("llir", "ptx"):
        name = op.removeprefix("asm ")
        m = re.match(r"(ld|st)\.global\.(?:[a-z]+\.)*?(v(\d))?\.?[bfus]\d+", name)
        if not m or not name.startswith(("ld.global", "st.global")):
            return None
        return ("load" if m.group(1) == "ld" else "store", name, f"vector x{m.group(3)}" if m.group(2) else "scalar")
    m = re.match(r"(LDG|STG)(\.[\w.]+)?$", op)
    if not m:
        return None
    bits = re.search(r"\.(64|128)\b", op)
    width = f"vector {bits.group(1)}-bit" if bits else "scalar 32-bit or less"
    return ("load" if m.group(1) == "LDG" else "store", op, width)


# ---------------------------------------------------------------- loop spans and carried values
def _mlir_loops(lines: list[str]):
    spans, carried, headers, stack, depth = [], [], [], [], 0
    for i, line in enumerate(lines):
        opens = line.count("{") - line.count("}")
        if re.search(r"\bscf\.(for|while)\b", line) and line.rstrip().endswith("{"):
            stack.append((len(spans), depth))
            spans.append([i, i])
            headers.append(line.strip())
            m = re.search(r"iter_args\((.*?)\)\s*->\s*\((.*)\)\s*(?::\s*\w+\s*)?\{\s*$", line)
            types = _split_top(m.group(2)) if m else []
            carried.append(tuple(IRCarried(t, "!tt.ptr" in t) for t in types))
        depth += opens
        while stack and depth <= stack[-1][1]:
            k, _ = stack.pop()
            spans[k][1] = i
    return [tuple(s) for s in spans], carried, headers


_MLIR_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?\s*=\s*(.*?)\s*$")
_MLIR_FOR = re.compile(r"\bscf\.for\s+(%[\w.$-]+)\s*=\s*(%[\w.$#-]+)\s+to\s+(%[\w.$#-]+)\s+step\s+(%[\w.$#-]+)")
_MLIR_NAME = re.compile(r"%[\w.$-]+")


def _expr(name: str, defs: dict, depth: int = 0) -> str:
    """A value as an expression of the kernel's arguments (a0, a1...), constants and program ids."""
    rhs = defs.get(name.split("#")[0], "?")
    op, _, rest = rhs.partition(" ")
    if not rest:
        return rhs   # an argument, an induction variable, a carried value, or unknown
    if not op.startswith(("arith.", "tt.", "math.")):
        return re.split(r"[\s(]", op.strip('"'))[0].strip('"')
    if depth >= 3:
        return "..."
    if op == "arith.constant":
        return rest.rsplit(" : ", 1)[0]
    if op == "tt.get_program_id":
        return f"program_id {rest.split()[0]}"
    args = _MLIR_NAME.findall(rest.split(" : ")[0])
    return f"{op.rsplit('.', 1)[-1]}({', '.join(_expr(a, defs, depth + 1) for a in args)})"


def _mlir_trips(lines: list[str], openers: list[int]) -> list[str]:
    """Each loop's "LOWER to UPPER step STEP", its bounds read back through the definitions before it (MLIR
    reuses a name only in sibling regions, so the latest definition of a name is the one in scope)."""
    defs: dict[str, str] = {}
    trips = {}
    for i, line in enumerate(lines):
        if "tt.func" in line:
            defs.update({n: f"a{k}" for k, n in enumerate(re.findall(r"(%[\w.$-]+):", line))})
            continue
        m = _MLIR_FOR.search(line)
        if i in openers and m:
            trips[i] = f"{_expr(m.group(2), defs)} to {_expr(m.group(3), defs)} step {_expr(m.group(4), defs)}"
        d = _MLIR_DEF.match(line)
        if d:
            defs[d.group(1)] = "result" if m else d.group(2)
        if m:
            defs[m.group(1)] = "iv"
            for carried in re.findall(r"(%[\w.$-]+)\s*=", line[m.end():]):
                defs[carried] = "carried"
    return [trips.get(i, "") for i in openers]


def _labelled_loops(lines: list[str], label_re, branch_re):
    """Loops closed by a branch to an earlier label: spans (label line, branch line) and headers."""
    labels = {}
    spans, headers = [], []
    for i, line in enumerate(lines):
        m = label_re.match(line.strip())
        if m:
            labels[m.group(1)] = i
        for target in branch_re.findall(line):
            if target in labels and labels[target] <= i:
                spans.append((labels[target], i))
                headers.append(lines[labels[target]].strip())
    merged: dict[int, int] = {}
    spans = [(a, b) for a, b in spans if b - a > 1]  # a label branched to by the next line is a halt, not a loop
    for first, last in spans:  # several back-edges to one header are one loop
        merged[first] = max(last, merged.get(first, last))
    spans = sorted(merged.items())
    return spans, [lines[a].strip() for a, _ in spans]


def _llir_carried(lines: list[str], span) -> tuple:
    out = []
    for line in lines[span[0] + 1: span[1] + 1]:
        m = re.match(r"\s*%[\w.$-]+\s*=\s*phi\s+(.+?)\s*\[", line)
        if not m:
            break
        out.append(IRCarried(m.group(1), m.group(1).startswith("ptr")))
    return tuple(out)


_PTX_REG = re.compile(r"%(?:rd|rs|fd|hh|r|f|p|h|b)\d+'?")
_NO_DEST = ("st.", "bra", "ret", "bar.", "red.", "atom.", "exit")


def _counter_update(line: str) -> str:
    """The register a line steps by a constant (`add.s64 %rd3, %rd3, 1;`), else ''."""
    m = re.match(r"^(?:add|sub)\.[su]\d+\s+(%\w+),\s*(%\w+),\s*(-?\d+|0x[0-9a-fA-F]+);", line)
    return m.group(1) if m and m.group(1) == m.group(2) else ""


def _ptx_carried(lines: list[str], span) -> tuple:
    body = [l.strip() for l in lines[span[0]: span[1] + 1]]
    written, read_first, defs = set(), [], {}
    for line in body:
        op = opcode("ptx", line)
        if not op:
            continue
        regs = _PTX_REG.findall(line.split(op, 1)[1])
        dest = [] if op.startswith(_NO_DEST) or not regs else [regs[0]]
        for r in regs[len(dest):]:
            if r not in written and r not in read_first:
                read_first.append(r)
        for r in dest:
            written.add(r)
            defs.setdefault(r, []).append(regs[1:])
    counters = {r for line in body for r in [_counter_update(line)] if r}
    direct = set()
    for line in body:
        for inside in re.findall(r"\[([^\]]*)\]", line):
            direct.update(_PTX_REG.findall(inside))
    address = set(direct)
    for _ in range(4):
        address |= {s for r in list(address) for srcs in defs.get(r, []) for s in srcs if s.startswith("%rd")}
    kinds = {"%rd": "b64", "%r": "b32", "%f": "f32", "%fd": "f64", "%p": "pred", "%rs": "b16", "%h": "f16"}
    out = []
    for r in read_first:
        if r in written:
            ty = kinds.get(re.match(r"%[a-z]+", r).group(0), "reg")
            if r in counters and r not in direct:
                out.append(IRCarried(f"{ty} {r} (counter)", False))
            else:
                out.append(IRCarried(f"{ty} {r}", r in address))
    return tuple(out)


def loops(stage: str, lines: list[str]):
    """(spans, carried per loop, header line per loop) of a normalized listing."""
    if stage in ("ttir", "ttgir"):
        return _mlir_loops(lines)
    if stage == "llir":
        spans, headers = _labelled_loops(lines, re.compile(r"^(%[\w.$-]+):$"), re.compile(r"label (%[\w.$-]+)"))
        return spans, [_llir_carried(lines, s) for s in spans], headers
    if stage == "ptx":
        spans, headers = _labelled_loops(lines, re.compile(r"^(\$L\w+):$"), re.compile(r"\bbra(?:\.uni)?\s+(\$L\w+)"))
        return spans, [_ptx_carried(lines, s) for s in spans], headers
    spans, headers = _labelled_loops(lines, re.compile(r"^(L\d+):$"), re.compile(r"\bBRA\s+(L\d+)"))
    return spans, [() for _ in spans], headers


# ---------------------------------------------------------------- the summary
def summarize(stage: str, lines: list[str]) -> IRStage:
    """Loops with their carried values and own op counts, and the global memory ops, of one stage."""
    spans, carried, headers = loops(stage, lines)
    paths = _paths(list(spans))
    trips = _mlir_trips(lines, [a for a, _ in spans]) if stage in ("ttir", "ttgir") else [""] * len(spans)
    loop_of = {}
    built = []
    for k, span in enumerate(spans):
        own = _own_lines(k, list(spans))
        for i in own:
            loop_of[i] = paths[k][0]
        counts = collections.Counter(op for op in (opcode(stage, lines[i]) for i in own) if op)
        built.append(IRLoop(paths[k][0], paths[k][1], span[0] + 1, headers[k][:160], tuple(carried[k]),
                            tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))), sum(counts.values()),
                            trip=trips[k]))
    mem = collections.Counter()
    for i, line in enumerate(lines):
        found = memory_op(stage, line)
        if found:
            mem[(found[0], found[1], found[2], loop_of.get(i, "-"))] += 1
    memory = tuple(IRMemOp(kind, op, width, where, n) for (kind, op, width, where), n in sorted(mem.items()))
    total = sum(1 for line in lines if opcode(stage, line))
    return IRStage(stage, len(lines), total, tuple(sorted(built, key=lambda l: l.first_line)), memory)
