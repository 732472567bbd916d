"""The text of a `--variant`: NAME=[git:REV:]PATH::CALLABLE (the file now or at revision REV) or
NAME=package.module:CALLABLE (an installed package). CALLABLE is a name or dotted path (`Fn.apply`);
FORWARD,BACKWARD names two kernels of one file. An op may add its call: for each parameter, in its order, the
family's op argument or a constant it takes, `KW=...` by keyword, and `[i]`, the element of a tuple result that
is the output: `Fn.apply(X, target, None, ignore_index, 0.0, reduction=reduction)[0]`."""
from __future__ import annotations

import ast
import dataclasses
import math
import re
from typing import Union

from variants.variant import NAME as _NAME  # what a variant name may be

FORMS = ("NAME=PATH::CALLABLE or NAME=git:REV:PATH::CALLABLE or NAME=package.module:CALLABLE (an op may add "
         "its arguments: CALLABLE(X, W, ...))")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TWO_KERNELS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*,[A-Za-z_][A-Za-z0-9_]*$")


class BadSpec(ValueError):
    """A --variant spec that cannot be honoured (bad form, missing file, revision or function, not a
    Triton kernel, parameters that do not match the family's launchers); the message is one line."""


@dataclasses.dataclass(frozen=True)
class Literal:
    """A constant an op is called with where the family has no argument (`None`, `0.0`, `'mean'`, `False`)."""

    value: object

    def text(self) -> str:
        return repr(self.value)


Entry = Union[str, Literal]   # a family argument's name, or a constant


