"""The diff of two cleaned listings that shows only what differs after normalization.

Lines align on their skeletons (names replaced by their kind), so one inserted instruction is one line,
not a cascade of renamings; along aligned lines A's and B's names are paired one to one, and a pair that
breaks the pairing is changed. SASS registers are reused by the allocator: compared by class only."""
from __future__ import annotations

import dataclasses
import difflib

from compare.checks.ir.normalize import Renamer, names, renamed, skeleton, substitute

CONTEXT = 3


@dataclasses.dataclass(frozen=True)
class StageDiff:
    """A normalized unified diff of one stage and the line counts a reviewer weighs it by."""

    text: str             # unified diff of the normalized listings, "" when they agree
    changed_lines: int    # lines removed plus lines added
    a_lines: int          # normalized listing lengths
    b_lines: int
    a_listing: tuple[str, ...]
    b_listing: tuple[str, ...]


def _pair(stage: str, a_names, b_names, a2b: dict, b2a: dict, commit: bool) -> bool:
    """Pair names position by position; False (and nothing recorded) when a pairing conflicts."""
    new = {}
    for x, y in zip(a_names, b_names):
        if not renamed(stage, x):   # a name that need not pair one to one (in SASS, a register: reused)
            continue
        if a2b.get(x, y) != y or b2a.get(y, x) != x or new.get(x, y) != y:
            return False
        new[x] = y
    if commit:
        for x, y in new.items():
            a2b[x], b2a[y] = y, x
    return True


def _aligned(stage: str, a: list[str], b: list[str], ka: list[str], kb: list[str]):
    """Align on keys ka/kb, then split aligned runs where the names break the pairing."""
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    a2b, b2a, out = {}, {}, []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            out.append((tag, i1, i2, j1, j2))
            continue
        for k in range(i2 - i1):
            ok = _pair(stage, names(stage, a[i1 + k]), names(stage, b[j1 + k]), a2b, b2a, commit=True)
            tag_k = "equal" if ok else "replace"
            if out and out[-1][0] == tag_k and out[-1][2] == i1 + k and out[-1][4] == j1 + k:
                t, p1, _, q1, _ = out[-1]
                out[-1] = (t, p1, i1 + k + 1, q1, j1 + k + 1)
            else:
                out.append((tag_k, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1))
    return out, a2b, b2a


def _keyed(stage: str, lines: list[str], known: dict) -> list[str]:
    """Alignment keys: names in `known` written as given, every other name as its kind."""
    return [skeleton(stage, line, known) for line in lines]


def _opcodes(stage: str, a: list[str], b: list[str]):
    """Opcodes (tag, i1, i2, j1, j2) over the two listings, and the pairing of A's names to B's.

    Pass 1 aligns on skeletons and pairs names along aligned lines; pass 2 aligns again with the
    paired names written out, so that a run of look-alike lines shifted by one aligns right."""
    sa, sb = [skeleton(stage, x) for x in a], [skeleton(stage, x) for x in b]
    _, a2b, b2a = _aligned(stage, a, b, sa, sb)
    ka = _keyed(stage, a, {x: "=" + y for x, y in a2b.items()})
    kb = _keyed(stage, b, {y: "=" + y for y in b2a})
    out, a2b, b2a = _aligned(stage, a, b, ka, kb)
    for tag, i1, i2, j1, j2 in out:  # pair what replaced lines share, for readable names only
        if tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                _pair(stage, names(stage, a[i1 + k]), names(stage, b[j1 + k]), a2b, b2a, commit=True)
    return out, a2b


def _display_names(stage: str, a: list[str], b: list[str], a2b: dict) -> tuple[dict, dict]:
    """Canonical names for A (first appearance) and for B (A's name through the pairing, else fresh)."""
    ra = Renamer(stage, a)
    b2a = {y: x for x, y in a2b.items()}
    b_map = {}
    for line in b:
        for n in names(stage, line):
            if n not in b_map:
                b_map[n] = ra.given[b2a[n]] if n in b2a else (ra.fresh(n) + "'" if renamed(stage, n) else n)
    return ra.given, b_map


def _groups(opcodes, n: int):
    """Runs of changed opcodes with up to `n` equal lines of context on each side."""
    codes = list(opcodes)
    if not any(tag != "equal" for tag, *_ in codes):
        return []
    tag, i1, i2, j1, j2 = codes[0]
    if tag == "equal":
        codes[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    tag, i1, i2, j1, j2 = codes[-1]
    if tag == "equal":
        codes[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    groups, group = [], []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, i1 + n, j1, j1 + n))
            groups.append(group)
            group = []
            i1, j1 = i2 - n, j2 - n
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def unified(stage: str, a: list[str], b: list[str], a_label: str = "A", b_label: str = "B",
            context: int = CONTEXT) -> StageDiff:
    """The normalized unified diff of two cleaned listings of one stage."""
    ops, a2b = _opcodes(stage, a, b)
    a_map, b_map = _display_names(stage, a, b, a2b)
    na = [substitute(stage, x, a_map) for x in a]
    nb = [substitute(stage, x, b_map) for x in b]
    lines, changed = [], 0
    for group in _groups(ops, context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, p1, p2, q1, q2 in group:
            if tag == "equal":
                lines.extend(" " + x for x in na[p1:p2])
                continue
            lines.extend("-" + x for x in na[p1:p2])
            lines.extend("+" + x for x in nb[q1:q2])
            changed += (p2 - p1) + (q2 - q1)
    header = [f"--- {a_label}", f"+++ {b_label}"] if lines else []
    return StageDiff("\n".join(header + lines), changed, len(na), len(nb), tuple(na), tuple(nb))


def raw_changed_lines(a_text: str, b_text: str) -> int:
    """Lines removed plus added in a plain unified diff of the raw listings (what `diff -u` shows)."""
    return sum(1 for line in difflib.unified_diff(a_text.splitlines(), b_text.splitlines(), lineterm="")
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def raw_diff_length(a_text: str, b_text: str) -> int:
    """All lines of a plain unified diff (3 lines of context) of the raw listings."""
    return sum(1 for _ in difflib.unified_diff(a_text.splitlines(), b_text.splitlines(), lineterm=""))
