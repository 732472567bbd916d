"""One module's definitions, read with `ast`: what each module-level name is, what it reads, what it launches.

Definitions are found anywhere a module-level name is bound (under `if`/`try`/`with` guards too); jitted
functions also in classes and functions, and as `k = triton.jit(f)` (under autotune/heuristics, through
aliases of `triton.jit`). Code is compared as the normalized tree: no docstrings, no names of kernels,
nested kernels and launches taken out (each compared on its own).
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import enum

TUNERS = ("autotune", "heuristics")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclasses.dataclass(frozen=True)
class Op:
    """A callable users call that launches a kernel: a function, or an autograd Function's `apply`."""

    name: str                    # what a --variant spec names: `norm` or `NormFunction.apply`
    params: tuple[str, ...]      # its parameters, an autograd Function's ctx left out
    required: int                # how many of them have no default
    returns_tuple: bool = False  # its forward (or the function) has a `return a, b, ...`
    defaults: tuple[str, ...] = ()   # the source text of the defaults of params[required:]


class Kind(str, enum.Enum):
    FUNCTION = "function"
    CLASS = "class"
    JIT = "jit"                  # a @triton.jit function (a kernel or a helper kernels call)
    CONSTANT = "constant"        # a module-level assignment
    IMPORT = "import"


@dataclasses.dataclass(frozen=True)
class Launch:
    kernel: str                  # the launched name's last part
    grid: str
    args: tuple[str, ...]
    keywords: dict               # {keyword: its value's tree}; "**" for **kwargs


@dataclasses.dataclass(frozen=True)
class Member:
    name: str                    # in its module: `f`, `Cls.kernel`, `outer.inner`
    kind: Kind
    code: str                    # normalized trees of its bindings, guards included
    refs: frozenset[str]         # the names (of this module's members) it reads
    launches: tuple[Launch, ...] = ()
    source: str = ""             # IMPORT: the "module:name" it binds
    params: tuple[str, ...] = () # JIT: its parameters
    required: int = 0
    tuned: bool = False          # JIT: behind @triton.autotune or @triton.heuristics
    body: str = ""               # JIT: its code without the name or guards (renames compare equal)
    readable: bool = True        # JIT: False where `triton.jit(...)` wraps what cannot be read statically


@dataclasses.dataclass
class Module:
    path: str
    module: str
    members: dict[str, Member]
    ops: dict[str, Op]           # {member name: the op}
    unresolved: list[str]        # kernels whose definition cannot be read statically, with where


def module_name(path: str, files) -> str:
    """The dotted module of `path`: its folders up to the first that is no package (no __init__.py there)."""
    folders, stem = path.split("/")[:-1], path.rsplit("/", 1)[-1][:-len(".py")]
    start = len(folders)
    while start > 0 and "/".join(folders[:start]) + "/__init__.py" in files:
        start -= 1
    return ".".join(folders[start:] + ([] if stem == "__init__" else [stem]))


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
    return ".".join(parts)


def params_of(args: ast.arguments) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    names = positional + [a.arg for a in args.kwonlyargs]
    defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    return tuple(names), len(names) - len(defaults), tuple(ast.unparse(d) for d in defaults)


class _Triton:
    """The names that stand for triton, its jit and its tuners in one module."""

    def __init__(self, tree: ast.Module):
        self.modules, self.jits, self.tuners = {"triton"}, set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                self.modules |= {a.asname or a.name for a in node.names if a.name == "triton"}
            elif isinstance(node, ast.ImportFrom) and node.module == "triton":
                self.jits |= {a.asname or a.name for a in node.names if a.name == "jit"}
                self.tuners |= {a.asname or a.name for a in node.names if a.name in TUNERS}
        for node in tree.body:   # `jit = triton.jit`
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and self.is_jit(node.value):
                self.jits.add(node.targets[0].id)

    def _is(self, node: ast.AST, names: set[str], last: tuple[str, ...]) -> bool:
        parts = dotted(node).split(".")
        return (len(parts) == 1 and parts[0] in names) or (len(parts) == 2 and parts[0] in self.modules
                                                            and parts[1] in last)

    def is_jit(self, node: ast.AST) -> bool:
        return self._is(node.func if isinstance(node, ast.Call) else node, self.jits, ("jit",))

    def is_tuner(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and self._is(node.func, self.tuners, TUNERS)

    def jitted(self, fn: ast.AST) -> bool:
        return isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(self.is_jit, fn.decorator_list))

    def wrapped(self, value: ast.AST) -> ast.AST | None:
        """What `triton.jit(...)` (under tuners) wraps in `value`; None where `value` is no such call."""
        if isinstance(value, ast.Call) and len(value.args) == 1:
            if isinstance(value.func, ast.Call) and self.is_tuner(value.func):
                return self.wrapped(value.args[0])
            if self.is_jit(value.func):
                return value.args[0]
        return None


