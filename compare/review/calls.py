"""How an op is called with a family's op arguments: the call as a typed record, its text, and the fit.

A `Call` is `(ENTRY, ...)[INDEX]`: each entry a family op argument (`ArgRef`) or a constant (`Literal`),
by position or KW=; INDEX, if given, picks the element of a tuple result that is the family's first
output. `fit` finds the call by parameter names: the family's names, its `op_aliases`, its `op_neutral`
constants, and the op's own literal defaults where a later parameter must be passed by position.
"""
from __future__ import annotations

import dataclasses

from variants.spec import BadSpec, CallMap, Literal, call_map


@dataclasses.dataclass(frozen=True)
class ArgRef:
    name: str          # a name `variants.ops.argument_names(family)` lists

    def text(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class Entry:
    keyword: str | None        # None: by position
    value: ArgRef | Literal

    def text(self) -> str:
        return (f"{self.keyword}=" if self.keyword else "") + self.value.text()


@dataclasses.dataclass(frozen=True)
class Call:
    entries: tuple[Entry, ...]
    index: int | None = None   # the element of a tuple result taken as the family's first output

    @property
    def names(self) -> tuple[str, ...]:
        """The family op arguments the call passes, in its order."""
        return tuple(e.value.name for e in self.entries if isinstance(e.value, ArgRef))

    def text(self) -> str:
        return "(" + ", ".join(e.text() for e in self.entries) + ")" + (f"[{self.index}]" if self.index is not None else "")

    def as_call_map(self) -> CallMap:
        """The call as a --variant spec holds it (variants/spec.py): its positional entries, then its keywords
        (a Call has no positional entry after a keyword: neither `fit` nor Python's call syntax makes one)."""
        def entry(value: ArgRef | Literal):
            return value.name if isinstance(value, ArgRef) else value
        return CallMap(tuple(entry(e.value) for e in self.entries if e.keyword is None),
                       tuple((e.keyword, entry(e.value)) for e in self.entries if e.keyword is not None), self.index)


def parse_call(text: str) -> Call:
    """The Call of `(ENTRY, ...)[INDEX]` text, read by --variant's own parser (variants/spec.py: one grammar);
    ValueError (one line) if it is not that form."""
    try:
        found = call_map(text.strip(), f"call {text!r}")
    except BadSpec as exc:
        raise ValueError(str(exc)) from None

    def value(entry) -> ArgRef | Literal:
        return ArgRef(entry) if isinstance(entry, str) else entry
    entries = [Entry(None, value(e)) for e in found.positional] + [Entry(k, value(e)) for k, e in found.keywords]
    return Call(tuple(entries), found.select)


def literal(text: str) -> Literal | None:
    """The Literal a default's source text is (None: it is an expression, not a literal)."""
    try:
        [value] = parse_call(f"({text})").entries
    except ValueError:
        return None
    return value.value if isinstance(value.value, Literal) and value.keyword is None else None


@dataclasses.dataclass(frozen=True)
class Fit:
    score: int          # 3: every op argument, in the family's order; 2: in another; 1: some, with every gradient's
    call: Call | None   # None: the family's op arguments in its order, as they are
    how: str


@dataclasses.dataclass(frozen=True)
class Miss:
    why: str
    guess: Call                          # a starting point: the op's unmatched parameters under their own names
    unmatched: tuple[str, ...] = ()      # the op's parameters no family argument matched
    matched: int = 0                     # how many parameters matched (the closest family has most)


def _walk(op, family, known: tuple[str, ...], needed: tuple[str, ...] = ()):
    """([(parameter, its entry)], used family arguments, unmatched parameters, why not if no call fits)."""
    aliases = {a: canon for canon, names in family.op_aliases.items() if canon in known for a in names}
    tail = op.params[op.required:]
    defaults = dict(zip(tail, op.defaults)) if len(op.defaults) == len(tail) else {}
    entries, pending, unmatched, used, by_keyword, why = [], [], [], [], False, ""
    for i, p in enumerate(op.params):
        canon = p if p in known else aliases.get(p)
        if canon is not None and canon not in used:
            value = ArgRef(canon)
            used.append(canon)
        elif p in family.op_neutral and all(n in used for n in needed):
            # after the family's tensors only, as in torch's signatures: a `weight` before the target is
            # another op's (a fused linear layer's), not the class weight left out
            value = Literal(family.op_neutral[p])
        elif i >= op.required:
            pending.append(p)   # left to its default, unless a later parameter is passed by position
            continue
        else:
            unmatched.append(p)
            value = ArgRef(p)
        if pending and not by_keyword:
            fills = [literal(defaults.get(q, "")) for q in pending]
            if None not in fills:
                entries += [(q, Entry(None, f)) for q, f in zip(pending, fills)]
            elif op.name.endswith(".apply"):   # Function.apply passes no keywords to forward
                why = why or (f"the default of {pending[fills.index(None)]} is not known as a literal, and "
                              f"{op.name} takes its arguments by position only")
                entries += [(q, Entry(None, f or ArgRef(q))) for q, f in zip(pending, fills)]   # for the guess
            else:
                by_keyword = True
        pending = []
        entries.append((p, Entry(p if by_keyword else None, value)))
    return entries, used, unmatched, why


def fit(op, family, known: tuple[str, ...], needed: tuple[str, ...] = ()) -> Fit | Miss:
    """How `op` is called with `family`'s op arguments (`known`: argument_names(family)), or why it is not:
    it must take `needed` (the family's tensors) and every argument with a gradient."""
    pairs, used, unmatched, why = _walk(op, family, known, needed)
    entries = tuple(e for _, e in pairs)
    index = 0 if op.returns_tuple else None
    guess = Call(entries, index)
    signature = f"{op.name}({', '.join(op.params)})"
    if unmatched:
        return Miss(f"{signature}: no {family.name} op argument matches {', '.join(unmatched)}", guess,
                    tuple(unmatched), len(pairs) - len(unmatched))
    lacking = [a for a in dict.fromkeys((*needed, *family.op_grads.values())) if a not in used]
    if why or lacking or not used:
        why = why or (f"it takes no {', '.join(lacking)}, which {family.name}'s op needs" if lacking else
                      f"it takes none of {family.name}'s op arguments")
        return Miss(f"{signature}: {why}", guess, (), len(pairs))
    wanted = tuple(family.op_params)
    ordered = tuple(u for u in used if u in wanted)
    score = 3 if ordered == wanted else 2 if set(ordered) == set(wanted) else 1
    how = (f"{op.name} takes {family.name}'s op arguments ({', '.join(wanted)})" if score == 3 else
           f"{op.name} takes {family.name}'s op arguments in its own order" if score == 2 else
           f"{op.name} takes {', '.join(ordered)} of {family.name}'s op arguments")
    named = [f"{p} as {e.value.name}" for p, e in pairs
             if isinstance(e.value, ArgRef) and e.value.name != p]
    fixed = [f"{p}={e.value.text()}" for p, e in pairs if isinstance(e.value, Literal)]
    how += (f"; {', '.join(named)}" if named else "") + (f"; constants {', '.join(fixed)}" if fixed else "")
    if index is not None:
        outputs = getattr(family, "outputs", ())
        how += f"; its result's element 0 taken as {outputs[0] if outputs else 'the output'}"
    plain = score == 3 and index is None and [e.value for e in entries] == [ArgRef(w) for w in wanted]
    return Fit(score, None if plain else Call(entries, index), how)
