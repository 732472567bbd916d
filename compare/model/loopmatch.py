"""Which loop of B is which loop of A in one stage, told by what the loops are, not by their position:
their place in the nest, trip count (TTIR/TTGIR), global loads and stores and op mix, weighed into a
similarity from 0 to 1. A pair under THRESHOLD is never matched; a pairing is claimed only where every
other way of pairing the same loops scores at least MARGIN less, else those loops are "unsure".
"""
from __future__ import annotations

import collections
import dataclasses

from compare.model.results import IRLoopMatch, IRSection, IRStage, IRVariant
from compare.model.states import LoopMatch

THRESHOLD = 0.6
MARGIN = 0.05
WEIGHTS = {"nest": 0.15, "trip": 0.25, "memory": 0.25, "ops": 0.25, "parent": 0.1}
MAX_GROUP = 6      # loops a side in one group of rivals: past this, no pairing among them is claimed


@dataclasses.dataclass(frozen=True)
class Facts:
    """What one loop is, as far as matching goes."""

    path: str
    depth: int
    children: int
    trip: str                        # "" where not read (LLIR, PTX, SASS, older reports)
    memory: collections.Counter      # (kind, op, width) -> count, in the loop's own body
    ops: collections.Counter
    parent: str                      # the enclosing loop's path, "" at the top


def facts(stage: IRStage) -> dict[str, Facts]:
    """The stage's loops by path, in listing order."""
    memory: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for m in stage.memory:
        memory[m.loop][(m.kind, m.op, m.width)] += m.count
    paths = [l.path for l in stage.loops]
    return {l.path: Facts(l.path, l.depth, sum(1 for p in paths if p.rpartition(".")[0] == l.path), l.trip,
                          memory[l.path], collections.Counter(dict(l.ops)), l.path.rpartition(".")[0])
            for l in sorted(stage.loops, key=lambda l: l.first_line)}


def overlap(x: collections.Counter, y: collections.Counter) -> float:
    """Counts both have over counts either has (1 when both are empty)."""
    keys = set(x) | set(y)
    most = sum(max(x[k], y[k]) for k in keys)
    return 1.0 if most == 0 else sum(min(x[k], y[k]) for k in keys) / most


def _parts(a: Facts, b: Facts) -> dict[str, float]:
    parts = {"nest": 0.5 * (a.depth == b.depth) + 0.5 * (a.children == b.children),
             "memory": overlap(a.memory, b.memory), "ops": overlap(a.ops, b.ops)}
    if a.trip and b.trip:
        parts["trip"] = float(a.trip == b.trip)
    return parts


def _mean(parts: dict[str, float]) -> float:
    return sum(WEIGHTS[k] * v for k, v in parts.items()) / sum(WEIGHTS[k] for k in parts)


def similarity(a: Facts, b: Facts, loops_a: dict[str, Facts], loops_b: dict[str, Facts]) -> float:
    """0 to 1: how alike two loops are, their enclosing loops included (without theirs in turn)."""
    parts = _parts(a, b)
    pa, pb = loops_a.get(a.parent), loops_b.get(b.parent)
    parts["parent"] = 1.0 if not (a.parent or b.parent) else (_mean(_parts(pa, pb)) if pa and pb else 0.0)
    return _mean(parts)


def _groups(xs: list[str], ys: list[str], edges: set) -> list[tuple[list[str], list[str]]]:
    """Connected groups of A's and B's loops, rival pairings joining them."""
    owner = {("a", x): ("a", x) for x in xs} | {("b", y): ("b", y) for y in ys}

    def root(n):
        while owner[n] != n:
            n = owner[n]
        return n
    for x, y in edges:
        owner[root(("a", x))] = root(("b", y))
    found: dict = {}
    for n in owner:
        found.setdefault(root(n), []).append(n)
    return [([p for s, p in g if s == "a"], [p for s, p in g if s == "b"]) for g in found.values()]


def _pairings(xs, ys, edges, score) -> list[tuple[float, frozenset]]:
    """Every way of pairing xs with ys along `edges` (a loop may stay unpaired), best first."""
    out = []

    def walk(i, used, chosen, total):
        if i == len(xs):
            out.append((total, frozenset(chosen)))
            return
        walk(i + 1, used, chosen, total)
        for y in ys:
            if y not in used and (xs[i], y) in edges:
                walk(i + 1, used | {y}, chosen + ((xs[i], y),), total + score[xs[i], y])
    walk(0, frozenset(), (), 0.0)
    return sorted(out, key=lambda t: -t[0])


def _alike(xs: list[str], ys: list[str], score: dict, carried: dict) -> bool:
    """As many loops on each side, each identical to each across (score 1) and carrying the same values: any
    pairing of them says the same, so the order of the listing may pick one."""
    kinds = {carried["a", x] for x in xs} | {carried["b", y] for y in ys}
    return bool(xs) and len(xs) == len(ys) and len(kinds) == 1 and all(score[x, y] > 1 - 1e-9 for x in xs for y in ys)


