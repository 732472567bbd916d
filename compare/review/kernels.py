"""The Triton kernels of two revisions, found with `ast`, and what changed between them.

A kernel is a `@triton.jit` function anywhere in a module (guarded, a method, nested, or `k = triton.jit(f)`);
two versions are the same when their syntax trees, those of the jit helpers they call and of the module-level
constants these read are, so a change to comments or layout alone is none. Ops (compare/review/ops_changed.py) are the functions and autograd
Functions whose closure changed: a kernel, a launch, a helper or a constant they reach.
"""
from __future__ import annotations

import dataclasses

from compare.review.members import Kind, Module, Op, parse   # noqa: F401 (Op: re-exported)
from compare.review.ops_changed import Change, ChangedOp, Side, What, changed_ops   # noqa: F401 (re-exported)
from compare.review.revisions import Repository, Role, library, role


@dataclasses.dataclass(frozen=True)
class Kernel:
    path: str                    # the file, from the repository's top level
    module: str                  # its dotted module name (`mylib.ops.norm`)
    name: str                    # in its module: `k`, `Cls.k` (a method), `outer.k` (nested in a function)
    params: tuple[str, ...]
    required: int                # how many parameters have no default
    tuned: bool                  # behind @triton.autotune or @triton.heuristics
    code: str                    # the normalized tree, the name left out (renames compare equal)
    ops: tuple[Op, ...] = ()     # what launches it in its module, nearest first
    helpers: str = ""            # the code of the jit helpers it calls in its module (theirs is its change too)
    readable: bool = True        # False: `triton.jit(...)` wraps what cannot be read statically
    constants: str = ""          # the module-level constants it and those helpers read (a value baked into its code)

    @property
    def key(self) -> str:
        return f"{self.module}:{self.name}"


@dataclasses.dataclass
class Changes:
    changed: list[tuple[Kernel, Kernel]] = dataclasses.field(default_factory=list)   # (at BASE, at HEAD)
    added: list[Kernel] = dataclasses.field(default_factory=list)
    removed: list[Kernel] = dataclasses.field(default_factory=list)
    renamed: list[tuple[Kernel, Kernel]] = dataclasses.field(default_factory=list)   # same code, other name or module
    unreadable: list[str] = dataclasses.field(default_factory=list)   # files that do not parse, with why
    ops: list[ChangedOp] = dataclasses.field(default_factory=list)    # the public entries whose closure changed
    unresolved: list[str] = dataclasses.field(default_factory=list)   # kernels whose code cannot be read statically
    tests: list[tuple[str, Role]] = dataclasses.field(default_factory=list)   # changed test and benchmark files


def _users(mod: Module) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {n: [] for n in mod.members}
    for name, m in mod.members.items():
        for r in m.refs:
            if r in users and r != name:
                users[r].append(name)
    return users


def kernels_of(mod: Module) -> list[Kernel]:
    """The kernels `mod` defines, each with the ops that reach it (nearest first) and its helpers' code."""
    users, found = _users(mod), []
    for name, m in mod.members.items():
        if m.kind != Kind.JIT:
            continue
        reached, frontier = [], [name]
        while frontier:   # breadth first: the nearest callers first
            frontier = [u for f in frontier for u in users[f] if u not in reached and u != name]
            frontier = list(dict.fromkeys(frontier))
            reached += frontier
        helpers = _reached(mod, [name], Kind.JIT)
        found.append(Kernel(mod.path, mod.module, name, m.params, m.required, m.tuned, m.body,
                            tuple(mod.ops[d] for d in reached if d in mod.ops), _listed(helpers), m.readable,
                            _listed(_reached(mod, [name, *helpers], Kind.CONSTANT))))
    return found


def _reached(mod: Module, names: list[str], kind: Kind) -> dict[str, str]:
    """{name: code} of the members of `kind` that `names` read, and those these read in turn (not `names`)."""
    found, todo = {}, list(names)
    while todo:
        for r in sorted(mod.members[todo.pop()].refs):
            member = mod.members.get(r)
            if member is not None and member.kind == kind and r not in found and r not in names:
                found[r] = member.code
                todo.append(r)
    return found


def _listed(found: dict[str, str]) -> str:
    return "\n".join(f"{n}: {c}" for n, c in sorted(found.items()))


def kernels_in(source: str, path: str, module: str) -> list[Kernel]:
    """The kernels `source` defines, each with the ops that launch it (SyntaxError if it does not parse)."""
    return kernels_of(parse(source, path, module))


def changes(repo: Repository, base: str, head: str) -> Changes:
    """What happened to each kernel and op between commits `base` and `head` (files the same at both are
    skipped, but read where a changed one imports from them)."""
    before, after = repo.files(base), repo.files(head)
    changed = sorted(p for p in set(before) | set(after) if p.endswith(".py") and before.get(p) != after.get(p))
    differ = library(changed)   # tests and benchmark scripts call ops; they are none
    out = Changes(tests=[(p, role(p)) for p in changed if p not in differ])
    cache: dict = {}
    sides = Side(repo, before, base[:7], cache), Side(repo, after, head[:7], cache)
    found = []
    for side in sides:
        paths = [p for p in differ if p in side.files]
        side.preload(paths)
        out.unreadable += [f"{p} at {side.rev}: {side.errors[p]}" for p in paths if p in side.errors]
        mods = [side.parsed[p] for p in paths if side.parsed.get(p) is not None]
        out.unresolved += [f"{u} at {side.rev}" for m in mods for u in m.unresolved]
        found.append({k.key: k for m in mods for k in kernels_of(m)})
    old, new = found
    out.changed = [(old[k], new[k]) for k in new if k in old and
                   (old[k].code, old[k].helpers, old[k].constants) != (new[k].code, new[k].helpers, new[k].constants)]
    gone = [old[k] for k in old if k not in new]
    for k in [new[k] for k in new if k not in old]:
        twin = next((g for g in gone if g.code == k.code), None)
        if twin is not None:
            gone.remove(twin)
            out.renamed.append((twin, k))
        else:
            out.added.append(k)
    out.removed = gone
    renames = {(a.module, a.name): b.name for a, b in out.renamed if a.module == b.module}
    out.ops = changed_ops(*sides, [p for p in differ if p in after], renames)
    return out
