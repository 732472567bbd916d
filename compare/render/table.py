"""What renderers draw: a table with its legend, a report section, the notices under the headline."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Table:
    """`legend`: what the columns mean, the same under tables of a kind, so renderers print it once per
    section (`section_legend`); `aside`: lines about this table alone, printed under it."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    legend: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    aside: tuple[str, ...] = ()


def section_legend(tables) -> tuple[str, ...]:
    """The legends of `tables`, each line once, in the order they first appear."""
    return tuple(dict.fromkeys(line for t in tables for line in t.legend))


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    intro: tuple[str, ...]
    tables: tuple[Table, ...]
    lines: tuple[tuple[str, str], ...] = ()   # the section's verdict lines (level, text), detail under the headline


@dataclasses.dataclass(frozen=True)
class Summary:
    """Notices under the headline (variants not loaded, sections skipped): (level, text), level one of
    ok, warn, fail, skip, info."""

    lines: tuple[tuple[str, str], ...]
