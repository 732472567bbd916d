"""The Triton kernels of two revisions, found with `ast`, and what changed between them.

A kernel is a top-level `@triton.jit` function (also under `@triton.autotune`/`@triton.heuristics`); two
versions are the same when their syntax trees (decorators, parameters, body less docstring) are, so a change
to comments or layout alone is none. Ops are the top-level functions and autograd Functions that launch one.
"""
from __future__ import annotations

import ast
import copy
import dataclasses

from compare.review.revisions import Repository

_TUNERS = ("autotune", "heuristics")


@dataclasses.dataclass(frozen=True)
class Op:
    """A callable users call that launches a kernel: a function, or an autograd Function's `apply`."""

    name: str                    # what a --variant spec names: `norm` or `NormFunction.apply`
    params: tuple[str, ...]      # its parameters, an autograd Function's ctx left out
    required: int                # how many of them have no default


@dataclasses.dataclass(frozen=True)
class Kernel:
    path: str                    # the file, from the repository's top level
    module: str                  # its dotted module name (`mylib.ops.norm`)
    name: str
    params: tuple[str, ...]
    required: int                # how many parameters have no default
    tuned: bool                  # behind @triton.autotune or @triton.heuristics
    code: str                    # the normalized tree, the name left out (renames compare equal)
    ops: tuple[Op, ...] = ()     # what launches it in its module, nearest first

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


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
    return ".".join(parts)


def _decorated(fn: ast.FunctionDef, names: tuple[str, ...]) -> bool:
    return any(_dotted(d).split(".")[-1] in names and _dotted(d).split(".")[0] in ("triton", *names)
               for d in fn.decorator_list)


def _normalized(fn: ast.FunctionDef) -> str:
    fn = copy.deepcopy(fn)
    fn.name = ""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        fn.body = body[1:] or [ast.Pass()]
    return ast.dump(fn)


def _params(args: ast.arguments) -> tuple[tuple[str, ...], int]:
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    names = positional + [a.arg for a in args.kwonlyargs]
    required = len(positional) - len(args.defaults) + sum(d is None for d in args.kw_defaults)
    return tuple(names), required


def _op(node: ast.AST) -> Op | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return Op(node.name, *_params(node.args))
    if isinstance(node, ast.ClassDef) and any(_dotted(b).endswith("Function") for b in node.bases):
        forward = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
        if forward is not None:
            names, required = _params(forward.args)
            return Op(f"{node.name}.apply", names[1:], max(required - 1, 0))
    return None   # a class that is no autograd Function (an nn.Module) is not called as an op


def _referenced(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
           {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def kernels_in(source: str, path: str, module: str) -> list[Kernel]:
    """The kernels `source` defines, each with the ops that launch it (SyntaxError if it does not parse)."""
    tree = ast.parse(source, filename=path)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    uses = {name: _referenced(node) - {name} for name, node in defs.items()}
    jitted = {name for name, n in defs.items() if isinstance(n, ast.FunctionDef) and _decorated(n, ("jit",))}
    found = []
    for name in sorted(jitted, key=lambda k: defs[k].lineno):
        fn = defs[name]
        reached, frontier = [], [name]
        while frontier:   # breadth first: the nearest callers first
            frontier = [d for d in defs if d not in reached and d != name and uses[d] & set(frontier)]
            reached += frontier
        ops = tuple(op for d in reached if d not in jitted and (op := _op(defs[d])) is not None)
        found.append(Kernel(path, module, name, *_params(fn.args), _decorated(fn, _TUNERS), _normalized(fn), ops))
    return found


def module_name(path: str, files) -> str:
    """The dotted module of `path`: its folders up to the first that is no package (no __init__.py there)."""
    folders, stem = path.split("/")[:-1], path.rsplit("/", 1)[-1][:-len(".py")]
    start = len(folders)
    while start > 0 and "/".join(folders[:start]) + "/__init__.py" in files:
        start -= 1
    return ".".join(folders[start:] + ([] if stem == "__init__" else [stem]))


def _kernels(repo: Repository, files: dict[str, str], paths: list[str], rev: str, unreadable: list[str]) -> list[Kernel]:
    texts = repo.read([files[p] for p in paths])
    found = []
    for path in paths:
        text = texts.get(files[path])
        if text is None:
            continue
        try:
            found += kernels_in(text, path, module_name(path, files))
        except (SyntaxError, ValueError, RecursionError) as exc:
            unreadable.append(f"{path} at {rev}: {type(exc).__name__}: {getattr(exc, 'msg', exc)}")
    return found


def changes(repo: Repository, base: str, head: str) -> Changes:
    """What happened to each kernel between commits `base` and `head` (files the same at both are skipped)."""
    before, after = repo.files(base), repo.files(head)
    differ = sorted(p for p in set(before) | set(after) if p.endswith(".py") and before.get(p) != after.get(p))
    out = Changes()
    old = {k.key: k for k in _kernels(repo, before, [p for p in differ if p in before], base[:7], out.unreadable)}
    new = {k.key: k for k in _kernels(repo, after, [p for p in differ if p in after], head[:7], out.unreadable)}
    out.changed = [(old[k], new[k]) for k in new if k in old and old[k].code != new[k].code]
    gone = [old[k] for k in old if k not in new]
    for k in [new[k] for k in new if k not in old]:
        twin = next((g for g in gone if g.code == k.code), None)
        if twin is not None:
            gone.remove(twin)
            out.renamed.append((twin, k))
        else:
            out.added.append(k)
    out.removed = gone
    return out
