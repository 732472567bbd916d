"""Which ops changed what runs between two revisions, and what changed: kernels, helpers, launches, constants.

An op's closure is every module-level name it reaches (through bodies, and through `from <its package>.m
import name` into module m); the op changed when a member of its closure differs between BASE and HEAD, or
is reached at one only. Reported are the public entries: changed ops no other changed op of their module
reaches (an autograd Function over the wrapper calling its apply).
"""
from __future__ import annotations

import dataclasses
import enum

from compare.review.members import Kind, Launch, Member, Module, Op, module_name, parse
from compare.review.revisions import Repository, Role, role


class Change(str, enum.Enum):
    KERNEL = "kernel"                  # a kernel it launches: its code
    JIT_HELPER = "jit helper"          # a @triton.jit function a launched kernel calls
    KERNEL_ADDED = "kernel added"      # reached at HEAD, not at BASE
    KERNEL_REMOVED = "kernel removed"
    LAUNCH = "launch"                  # a launch `K[grid](..., num_warps=...)` in the op or its helpers changed
    HELPER = "helper"                  # a Python function/class it calls
    CONSTANT = "constant"              # a module-level value it reads
    OWN_CODE = "own code"              # the op's own body (apart from launches)


CODE = (Change.KERNEL, Change.JIT_HELPER, Change.KERNEL_ADDED, Change.KERNEL_REMOVED)   # what changes kernel code run


@dataclasses.dataclass(frozen=True)
class What:
    kind: Change
    name: str          # the kernel/helper/constant name (module:name if from another module)
    detail: str = ""   # LAUNCH: which launch arguments changed ("num_warps", "grid", ...); else "added"/"removed"


@dataclasses.dataclass(frozen=True)
class ChangedOp:
    path: str
    module: str
    op: Op                     # at HEAD
    base_op: Op | None         # at BASE (None: new op)
    kernels: tuple[str, ...]   # module:name of every kernel it launches (reaches) at HEAD
    what: tuple[What, ...]     # what changed, most important first
    folded: tuple[str, ...] = ()   # names of changed ops compared through this one (its callees)

    @property
    def launcher_only(self) -> bool:
        """No kernel's (or jit helper's) code changed: only what launches them, or which are launched."""
        return not any(w.kind in (Change.KERNEL, Change.JIT_HELPER) and not w.detail for w in self.what)


class Side:
    """One revision of the repository, its modules parsed when first asked for."""

    def __init__(self, repo: Repository, files: dict[str, str], rev: str, cache: dict | None = None):
        self.repo, self.files, self.rev = repo, files, rev
        self.cache = {} if cache is None else cache   # {(path, blob): Module}: a file the same at both is read once
        self.paths = {module_name(p, files): p for p in files if p.endswith(".py")}
        self.parsed: dict[str, Module | None] = {}
        self.errors: dict[str, str] = {}   # {path: why it could not be read}

    def preload(self, paths: list[str]) -> None:
        texts = self.repo.read([self.files[p] for p in paths])
        for p in paths:
            self._parse(p, texts.get(self.files[p]))

    def _parse(self, path: str, text: str | None) -> Module | None:
        if path not in self.parsed:
            module = self.cache.get((path, self.files[path]))
            if module is None and text is not None:
                try:
                    module = parse(text, path, module_name(path, self.files), path.endswith("/__init__.py"))
                    self.cache[(path, self.files[path])] = module
                except (SyntaxError, ValueError, RecursionError) as exc:
                    self.errors[path] = f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"
            self.parsed[path] = module
        return self.parsed[path]

    def at_path(self, path: str) -> Module | None:
        if path not in self.files:
            return None
        if path not in self.parsed:
            cached = (path, self.files[path]) in self.cache
            self._parse(path, None if cached else self.repo.read([self.files[path]]).get(self.files[path]))
        return self.parsed[path]

    def module(self, name: str) -> Module | None:
        return self.at_path(self.paths[name]) if name in self.paths else None


@dataclasses.dataclass
class Closure:
    members: dict[tuple[str, str], Member]           # (module, name), nearest first
    edges: dict[tuple[str, str], list[tuple[str, str]]]

    def kernels(self) -> list[tuple[str, str]]:
        """The jitted members a Python member reaches directly: the kernels launched, not the helpers they call."""
        called = {t for k, targets in self.edges.items() if self.members[k].kind != Kind.JIT for t in targets}
        return [k for k, m in self.members.items() if m.kind == Kind.JIT and k in called]


