"""Normalize one stage's listing so that only meaningful differences remain.

`clean` drops what never means a change (locations, debug sections, comments, SASS addresses, PTX `.reg`
counts) and names the kernel `kernel`; `rename` renames values, registers and labels canonically in order
of first appearance, per kind. Two kernels that differ only in their names normalize alike."""
from __future__ import annotations

import re

from compare.checks.ir.compile import STAGES  # noqa: E402 (the stages are the compiler's)

# ---------------------------------------------------------------- names per stage
# Each pattern's group "name" is one renamable name; `_kind` says which counter renames it.
_NAME_PATTERNS = {
    "ttir": re.compile(r"(?P<name>%[\w.$-]+|\^[\w.$-]+)"),
    "llir": re.compile(r"(?P<name>%[\w.$-]+)"),
    "ptx": re.compile(r"(?P<name>%(?:rd|rs|fd|hh|r|f|p|h|b)\d+\b|\$L__\w+)"),
    "sass": re.compile(r"(?P<name>\bL\d+\b|\bU?R\d+\b|\bU?P[0-6]\b)"),
}
_NAME_PATTERNS["ttgir"] = _NAME_PATTERNS["ttir"]


def _kind(stage: str, name: str) -> str:
    """The renaming class of a name: registers keep their class (%rd, %f, R, UR, P...)."""
    if stage in ("ttir", "ttgir"):
        return "^bb" if name.startswith("^") else "%v"
    if stage == "llir":
        return "%v"
    if stage == "ptx":
        return "$L" if name.startswith("$") else re.match(r"%[a-z]+", name).group(0)
    return re.match(r"[A-Z]+", name).group(0)


def names(stage: str, line: str) -> list[str]:
    """The renamable names in one cleaned line, in order."""
    return [m.group("name") for m in _NAME_PATTERNS[stage].finditer(line)]


def skeleton(stage: str, line: str, known: dict | None = None) -> str:
    """The line with every renamable name replaced by `known[name]`, else by its kind: what must match
    for two lines to align."""
    known = known or {}
    return _NAME_PATTERNS[stage].sub(
        lambda m: "\x00" + known.get(m.group("name"), _kind(stage, m.group("name"))), line)


def substitute(stage: str, line: str, mapping: dict) -> str:
    """The line with each name replaced by `mapping[name]` (names not in it are kept)."""
    return _NAME_PATTERNS[stage].sub(lambda m: mapping.get(m.group("name"), m.group("name")), line)


def renamed(stage: str, name: str) -> bool:
    """Whether a name is renamed canonically: all are, except SASS registers, which are physical
    (the allocator's choice, reused across the function); they are only aligned by class."""
    return stage != "sass" or name.startswith("L")


class Renamer:
    """Hands out canonical names per kind in order of first request: %v0, %v1, ..., %rd0, ...; the names of
    `lines` first, in order of first appearance."""

    def __init__(self, stage: str, lines: list[str] = ()):
        self.stage = stage
        self.given: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        for line in lines:
            for n in names(stage, line):
                self.name(n)

    def fresh(self, name: str) -> str:
        if not renamed(self.stage, name):
            return name
        kind = _kind(self.stage, name)
        n = self.counts.get(kind, 0)
        self.counts[kind] = n + 1
        return f"{kind}{n}"

    def name(self, name: str) -> str:
        if not renamed(self.stage, name):
            return name
        if name not in self.given:
            self.given[name] = self.fresh(name)
        return self.given[name]

def rename(stage: str, lines: list[str]) -> list[str]:
    """Cleaned lines with every name replaced canonically, in order of first appearance."""
    given = Renamer(stage, lines).given
    return [substitute(stage, line, given) for line in lines]


# ---------------------------------------------------------------- cleaning per stage
_MLIR_LOC = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")


def _clean_mlir(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.startswith("#loc") or not line.strip():
            continue
        line = _MLIR_LOC.sub("", line)
        out.append(line.rstrip())
    return out


_LLIR_DEBUG = re.compile(r"(?:,\s*|\s+)!(?:dbg|tbaa|alias\.scope|noalias|llvm\.\w+)\s+!\d+")


_LLIR_COMMENT = re.compile(r'^((?:[^";]|"[^"]*")*)')


def _clean_llir(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("!", ";", "source_filename", "declare void @llvm.dbg")):
            continue
        if "call void @llvm.dbg." in s:
            continue
        line = _LLIR_DEBUG.sub("", line)
        line = _LLIR_COMMENT.match(line).group(1)   # a ';' inside a string (inline asm) is not a comment
        m = re.match(r"^([\w.$-]+):", line)
        if m:  # a block label: write it as the value that branches name
            line = f"%{m.group(1)}:"
        out.append(line.rstrip())
    return out


def _clean_ptx(text: str) -> list[str]:
    out, in_section = [], False
    for line in text.splitlines():
        s = line.strip()
        if in_section:
            in_section = s != "}"
            continue
        if s.startswith(".section") and ".debug" in s:
            in_section = "{" not in s or not s.endswith("}")   # a section on one line ends there
            continue
        s = re.sub(r"//.*$", "", s).strip()
        if not s or s.startswith((".loc", ".file")):
            continue
        if re.match(r"^\$L__(?:func_begin|func_end|tmp)\d+:$", s):
            continue
        s = re.sub(r"^(\.reg\s+\.\w+\s+%\w+)<\d+>", r"\1<N>", s)   # how many names a class uses is renaming too
        out.append(s)
    return out


_SASS_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")


def _clean_sass(text: str) -> list[str]:
    insns, head = [], []
    for line in text.splitlines():
        m = _SASS_INSN.match(line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2).rstrip(" ;")))
        elif line.strip() and not line.strip().startswith("/*") and not insns:
            s = line.strip()
            if s.startswith(("code for", ".target", "Function", ".headerflags")):
                head.append(re.sub(r"\s+", " ", s))
    targets = sorted({int(t, 16) for _, ins in insns for t in re.findall(r"\bBRA\s+0x([0-9a-f]+)", ins)})
    label = {addr: f"L{i}" for i, addr in enumerate(targets)}
    out = list(head)
    for addr, ins in insns:
        if addr in label:
            out.append(f"{label[addr]}:")
        ins = re.sub(r"\b(BRA\s+)0x([0-9a-f]+)", lambda m: m.group(1) + label[int(m.group(2), 16)], ins)
        out.append(re.sub(r"\s+", " ", ins))
    return out


_CLEANERS = {"ttir": _clean_mlir, "ttgir": _clean_mlir, "llir": _clean_llir, "ptx": _clean_ptx, "sass": _clean_sass}


def clean(stage: str, text: str, kernel_name: str = "") -> list[str]:
    """The listing's lines without locations, debug information, comments, blank lines or addresses,
    with the kernel's own name written as `kernel`."""
    if stage not in _CLEANERS:
        raise ValueError(f"unknown stage {stage!r}; known stages: {', '.join(STAGES)}")
    if kernel_name:
        text = text.replace(kernel_name, "kernel")
    return _CLEANERS[stage](text)


def normalize(stage: str, text: str, kernel_name: str = "") -> list[str]:
    """Cleaned and canonically renamed: the normalized listing of one stage."""
    return rename(stage, clean(stage, text, kernel_name))
