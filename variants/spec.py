"""The text of a `--variant`: NAME=[git:REV:]PATH::CALLABLE (the file now or at revision REV) or
NAME=package.module:CALLABLE (an installed package). CALLABLE is a name or dotted path (`Fn.apply`);
FORWARD,BACKWARD names two kernels of one file. An op may add, in its own order, which of the family's op
arguments each parameter takes: `Fn.apply(x, weight, bias, channels, num_groups, eps)`, `KW=ARG` by keyword."""
from __future__ import annotations

import dataclasses
import re

from variants.kernel_checks import BadSpec
from variants.variant import NAME as _NAME  # what a variant name may be

FORMS = ("NAME=PATH::CALLABLE or NAME=git:REV:PATH::CALLABLE or NAME=package.module:CALLABLE (an op may add "
         "its arguments: CALLABLE(X, W, ...))")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TWO_KERNELS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*,[A-Za-z_][A-Za-z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class CallMap:
    """How an op's parameters take the family's op arguments: `positional[i]` is the family argument
    passed as the i-th positional argument, `keywords` maps keyword -> family argument."""

    positional: tuple[str, ...]
    keywords: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Every family argument the call passes, in the order it passes them."""
        return self.positional + tuple(arg for _, arg in self.keywords)

    def text(self) -> str:
        return "(" + ", ".join([*self.positional, *(f"{k}={a}" for k, a in self.keywords)]) + ")"


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    path: str
    function: str                  # a name, a dotted path into the module (`Fn.apply`), or FORWARD,BACKWARD
    rev: str | None = None         # None: the file as it is now
    text: str = ""
    call: CallMap | None = None    # an op's argument mapping, if given
    installed: bool = False        # path is a module of an installed package (package.module:CALLABLE)

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


def _call_map(text: str, spec_text: str) -> CallMap:
    """The CallMap of 'a, b, kw=c' (BadSpec if an entry is not a name or KW=name, or a name repeats)."""
    positional, keywords = [], []
    entries = [e.strip() for e in text.split(",")] if text.strip() else []
    for entry in entries:
        kw, eq, arg = (p.strip() for p in entry.partition("="))
        if eq:
            if not (kw.isidentifier() and arg.isidentifier()):
                raise BadSpec(f"--variant {spec_text!r}: argument {entry!r} is not KEYWORD=ARGUMENT")
            keywords.append((kw, arg))
        else:
            if not entry.isidentifier():
                raise BadSpec(f"--variant {spec_text!r}: argument {entry!r} is not a name of the family's op arguments")
            if keywords:
                raise BadSpec(f"--variant {spec_text!r}: positional argument {entry!r} after a keyword one")
            positional.append(entry)
    call = CallMap(tuple(positional), tuple(keywords))
    repeated = sorted({n for n in call.names if call.names.count(n) > 1})
    if repeated:
        raise BadSpec(f"--variant {spec_text!r}: argument {repeated[0]} is passed twice")
    kws = [k for k, _ in keywords]
    if len(set(kws)) != len(kws):
        raise BadSpec(f"--variant {spec_text!r}: a keyword is given twice")
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
    call = None
    if paren:
        if not args.endswith(")") or "(" in args[:-1] or ")" in args[:-1]:
            raise BadSpec(f"--variant {text!r}: an op's arguments are one list in parentheses at the end, "
                          f"e.g. ::Fn.apply(X, W, B, eps)")
        call = _call_map(args[:-1], text)
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