@dataclasses.dataclass(frozen=True)
class CallMap:
    """How an op's parameters take the family's op arguments: `positional[i]` is what is passed as the i-th
    positional argument (a family argument's name or a Literal), `keywords` maps keyword -> the same;
    `select`: which element of a tuple result is the family's first output (None: the result itself)."""

    positional: tuple[Entry, ...]
    keywords: tuple[tuple[str, Entry], ...] = ()
    select: int | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Every family argument the call passes, in the order it passes them (constants left out)."""
        return tuple(e for e in (*self.positional, *(arg for _, arg in self.keywords)) if isinstance(e, str))

    def text(self) -> str:
        show = (lambda e: e if isinstance(e, str) else e.text())
        args = ", ".join([*map(show, self.positional), *(f"{k}={show(a)}" for k, a in self.keywords)])
        return f"({args})" + ("" if self.select is None else f"[{self.select}]")


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    path: str
    function: str                  # a name, a dotted path into the module (`Fn.apply`), or FORWARD,BACKWARD
    rev: str | None = None         # None: the file as it is now
    text: str = ""
    call: CallMap | None = None    # an op's argument mapping, if given
    installed: bool = False        # path is a module of an installed package (package.module:CALLABLE)

    @classmethod
    def made(cls, name: str, path: str, function: str, rev: str | None = None, call: CallMap | None = None,
             installed: bool = False) -> "Spec":
        """The Spec a program names from its parts, as `parse` reads it from its text (`text`: NAME=WHERE)."""
        spec = cls(name, path, function, rev, "", call, installed)
        return dataclasses.replace(spec, text=f"{name}={spec.where}")

    @property
    def sep(self) -> str:
        return ":" if self.installed else "::"

    @property
    def functions(self) -> tuple[str, ...]:
        return tuple(self.function.split(","))

    @property
    def callable_text(self) -> str:
        return self.function + (self.call.text() if self.call else "")

    @property
    def where(self) -> str:
        place = f"git:{self.rev}:{self.path}" if self.rev is not None else self.path
        return f"{place}{self.sep}{self.callable_text}"


def _entry(node: ast.expr, where: str) -> Entry:
    """A family argument's name or a constant, from one argument of the call's syntax tree."""
    if isinstance(node, ast.Name) and node.id not in ("None", "True", "False"):
        return node.id
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = _NOT_CONSTANT
    if value is None or isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return Literal(value)   # a non-finite float has no literal to be written back as
    raise BadSpec(f"{where}: argument {ast.unparse(node)!r} is not a name of the family's op "
                  "arguments nor a constant (None, True, False, a number or a quoted string)")


_NOT_CONSTANT = object()


def call_map(text: str, where: str) -> CallMap:
    """The CallMap of '(a, None, kw=c)[0]' (BadSpec if it is not one argument list, optionally indexed,
    an entry is neither a name nor a constant, or a name or keyword repeats)."""
    why = ""
    try:
        tree = ast.parse("f" + text, mode="eval").body
    except SyntaxError as exc:
        tree, why = None, f" ({exc.msg})"
    select = None
    if isinstance(tree, ast.Subscript) and isinstance(tree.slice, ast.Constant) and type(tree.slice.value) is int:
        tree, select = tree.value, tree.slice.value
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "f"):
        raise BadSpec(f"{where}: an op's arguments are one list in parentheses at the end{why}, "
                      "optionally followed by [INDEX] (which element of its result is the output), "
                      "e.g. ::Fn.apply(X, W, None, eps)[0]")
    if any(isinstance(a, ast.Starred) for a in tree.args) or any(k.arg is None for k in tree.keywords):
        raise BadSpec(f"{where}: *args and **kwargs are not an argument mapping")
    call = CallMap(tuple(_entry(a, where) for a in tree.args),
                   tuple((k.arg, _entry(k.value, where)) for k in tree.keywords), select)
    repeated = sorted({n for n in call.names if call.names.count(n) > 1})
    if repeated:
        raise BadSpec(f"{where}: argument {repeated[0]} is passed twice")
    return call


def parse(text: str) -> Spec:
    """A Spec from the --variant text (BadSpec, one line, if malformed)."""
    name, eq, rest = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise BadSpec(f"--variant {text!r}: expected {FORMS}")
    if not _NAME.match(name):
        raise BadSpec(f"--variant {text!r}: variant name {name!r} must be an identifier (letters, digits, _ . -)")
    installed = "::" not in rest and not rest.startswith("git:") and ":" in rest
    where, sep, tail = rest.partition(":") if installed else rest.rpartition("::")
    if installed and not _DOTTED.match(where.strip()):
        raise BadSpec(f"--variant {text!r}: {where!r} is not a module name (package.module:CALLABLE); a file's "
                      "CALLABLE follows '::' (PATH::CALLABLE)")
    function, paren, args = tail.partition("(")
    call = call_map(paren + args, f"--variant {text!r}") if paren else None
    function = function.strip()
    two = bool(_TWO_KERNELS.match(function))
    if not sep or not where or not (_DOTTED.match(function) or two):
        raise BadSpec(f"--variant {text!r}: expected {FORMS} (CALLABLE a Python name or dotted path after '::', "
                      "or FORWARD,BACKWARD: two kernels)")
    if two and call is not None:
        raise BadSpec(f"--variant {text!r}: FORWARD,BACKWARD names two kernels; an argument list is for an op")
    rev = None
    if where.startswith("git:"):
        rev, colon, where = where[len("git:"):].partition(":")
        if not colon or not rev or not where:
            raise BadSpec(f"--variant {text!r}: a git spec is git:REV:PATH::CALLABLE, e.g. git:HEAD~1:pkg/kernel.py::fwd")
    return Spec(name, where.strip() if installed else where, function, rev, text, call, installed)


def of(given: Spec | str | dict) -> Spec:
    """The Spec given: itself, the --variant text a user typed (parsed: BadSpec if malformed), or the JSON form
    `dataclasses.asdict` gave of one (a request handed to another process)."""
    if isinstance(given, Spec):
        return given
    if isinstance(given, str):
        return parse(given)
    call = given["call"]
    if call is not None:
        def entry(e) -> Entry:
            return e if isinstance(e, str) else Literal(e["value"])
        call = CallMap(tuple(map(entry, call["positional"])), tuple((k, entry(e)) for k, e in call["keywords"]),
                       call["select"])
    return Spec(**{**given, "call": call})