def free_names(node: ast.AST) -> set[str]:
    """The names `node`'s code reads that it (or a scope within it) does not bind itself."""
    loads, stores, inner, declared = set(), set(), set(), set()

    def visit(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            if isinstance(child, _COMPREHENSIONS):   # its targets are its own
                inner.update(free_names(child))
            elif isinstance(child, _SCOPES):
                stores.add(getattr(child, "name", ""))
                outer = [*getattr(child, "decorator_list", ()), *getattr(child, "bases", ()),
                         *getattr(child, "keywords", ())]
                if not isinstance(child, ast.ClassDef):
                    outer += [*child.args.defaults, *(d for d in child.args.kw_defaults if d is not None)]
                for o in outer:
                    loads.update(x.id for x in ast.walk(o) if isinstance(x, ast.Name))
                inner.update(free_names(child))
            elif isinstance(child, ast.Name):
                (loads if isinstance(child.ctx, ast.Load) else stores).add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                stores.update((a.asname or a.name).split(".")[0] for a in child.names)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                declared.update(child.names)
            elif isinstance(child, ast.arg):
                stores.add(child.arg)
            else:
                visit(child)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        visit(node.args)
        for part in (node.body if isinstance(node.body, list) else [node.body]):
            visit(ast.Expression(body=part))
        return (loads | inner) - (stores - declared)
    if isinstance(node, _COMPREHENSIONS):
        visit(node)
        return (loads | inner) - stores
    for part in (node.body if isinstance(node, ast.ClassDef) else [node]):
        visit(ast.Expression(body=part))
    return (loads - stores) | inner if isinstance(node, ast.ClassDef) else loads | inner


class _Strip(ast.NodeTransformer):
    """A definition's tree without docstrings; its nested kernels and the launches it makes become marks."""

    def __init__(self, triton: _Triton, launchable: set[str], root: ast.AST):
        self.triton, self.launchable, self.root = triton, launchable, root

    def _undoc(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node is not self.root and self.triton.jitted(node):
            return ast.Expr(ast.Constant(f"<kernel {node.name}>"))
        return self._undoc(node)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = _undoc

    def visit_Call(self, node):
        if isinstance(node.func, ast.Subscript) and dotted(node.func.value).split(".")[-1] in self.launchable:
            return ast.Constant(f"<launch {dotted(node.func.value)}>")
        return self.generic_visit(node)


def _launches(node: ast.AST, launchable: set[str]) -> tuple[Launch, ...]:
    found = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
            name = dotted(n.func.value).split(".")[-1]
            if name in launchable:
                found.append(Launch(name, ast.dump(n.func.slice), tuple(ast.dump(a) for a in n.args),
                                    {k.arg or "**": ast.dump(k.value) for k in n.keywords}))
    return tuple(found)


def _bindings(body: list[ast.stmt], guard: str = ""):
    """(statement, the guards it is under) of every statement binding module-level names."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            test = ast.dump(stmt.test)
            yield from _bindings(stmt.body, f"{guard}if {test}\n")
            yield from _bindings(stmt.orelse, f"{guard}if not {test}\n")
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            yield from _bindings(stmt.body + stmt.orelse + stmt.finalbody, f"{guard}try\n")
            for h in stmt.handlers:
                yield from _bindings(h.body, f"{guard}except {ast.dump(h.type) if h.type else ''}\n")
        elif isinstance(stmt, (ast.With, ast.For, ast.While)):
            yield from _bindings(stmt.body + getattr(stmt, "orelse", []), guard)
        else:
            yield stmt, guard


def _returns_tuple(fn: ast.AST) -> bool:
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple):
            return True
        todo += [c for c in ast.iter_child_nodes(n) if not isinstance(c, _SCOPES)]
    return False


def _op(name: str, node: ast.AST) -> Op | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names, required, defaults = params_of(node.args)
        return Op(name, names, required, _returns_tuple(node), defaults)
    if isinstance(node, ast.ClassDef) and any(dotted(b).endswith("Function") for b in node.bases):
        forward = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
        if forward is not None:
            names, required, defaults = params_of(forward.args)
            return Op(f"{name}.apply", names[1:], max(required - 1, 0), _returns_tuple(forward), defaults)
    return None   # a class that is no autograd Function (an nn.Module) is not called as an op


def _decorator_names(node: ast.AST) -> set[str]:
    return {n.id for d in node.decorator_list for n in ast.walk(d) if isinstance(n, ast.Name)}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[:len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


class _Reader:
    """Builds a Module's members from its tree, statement by statement."""

    def __init__(self, tree: ast.Module, path: str, module: str, is_package: bool):
        self.triton, self.path, self.module, self.is_package = _Triton(tree), path, module, is_package
        self.found: dict[str, Member] = {}
        self.unresolved: list[str] = []
        bound = list(_bindings(tree.body))
        self.defs = {s.name: s for s, _ in bound if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        wraps = [(s, self.triton.wrapped(s.value)) for s, _ in bound if isinstance(s, ast.Assign)]
        self.bodies = {w.id for _, w in wraps if isinstance(w, ast.Name) and w.id in self.defs}
        self.launchable = {n.name for n in ast.walk(tree) if self.triton.jitted(n)} | \
            {t.id for s, w in wraps if w is not None for t in s.targets if isinstance(t, ast.Name)} | \
            {a.asname or a.name for s, _ in bound if isinstance(s, ast.ImportFrom) for a in s.names}
        for stmt, guard in bound:
            self.statement(stmt, guard)

    def add(self, m: Member) -> None:
        old = self.found.get(m.name)
        if old is not None:   # bound more than once (if/else): all its bindings are its code
            kept = old if old.kind == Kind.JIT or m.kind != Kind.JIT else m
            body = "\n".join(x.body for x in (old, m) if x.body)
            m = dataclasses.replace(kept, code=old.code + "\n" + m.code, refs=old.refs | m.refs,
                                    launches=old.launches + m.launches, body=body)
        self.found[m.name] = m

    def strip(self, node: ast.AST) -> ast.AST:
        node = copy.deepcopy(node)
        return _Strip(self.triton, self.launchable, node).visit(node)

    def kernel(self, name: str, fn: ast.AST, guard: str, wrapper: str = "") -> None:
        body = self.strip(fn)
        body.name = ""
        names, required, _ = params_of(fn.args)
        tuned = any(self.triton.is_tuner(d) for d in fn.decorator_list) or any(t in wrapper for t in TUNERS)
        refs = free_names(fn) | _decorator_names(fn)
        code = wrapper + ast.dump(body)
        self.add(Member(name, Kind.JIT, guard + code, frozenset(refs), params=names, required=required,
                        tuned=tuned, body=code))

    def nested(self, outer: str, node: ast.AST) -> set[str]:
        """The kernels defined inside `node` (methods, nested functions), added as members."""
        names = set()
        for n in ast.walk(node):
            if n is not node and self.triton.jitted(n):
                self.kernel(f"{outer}.{n.name}", n, "")
                names.add(f"{outer}.{n.name}")
        return names

    def statement(self, stmt: ast.stmt, guard: str) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if self.triton.jitted(stmt):
                return self.kernel(stmt.name, stmt, guard)
            if stmt.name in self.bodies:
                return None   # its kernel is the `k = triton.jit(f)` that wraps it
            inner = self.nested(stmt.name, stmt)
            kind = Kind.CLASS if isinstance(stmt, ast.ClassDef) else Kind.FUNCTION
            refs = free_names(stmt) | _decorator_names(stmt)
            return self.add(Member(stmt.name, kind, guard + ast.dump(self.strip(stmt)), frozenset(refs | inner),
                                   _launches(stmt, self.launchable)))
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for a in stmt.names:
                if isinstance(stmt, ast.Import):
                    name, source = a.asname or a.name.split(".")[0], ""
                else:
                    name, source = a.asname or a.name, f"{_resolve(self.module, self.is_package, stmt)}:{a.name}"
                self.add(Member(name, Kind.IMPORT, guard + (source or a.name), frozenset(), source=source))
            return None
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            return self.assignment(stmt, guard)
        return None

    def assignment(self, stmt: ast.stmt, guard: str) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        wrapped = self.triton.wrapped(stmt.value)
        if wrapped is not None and len(names) == 1:
            if isinstance(wrapped, ast.Name) and wrapped.id in self.defs:
                outer = ast.dump(stmt.value).replace(ast.dump(wrapped), "<f>")
                self.kernel(names[0], self.defs[wrapped.id], guard, outer + "\n")
                kernel = self.found[names[0]]   # the tuners' arguments are read too
                self.found[names[0]] = dataclasses.replace(kernel, refs=kernel.refs | free_names(stmt.value) - {wrapped.id})
                return
            self.unresolved.append(f"{self.path}:{stmt.lineno}: {names[0]} = {ast.unparse(stmt.value)[:80]} "
                                   "(what triton.jit wraps is no function of the module)")
            self.add(Member(names[0], Kind.JIT, guard + ast.dump(stmt), frozenset(free_names(stmt.value)),
                            body=ast.dump(stmt.value), readable=False))
            return
        refs = free_names(stmt.value) | (set(names) if isinstance(stmt, ast.AugAssign) else set())
        for name in names:
            self.add(Member(name, Kind.CONSTANT, guard + ast.dump(stmt), frozenset(refs - {name})))


def parse(source: str, path: str, module: str, is_package: bool = False) -> Module:
    """The members and ops of `source` (SyntaxError if it does not parse)."""
    tree = ast.parse(source, filename=path)
    reader = _Reader(tree, path, module, is_package)
    ops = {}
    for stmt, _ in _bindings(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name in reader.found \
                and reader.found[stmt.name].kind != Kind.JIT and (op := _op(stmt.name, stmt)) is not None:
            ops.setdefault(stmt.name, op)
    return Module(path, module, reader.found, ops, reader.unresolved)
