"""What the headline and the IR section say about two variants' loops, from their matches
(compare.model.loopmatch), each claim followed by the stages it holds in. Pairs are claimed only of
matched loops (carried pointers that changed; the op deltas of the innermost ones, where the time
goes); a loop added, removed or without a confident match is listed with the pointers it carries.
"""
from __future__ import annotations

import collections

from compare.model.loopmatch import stage_matches, stage_of
from compare.model.results import IRLoop, IRSection, IRStage, IRVariant
from compare.model.states import LoopMatch

STAGE = {"ttir": "TTIR", "ttgir": "TTGIR", "llir": "LLIR", "ptx": "PTX", "sass": "SASS"}
TOP = 3          # op deltas named per loop and stage (the tables name more)


def _named_stage(v: IRVariant, stage: IRStage) -> IRStage | None:
    """The TTIR (or TTGIR) of `v` when it names its loops and its loop nest has the same paths as `stage`'s:
    the stage whose source names hold for `stage`'s loops too."""
    named = next((s for s in (stage_of(v, "ttir"), stage_of(v, "ttgir")) if s and any(l.variable for l in s.loops)),
                 None)
    if named is None or {l.path for l in named.loops} != {l.path for l in stage.loops}:
        return None
    return named


def _variables(v: IRVariant, stage: IRStage) -> dict[str, str]:
    """Induction variables by path, from TTIR (or TTGIR), for a stage whose loop nest has the same paths."""
    named = _named_stage(v, stage)
    return {l.path: l.variable for l in named.loops if l.variable} if named else {}


def _pointer_names(v: IRVariant, stage: IRStage) -> dict[str, tuple[str, ...]]:
    """The carried pointers' source names by path, from TTIR (or TTGIR), where the loop of the same path
    in `stage` carries as many pointers."""
    named = _named_stage(v, stage)
    if named is None:
        return {}
    here = {l.path: l.carried_pointers for l in stage.loops}
    return {l.path: l.pointer_names for l in named.loops if l.pointer_names and here[l.path] == l.carried_pointers}


class _Pair:
    """Two variants' loops in one stage, with their names; `names`: what to call the two variants (their
    own names unless given: an op's kernels are told by the op's name)."""

    def __init__(self, va: IRVariant, vb: IRVariant, sa: IRStage, sb: IRStage, names: tuple[str, str] | None = None):
        self.a, self.b = names or (va.variant, vb.variant)
        self.la, self.lb = {l.path: l for l in sa.loops}, {l.path: l for l in sb.loops}
        self.va, self.vb = _variables(va, sa), _variables(vb, sb)
        self.pa, self.pb = _pointer_names(va, sa), _pointer_names(vb, sb)

    def loop(self, pa: str, pb: str) -> str:
        var = self.va.get(pa) or self.vb.get(pb)
        name = f"loop {pa}" if pa == pb else f"loop {pa} of {self.a}, {pb} of {self.b}"
        return name + (f" (for {var})" if var else "")

    def named(self, path: str, mine: bool) -> str:
        """' (X_ptr, Y_ptr)': the pointers a loop of one side carries, where the source named them all."""
        names = (self.pa if mine else self.pb).get(path, ())
        return f" ({', '.join(names)})" if names else ""

    def one(self, path: str, mine: bool) -> str:
        """A loop of one side, with the pointers it carries."""
        loop, var = (self.la, self.va) if mine else (self.lb, self.vb)
        n = loop[path].carried_pointers
        carried = f"carries {n} pointer{'s' if n != 1 else ''}{self.named(path, mine)}"
        bits = ([f"for {var[path]}"] if path in var else []) + [carried if n else "no pointer carried"]
        return f"{path} ({'; '.join(bits)})"

    def innermost(self, pa: str, pb: str) -> bool:
        return not any(p.startswith(pa + ".") for p in self.la) and not any(p.startswith(pb + ".") for p in self.lb)


def op_deltas(loop: IRLoop, base: IRLoop | None, top: int = TOP) -> str:
    """B's op counts against A's loop, the largest first ("" when they agree)."""
    mine, theirs = dict(loop.ops), dict(base.ops) if base else {}
    deltas = [(op, mine.get(op, 0) - theirs.get(op, 0)) for op in sorted(set(mine) | set(theirs))]
    deltas = sorted([d for d in deltas if d[1]], key=lambda d: (-abs(d[1]), d[0]))
    text = ", ".join(f"{op} {n:+d}" for op, n in deltas[:top])
    if len(deltas) > top:
        text += f" and {len(deltas) - top} more ({loop.instructions - (base.instructions if base else 0):+d} in all)"
    return text