def closure(side: Side, module: str, name: str, relevant: set[str] | None = None) -> Closure:
    """Every member `module`'s `name` reaches at `side`, breadth first, into modules of the same package
    (beyond the member it imports, only into `relevant` ones: those that changed or import from them)."""
    top = module.split(".")[0]
    members, edges, frontier = {}, {}, [(module, name)]
    while frontier:
        ahead = []
        for key in frontier:
            mod = side.module(key[0])
            member = mod.members.get(key[1]) if mod is not None else None
            if member is None or key in members:
                continue
            members[key] = member
            inside = relevant is None or key[0] in relevant or key[0] == module
            targets = [(key[0], r) for r in sorted(member.refs) if r in mod.members] if inside else []
            source_module, _, source_name = member.source.partition(":")
            if member.kind == Kind.IMPORT and source_module.split(".")[0] == top and source_name:
                targets.append((source_module, source_name))
            edges[key] = targets
            ahead += [t for t in targets if t not in members]
        frontier = ahead
    return Closure(members, edges)


def _renamed(then: Closure | None, renames: dict) -> Closure | None:
    """`then` (a BASE closure) with each renamed kernel under its HEAD name, in its key and wherever a member's
    code or launches name it, so a rename alone is no change of the ops launching it."""
    if then is None or not renames:
        return then

    def rename(member: Member, module: str) -> Member:
        code = member.code
        for (mod, old), new in renames.items():
            if mod == module:
                # an ast dump's names are quoted (id='k', attr='k'); a launch stands as '<launch k>'
                code = code.replace(f"'{old}'", f"'{new}'").replace(f"<launch {old}>", f"<launch {new}>")
        launches = tuple(dataclasses.replace(x, kernel=renames.get((module, x.kernel), x.kernel)) for x in member.launches)
        return dataclasses.replace(member, code=code, launches=launches)
    members = {(k[0], renames.get(k, k[1])): rename(m, k[0]) for k, m in then.members.items()}
    edges = {(k[0], renames.get(k, k[1])): [(t[0], renames.get(t, t[1])) for t in ts] for k, ts in then.edges.items()}
    return Closure(members, edges)


def _launch_detail(old: tuple[Launch, ...], new: tuple[Launch, ...]) -> dict[str, str]:
    """{kernel: which parts of its launches differ} between two versions of one member."""
    out = {}
    for kernel in dict.fromkeys([x.kernel for x in old + new]):
        a, b = [x for x in old if x.kernel == kernel], [x for x in new if x.kernel == kernel]
        parts = [] if len(a) == len(b) else ["launched" if not a else "not launched" if not b else "launches"]
        for x, y in zip(a, b):
            parts += ["grid"] * (x.grid != y.grid) + ["arguments"] * (x.args != y.args)
            parts += [k for k in dict.fromkeys([*x.keywords, *y.keywords]) if x.keywords.get(k) != y.keywords.get(k)]
        if parts:
            out[kernel] = ", ".join(dict.fromkeys(parts))
    return out


def _label(key: tuple[str, str], module: str) -> str:
    return key[1] if key[0] == module else f"{key[0]}:{key[1]}"


def _python(member: Member, own: bool) -> Change:
    return Change.OWN_CODE if own else Change.CONSTANT if member.kind == Kind.CONSTANT else Change.HELPER


def _defined(side: Side, key: tuple[str, str]) -> Member | None:
    mod = side.module(key[0])
    return mod.members.get(key[1]) if mod is not None else None


def _news(key: tuple[str, str], closure: Closure, op: tuple[str, str], new: set) -> bool:
    """Whether `key`, reached at one revision only (`new`: all those), is worth a line: not an import (its
    use changed), and in another module only where a member reached at both reaches it."""
    if closure.members[key].kind == Kind.IMPORT:
        return False
    return key[0] == op[0] or any(key in targets and k not in new for k, targets in closure.edges.items())


def _read(edges: dict, key: tuple[str, str], members: dict) -> tuple:
    """The code of the constants jit member `key` reads (through constants, and imports of them): a value a
    kernel reads is compiled into it, so a change to it is the kernel's."""
    found, todo = {}, [key]
    while todo:
        for t in edges.get(todo.pop(), ()):
            m = members.get(t)
            if t not in found and m is not None and m.kind in (Kind.CONSTANT, Kind.IMPORT):
                found[t] = m.code
                todo.append(t)
    return tuple(sorted(found.items()))


