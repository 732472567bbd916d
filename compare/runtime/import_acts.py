"""A library's import habits, told from a variant's tampering: around each --variant module's import the launch
guard (process_guard.Guard.library_acts) sets apart what cannot reach a measurement (its own environment
variable, sys.stdout or sys.stderr replaced, its own warnings made errors). Among the imports of one module
(one path at two revisions), the acts every import did are the library's own, reported once (`library`);
one only some did is that variant's change of the process, as any other act of its would be (`decide`)."""
from __future__ import annotations

import contextlib
import os
import warnings
from typing import NamedTuple

from compare.model.habits import Act, ImportAct, LibraryImport
from compare.runtime.process_flags import library_filter

ACTS: dict[str, tuple[str, tuple[ImportAct, ...]]] = {}   # variant -> (what it ran, what its import did)
_SHARED: list[LibraryImport] = []


def begin() -> None:
    """A comparison's loading starts: no import seen yet."""
    ACTS.clear()
    _SHARED.clear()


def record(names, what: str, acts: list[ImportAct]) -> None:
    for name in names:
        ACTS[name] = (what, tuple(dict.fromkeys(acts)))


@contextlib.contextmanager
def lifted():
    """Around an import: the variables and warnings filters earlier imports set as their library's are out of
    the process while it runs, so that each import's acts are seen whole (one that sets what an earlier one
    set, to the same value, would change nothing seen); those it did not set again come back after it."""
    names = {(a.act, a.name) for _, acts in ACTS.values() for a in acts}
    saved = {k: os.environ.pop(k) for k in sorted(n for act, n in names if act is Act.ENVIRON) if k in os.environ}
    filters = [f for f in warnings.filters if (Act.WARNINGS, library_filter(f)) in names]
    warnings.filters[:] = [f for f in warnings.filters if f not in filters]
    warnings._filters_mutated()
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.setdefault(k, v)
        warnings.filters[:] = [f for f in filters if f not in warnings.filters] + warnings.filters
        warnings._filters_mutated()


class OwnActs(NamedTuple):
    """A variant whose import did acts the other variants of its module did not: the acts said as changes,
    and what it ran."""

    variant: str
    changes: str
    what: str


def decide(modules: dict[str, str]) -> list[OwnActs]:
    """`modules`: each loaded variant -> the module it was imported from. The acts all of one module's imports
    did are its library's (`library`); the others are the variant's own (`OwnActs`)."""
    grouped: dict[str, list[str]] = {}
    for name, module in modules.items():
        if name in ACTS:
            grouped.setdefault(module, []).append(name)
    culprits = []
    for module, names in grouped.items():
        common = set.intersection(*(set(ACTS[n][1]) for n in names))
        for n in names:
            extra = [a for a in ACTS[n][1] if a not in common]
            if extra:
                culprits.append(OwnActs(n, "; ".join(a.fault() for a in extra), ACTS[n][0]))
        if common:
            _SHARED.append(LibraryImport(module, tuple(a for a in ACTS[names[0]][1] if a in common)))
    return culprits


def library() -> tuple[LibraryImport, ...]:
    """What the libraries' imports of this comparison did alike at every revision."""
    return tuple(_SHARED)