def _stages(stages: list[str]) -> str:
    return ", ".join(STAGE.get(s, s) for s in stages)


def loop_claims(section: IRSection, va: IRVariant, vb: IRVariant, names: tuple[str, str] | None = None) -> list[str]:
    """The headline's parts on loops: carried pointers of matched loops, loops only one side has or
    without a confident match (TTIR to PTX: SASS gives no carried values), then the op deltas of the
    innermost matched loops at every stage (those with none named only when the code is not identical).
    `names`: what to call va and vb (see _Pair)."""
    claims: dict[str, list[str]] = {}
    inner: dict[str, dict[str, list[str]]] = {}
    for stage in section.stages:
        sa, sb = stage_of(va, stage), stage_of(vb, stage)
        if sa is None or sb is None:
            continue
        p, sass = _Pair(va, vb, sa, sb, names), stage == "sass"
        for m in stage_matches(section, va.variant, vb.variant, stage):
            text = ""
            if m.status == LoopMatch.MATCHED:
                (pa,), (pb,) = m.a, m.b
                x, y = p.la[pa], p.lb[pb]
                if not sass and x.carried_pointers != y.carried_pointers:
                    text = (f"{p.loop(pa, pb)} carries pointers across iterations: {x.carried_pointers} in "
                            f"{p.a}{p.named(pa, True)}, {y.carried_pointers} in {p.b}{p.named(pb, False)}")
                if p.innermost(pa, pb):
                    inner.setdefault(p.loop(pa, pb), {}).setdefault(op_deltas(y, x), []).append(stage)
            elif not sass and m.status in (LoopMatch.ADDED, LoopMatch.REMOVED):
                who, path = (p.a, m.a[0]) if m.a else (p.b, m.b[0])
                text = f"loop {p.one(path, bool(m.a))} only in {who}"
            elif not sass:
                text = (f"no confident match, no pair claimed: {p.a}'s loop{'s' if len(m.a) > 1 else ''} "
                        f"{', '.join(p.one(x, True) for x in m.a)} against {p.b}'s "
                        f"loop{'s' if len(m.b) > 1 else ''} {', '.join(p.one(y, False) for y in m.b)}")
            if text:
                claims.setdefault(text, []).append(stage)
    parts = [f"{text} ({_stages(stages)})" for text, stages in claims.items()]
    same = []
    for name, by_delta in inner.items():
        changed = [f"{_stages(st)} {d}" for d, st in by_delta.items() if d]
        if not changed:
            same.append(name)
            continue
        unchanged = [f"unchanged in {_stages(by_delta[''])}"] if "" in by_delta else []
        parts.append(f"innermost {name}, instruction count changes: " + " / ".join(changed + unchanged))
    pair = next((x for x in section.pairs if (x.a, x.b) == (va.variant, vb.variant)), None)
    identical = pair is not None and pair.stages and all(d.identical for d in pair.stages)
    if same and not identical:   # identical code: the headline says so, and nothing about its loops
        parts.append(f"same instruction counts at every stage: innermost {', '.join(same)}")
    return parts


def match_lines(section: IRSection, a: str, b: str) -> list[str]:
    """One line per group of stages that match the same way: which of B's loops is which of A's, in words
    ("loops 1, 2 with the loop at the same place; loop 3 with loop 2")."""
    said: dict[str, list[str]] = collections.defaultdict(list)
    for stage in section.stages:
        found = stage_matches(section, a, b, stage)
        if not found:
            continue
        matched = [m for m in found if m.status == LoopMatch.MATCHED]
        same = [m.a[0] for m in matched if m.a[0] == m.b[0]]
        words = [f"loop{'s' if len(same) > 1 else ''} {', '.join(same)} with the loop at the same place"] if same else []
        words += [f"loop {m.b[0]} with loop {m.a[0]}" for m in matched if m.a[0] != m.b[0]]
        words += [f"loop {', '.join(m.a or m.b)} {'only in B' if m.status == LoopMatch.ADDED else 'only in A'}"
                  for m in found if m.status in (LoopMatch.ADDED, LoopMatch.REMOVED)]
        words += [f"no sure pairing of {', '.join(m.a)} with {', '.join(m.b)}" for m in found
                  if m.status == LoopMatch.UNSURE]
        said[", ".join(words)].append(stage)
    return [f"{text} ({_stages(stages)})" for text, stages in said.items()]
