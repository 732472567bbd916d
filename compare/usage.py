"""Checks of the command line's own values, made before any work starts: each bad value is a
UsageError whose one line says what was wrong and what would be right.

Output paths are probed by writing (and removing) a file where the report will go: permissions,
read-only mounts and pseudo file systems such as /proc all refuse there, so a run is never lost to a
path that only fails after it.
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

SEED_MAX = 2**32 - 1   # numpy's and every generator's seeds fit 32 bits


class UsageError(ValueError):
    """Bad input from the user: the message is one line saying what was wrong and what would be right."""


def finite(flag: str, value: float | None, low: float = 0.0, *, strict: bool = False,
           what: str = "a finite number") -> None:
    """UsageError unless `value` is None or a finite number above `low` (or at least `low`)."""
    if value is None:
        return
    ok = math.isfinite(value) and (value > low if strict else value >= low)
    if not ok:
        bound = f"> {low:g}" if strict else f">= {low:g}"
        raise UsageError(f"{flag} takes {what} {bound}, got {value!r}")


def at_least(flag: str, value: int | None, low: int, high: int | None = None) -> None:
    if value is None:
        return
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise UsageError(f"{flag} must be {span}, got {value}")


def not_blank(flag: str, text: str | None, right: str) -> None:
    """UsageError for a flag given an empty value (`--shape ''` is not "no --shape")."""
    if text is not None and not text.strip():
        raise UsageError(f"{flag} is empty; give {right}")


def comma_list(flag: str, text: str | None) -> None:
    """UsageError for a list flag given but empty (`--modes ''`, `--dtype ,`)."""
    if text is not None and not [part for part in text.split(",") if part.strip()]:
        raise UsageError(f"{flag} is empty; give a comma list of names")


def _probe(folder: Path) -> None:
    """OSError unless a file can be created (and is removed again) in `folder`."""
    fd, name = tempfile.mkstemp(prefix=".kernel-ab-probe-", dir=folder)
    os.close(fd)
    os.unlink(name)


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def output_file(flag: str, path: Path | None) -> None:
    """UsageError unless the report file `path` can be written (its folder exists; it is no folder)."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name (or use --out FOLDER)")
    parent = path.absolute().parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise UsageError(f"{flag} {path}: {parent} {what}; give a file in an existing folder")
    try:
        _probe(parent)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write in {parent} ({exc.strerror or exc})") from None


def output_folder(flag: str, path: Path | None) -> None:
    """UsageError unless `path` is, or can be made, a folder to write into (nothing is left made)."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} exists and is not a folder; give a folder")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise UsageError(f"{flag} {path}: {existing} is a file, so no folder can be made under it")
    try:
        _probe(existing)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write in {existing} ({exc.strerror or exc})") from None