def match(stage_a: IRStage, stage_b: IRStage) -> tuple[IRLoopMatch, ...]:
    """B's loops matched to A's in one stage: matched, added, removed, and unsure groups (no pair claimed)."""
    fa, fb = facts(stage_a), facts(stage_b)
    score = {(x, y): similarity(fa[x], fb[y], fa, fb) for x in fa for y in fb}
    edges = set()   # each loop's candidates: above THRESHOLD and within MARGIN of its best
    for mine, theirs, key in ((fa, fb, lambda p, q: (p, q)), (fb, fa, lambda p, q: (q, p))):
        for p in mine:
            best = max((score[key(p, q)] for q in theirs), default=0.0)
            edges |= {key(p, q) for q in theirs if score[key(p, q)] >= max(THRESHOLD, best - MARGIN)}
    carried = {("a", l.path): l.carried for l in stage_a.loops} | {("b", l.path): l.carried for l in stage_b.loops}
    out: list[IRLoopMatch] = []
    for xs, ys in _groups(list(fa), list(fb), edges):
        pairings = _pairings(xs, ys, edges, score) if len(xs) <= MAX_GROUP and len(ys) <= MAX_GROUP else []
        near = [chosen for total, chosen in pairings if pairings[0][0] - total < MARGIN]
        sure = frozenset.intersection(*near) if near else frozenset()
        anywhere = {n for chosen in near for pair in chosen for n in pair} if near else set(xs) | set(ys)
        out += [IRLoopMatch(stage_a.stage, (x,), (y,), LoopMatch.MATCHED, round(score[x, y], 3)) for x, y in sure]
        paired = {n for pair in sure for n in pair}
        doubt_a = [x for x in xs if x in anywhere and x not in paired]
        doubt_b = [y for y in ys if y in anywhere and y not in paired]
        if _alike(doubt_a, doubt_b, score, carried):   # copies of one loop: paired in order, nothing depends on it
            out += [IRLoopMatch(stage_a.stage, (x,), (y,), LoopMatch.MATCHED, 1.0) for x, y in zip(doubt_a, doubt_b)]
        elif doubt_a or doubt_b:   # a loop paired in some near-best pairing has its partner there too: both sides
            out.append(IRLoopMatch(stage_a.stage, tuple(doubt_a), tuple(doubt_b), LoopMatch.UNSURE))
        out += [IRLoopMatch(stage_a.stage, (x,), (), LoopMatch.REMOVED) for x in xs if x not in paired and x not in doubt_a]
        out += [IRLoopMatch(stage_a.stage, (), (y,), LoopMatch.ADDED) for y in ys if y not in paired and y not in doubt_b]
    order_a, order_b = {p: k for k, p in enumerate(fa)}, {p: k for k, p in enumerate(fb)}
    return tuple(sorted(out, key=lambda m: (not m.a, order_a[m.a[0]] if m.a else order_b[m.b[0]])))


def stage_of(v: IRVariant | None, stage: str) -> IRStage | None:
    return next((s for s in v.stages if s.stage == stage), None) if v is not None else None


def pair_matches(a: IRVariant, b: IRVariant, stages) -> tuple[IRLoopMatch, ...]:
    """Every stage's matches of two compiled variants (what an IRPair records)."""
    found = [(stage_of(a, s), stage_of(b, s)) for s in stages]
    return tuple(m for sa, sb in found if sa is not None and sb is not None for m in match(sa, sb))


def stage_matches(section: IRSection, a: str, b: str, stage: str) -> tuple[IRLoopMatch, ...]:
    """The recorded matches of A's and B's loops in `stage`, or (a report made before they were
    recorded) the same computed from the two variants' summaries."""
    pair = next((p for p in section.pairs if (p.a, p.b) == (a, b)), None)
    va = next((v for v in section.variants if v.variant == a), None)
    vb = next((v for v in section.variants if v.variant == b), None)
    sa, sb = stage_of(va, stage), stage_of(vb, stage)
    if pair is not None and pair.loops:
        recorded = tuple(m for m in pair.loops if m.stage == stage)
        for m in recorded:
            _check(m, sa, sb, a, b)
        return recorded
    return match(sa, sb) if sa is not None and sb is not None else ()


_SIDES = {LoopMatch.MATCHED: (1, 1), LoopMatch.REMOVED: (1, 0), LoopMatch.ADDED: (0, 1)}


def _check(m: IRLoopMatch, sa: IRStage | None, sb: IRStage | None, a: str, b: str) -> None:
    """A recorded match names loops the two stages have, as many on each side as its status allows."""
    if m.status not in (*_SIDES, LoopMatch.UNSURE):
        raise ValueError(f"loop match status {m.status!r} in {m.stage}; known: {', '.join((*_SIDES, 'unsure'))}")
    want = _SIDES.get(m.status)
    if (len(m.a), len(m.b)) != want if want else not (m.a and m.b):
        raise ValueError(f"loop match {m.status!r} in {m.stage} with {len(m.a)} loops of {a} and {len(m.b)} of {b}")
    for paths, st, who in ((m.a, sa, a), (m.b, sb, b)):
        missing = [p for p in paths if st is None or p not in {l.path for l in st.loops}]
        if missing:
            raise ValueError(f"a loop match in {m.stage} names loop {missing[0]} of {who}, which has no such loop")
