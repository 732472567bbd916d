"""What the headline and the IR section say about two variants' loops, from their matches
(compare.model.loopmatch), each claim followed by the stages it holds in. Pairs are claimed only of
matched loops (carried pointers that changed; the op deltas of the innermost ones, where the time
goes); a loop added, removed or without a confident match is listed with the pointers it carries.
"""
from __future__ import annotations

import collections

from compare.model import plain_words
from compare.model.loopmatch import stage_matches, stage_of
from compare.model.results import IRLoop, IRSection, IRStage, IRVariant
from compare.model.states import LoopMatch
from compare.model.vocabulary import STAGE_TITLES

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

    def plain_loop(self, pa: str, pb: str, innermost: bool = False) -> str:
        """'the innermost loop over `start` (loop 2.1, inside the loop over `channel`)': what it counts over,
        where it sits, and its number, the name the folded details give it."""
        var = self.va.get(pa) or self.vb.get(pb)
        what = f"the {'innermost ' if innermost else ''}loop" + (f" over `{var}`" if var else "")
        where = f"loop {pa}" if pa == pb else f"loop {pa} in {self.a}, {pb} in {self.b}"
        outer = self.va.get(pa.rpartition(".")[0]) if pa == pb else None
        return f"{what} ({where}" + (f", inside the loop over `{outer}`)" if outer else ")")

    def plain_one(self, path: str, mine: bool) -> str:
        """A loop of one side in words, with the pointers it carries from one iteration to the next."""
        var = (self.va if mine else self.vb).get(path)
        n = (self.la if mine else self.lb)[path].carried_pointers
        carried = f", carrying {_pointers(n)}{self.named(path, mine)} from one iteration to the next" if n else ""
        return f"a loop{f' over `{var}`' if var else ''} (loop {path}){carried}"


def _pointers(n: int) -> str:
    return "no pointer" if n == 0 else f"{n} pointer{'s' if n != 1 else ''}"


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
    return ", ".join(STAGE_TITLES.get(s, s) for s in stages)


def loop_claims(section: IRSection, va: IRVariant, vb: IRVariant, names: tuple[str, str] | None = None,
                plain: bool = False) -> list[str]:
    """The headline's parts on loops: carried pointers of matched loops, loops only one side has or
    without a confident match (TTIR to PTX: SASS gives no carried values), then the op deltas of the
    innermost matched loops at every stage (those with none named only when the code is not identical).
    `names`: what to call va and vb (see _Pair); `plain`: in plain words (compare/model/plain_words.py)."""
    claims: dict[str, list[str]] = {}
    inner: dict[str, dict[str, list[str]]] = {}
    every = []   # the stages a pointer claim could hold in: both sides compiled to it, and not SASS
    for stage in section.stages:
        sa, sb = stage_of(va, stage), stage_of(vb, stage)
        if sa is None or sb is None:
            continue
        p, sass = _Pair(va, vb, sa, sb, names), stage == "sass"
        every += [] if sass else [stage]
        for m in stage_matches(section, va.variant, vb.variant, stage):
            text = ""
            if m.status == LoopMatch.MATCHED:
                (pa,), (pb,) = m.a, m.b
                x, y = p.la[pa], p.lb[pb]
                if not sass and x.carried_pointers != y.carried_pointers:
                    text = _carried(p, pa, pb, plain)
                if p.innermost(pa, pb):
                    name = p.plain_loop(pa, pb, True) if plain else p.loop(pa, pb)
                    change = plain_words.delta(dict(y.ops), dict(x.ops)) if plain else op_deltas(y, x)
                    inner.setdefault(name, {}).setdefault(change, []).append(stage)
            elif not sass and m.status in (LoopMatch.ADDED, LoopMatch.REMOVED):
                who, path = (p.a, m.a[0]) if m.a else (p.b, m.b[0])
                text = f"{p.plain_one(path, bool(m.a)) if plain else 'loop ' + p.one(path, bool(m.a))} only in {who}"
            elif not sass:
                text = _unsure(p, m, plain)
            if text:
                claims.setdefault(text, []).append(stage)
    parts = [text + (_where(stages, every) if plain else f" ({_stages(stages)})") for text, stages in claims.items()]
    parts += _innermost(inner, plain)
    same = [name for name, by_delta in inner.items() if not any(by_delta)]
    pair = next((x for x in section.pairs if (x.a, x.b) == (va.variant, vb.variant)), None)
    identical = pair is not None and pair.stages and all(d.identical for d in pair.stages)
    if same and not identical:   # identical code: the headline says so, and nothing about its loops
        parts.append(f"the same instruction counts at every stage in {plain_words.listed(same)}" if plain
                     else f"same instruction counts at every stage: innermost {', '.join(same)}")
    return parts


def _carried(p: _Pair, pa: str, pb: str, plain: bool) -> str:
    """A matched loop whose carried pointers changed, and how many each side carries."""
    x, y = p.la[pa].carried_pointers, p.lb[pb].carried_pointers
    if not plain:
        return (f"{p.loop(pa, pb)} carries pointers across iterations: {x} in {p.a}{p.named(pa, True)}, {y} in "
                f"{p.b}{p.named(pb, False)}")
    return (f"{p.plain_loop(pa, pb)} carries {_pointers(x)}{p.named(pa, True)} from one iteration to the next in "
            f"{p.a}, {_pointers(y) if y else 'none'}{p.named(pb, False)} in {p.b}")


def _unsure(p: _Pair, m, plain: bool) -> str:
    """Loops of the two sides no pairing was sure of: each side's, and no claim made of them."""
    if plain:
        mine, theirs = (plain_words.listed([p.plain_one(x, True) for x in m.a]),
                        plain_words.listed([p.plain_one(y, False) for y in m.b]))
        return (f"no sure pairing of {p.a}'s loops with {p.b}'s, so nothing is claimed of them: {p.a} has {mine}, "
                f"{p.b} {theirs}")
    return (f"no confident match, no pair claimed: {p.a}'s loop{'s' if len(m.a) > 1 else ''} "
            f"{', '.join(p.one(x, True) for x in m.a)} against {p.b}'s "
            f"loop{'s' if len(m.b) > 1 else ''} {', '.join(p.one(y, False) for y in m.b)}")


def _innermost(inner: dict[str, dict[str, list[str]]], plain: bool) -> list[str]:
    """Per innermost loop whose counts changed somewhere: the change at each stage (raw: and where none)."""
    parts = []
    for name, by_delta in inner.items():
        changed = [(d, st) for d, st in by_delta.items() if d]
        if not changed:
            continue
        if plain:   # the stages where nothing changed go unsaid here; the folded details name them
            parts.append(f"{name}: " + plain_words.listed([f"{d} in {plain_words.stages(st)}" for d, st in changed]))
            continue
        unchanged = [f"unchanged in {_stages(by_delta[''])}"] if "" in by_delta else []
        parts.append(f"innermost {name}, instruction count changes: "
                     + " / ".join([f"{_stages(st)} {d}" for d, st in changed] + unchanged))
    return parts


def _where(stages: list[str], every: list[str]) -> str:
    """Nothing where a claim holds at every stage it could; else the stages it holds in, in words."""
    return "" if set(every) <= set(stages) else f" (in {plain_words.stages(stages)})"



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