def _what(op: tuple[str, str], now: Closure, then: Closure | None, base: Side) -> list[What]:
    """What differs in `op`'s closure: `now` at HEAD, `then` at BASE (None for a new op: each member as
    BASE defines it, if it does)."""
    kernels_now = set(now.kernels())
    before = then.members if then is not None else \
        {k: m for k in now.members if (m := _defined(base, k)) is not None}
    then_edges = then.edges if then is not None else now.edges
    found = []
    for key, m in now.members.items():
        old, name = before.get(key), _label(key, op[0])
        if m.kind == Kind.JIT:
            if old is None:
                found.append(What(Change.KERNEL_ADDED, name) if key in kernels_now else
                             What(Change.JIT_HELPER, name, "added"))
            elif old.code != m.code or _read(now.edges, key, now.members) != _read(then_edges, key, before):
                found.append(What(Change.KERNEL if key in kernels_now else Change.JIT_HELPER, name))
            continue
        if old is None:
            if _news(key, now, op, set(now.members) - set(before)):
                found.append(What(_python(m, key == op), name, "added"))
            continue
        if old.code != m.code:
            found.append(What(_python(m, key == op), name, "import" if m.kind == Kind.IMPORT else ""))
        found += [What(Change.LAUNCH, _label((key[0], kernel), op[0]), detail)
                  for kernel, detail in _launch_detail(old.launches, m.launches).items()]
    if then is not None:
        kernels_then, gone = set(then.kernels()), set(then.members) - set(now.members)
        for key, m in then.members.items():
            if key in gone and (m.kind == Kind.JIT or _news(key, then, op, gone)):
                name = _label(key, op[0])
                found.append(What(Change.KERNEL_REMOVED, name) if key in kernels_then else
                             What(Change.JIT_HELPER if m.kind == Kind.JIT else _python(m, False), name, "removed"))
    return _ordered(found)


def _ordered(found: list[What]) -> list[What]:
    return sorted(dict.fromkeys(found), key=lambda w: 0 if w.kind in CODE else 1 if w.kind == Change.LAUNCH else 2)


def importers(side: Side, paths: list[str]) -> list[str]:
    """The other files of the same packages as `paths` that import from one of them (directly: the ops of a
    file that reaches them only through another unchanged file are not looked for)."""
    changed = {module_name(p, side.files) for p in paths}
    tops = {m.split(".")[0] for m in changed}
    candidates = [p for m, p in side.paths.items() if m.split(".")[0] in tops and p not in paths and role(p) == Role.LIBRARY]
    texts, found = side.repo.read([side.files[p] for p in candidates]), []
    for p in candidates:
        text = texts.get(side.files[p])
        if text is None or not any(m in text or f".{m.rpartition('.')[2]} import" in text for m in changed):
            continue   # a file that does not name the module does not import from it
        mod = side._parse(p, text)
        if mod is not None and any(m.source.partition(":")[0] in changed for m in mod.members.values()):
            found.append(p)
    return found


def changed_ops(base: Side, head: Side, paths: list[str], renames: dict | None = None) -> list[ChangedOp]:
    """The public entries among the changed ops of the files `paths` (those that differ) and of the files
    importing from them, in that order. `renames`: {(module, old name): new name} of kernels whose code is
    the same under another name, which an op launching it runs unchanged."""
    more = importers(head, paths)
    relevant = {module_name(p, head.files) for p in paths + more}
    found, closures = {}, {}
    for path in paths + more:
        mod = head.at_path(path)
        if mod is None:
            continue
        old_mod = base.at_path(path)
        for name, op in mod.ops.items():
            key = (mod.module, name)
            closures[key] = now = closure(head, *key, relevant)
            base_op = old_mod.ops.get(name) if old_mod is not None else None
            then = closure(base, *key, relevant) if base_op is not None else None
            what = _what(key, now, _renamed(then, renames or {}), base)
            if what:
                found[key] = ChangedOp(path, mod.module, op, base_op, tuple(f"{m}:{k}" for m, k in now.kernels()),
                                       tuple(what))
    return _public(found, closures)


def _public(found: dict[tuple[str, str], ChangedOp], closures: dict[tuple[str, str], Closure]) -> list[ChangedOp]:
    """The changed ops no other changed op reaches, each with the names it folds (a wrapper of a Function's
    apply is folded into the Function, its own changes kept as a helper's)."""
    def reaches(a: tuple[str, str], b: tuple[str, str]) -> bool:
        return a != b and b in closures[a].members

    def function(n: tuple[str, str]) -> bool:
        return found[n].op.name.endswith(".apply")
    reached = {b for a in found for b in found if reaches(a, b) and (function(a) or not function(b))}
    roots = [n for n in found if n not in reached]
    wrapped = {w: f for w in roots if not function(w) for f in reversed(roots) if function(f) and reaches(w, f)}
    out = []
    for r in roots:
        if r in wrapped:
            continue
        wrappers = [w for w, f in wrapped.items() if f == r]
        what = list(found[r].what)
        for w in wrappers:   # another module's wrapper would name the Function's changes again, otherwise
            what += [What(Change.HELPER, _label(w, r[0]), x.detail) if x.kind == Change.OWN_CODE else x
                     for x in found[w].what if x.kind == Change.OWN_CODE or w[0] == r[0]]
        folded = [_label(n, r[0]) for n in found if reaches(r, n)] + [_label(w, r[0]) for w in wrappers]
        out.append(dataclasses.replace(found[r], what=tuple(_ordered(what)), folded=tuple(folded)))
    return out
