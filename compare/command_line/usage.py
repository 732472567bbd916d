"""Checks of the command line's own values, made before any work starts: each bad value is a UsageError
whose one line says what was wrong and what would be right. Output paths are probed by writing (and
removing) a file there, so a run is never lost to a path that fails only after it; a path holding a file
kernel-ab did not write is refused unless --force (compare/command_line/output_files.py tells its own files)."""
from __future__ import annotations

import contextlib
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import NamedTuple

from compare.model.errors import UsageError

SEED_MAX = 2**32 - 1   # numpy's and every generator's seeds fit 32 bits
# counts bounded so that a mistyped one is a line, not a MemoryError or a run of days: trials run every
# variant on fresh inputs; a round's calls are not cut short by --max-seconds; rounds are, but bounded too
TRIALS_MAX, ROUNDS_MAX, CALLS_MAX = 10_000, 100_000, 1_000


def finite(flag: str, value: float | None, low: float = 0.0, *, strict: bool = False,
           what: str = "a finite number", high: float = math.inf) -> None:
    """UsageError unless `value` is None or a finite number above `low` (or at least `low`), at most `high`."""
    if value is None:
        return
    ok = math.isfinite(value) and (value > low if strict else value >= low) and value <= high
    if not ok:
        bound = (f"> {low:g}" if strict else f">= {low:g}") + (f" and <= {high:g}" if math.isfinite(high) else "")
        raise UsageError(f"{flag} takes {what} {bound}, got {value!r}")


def at_least(flag: str, value: int | None, low: int, high: int | None = None) -> None:
    if value is None:
        return
    if value < low or (high is not None and value > high):
        span = f"at least {low}" + (f" and at most {high}" if high is not None else "")
        raise UsageError(f"{flag} must be {span}, got {value}")


def not_blank(flag: str, text: str | None, right: str) -> None:
    """UsageError for a flag given an empty value (`--shape ''` is not "no --shape")."""
    if text is not None and not text.strip():
        raise UsageError(f"{flag} is empty; give {right}")


def comma_list(flag: str, text: str | None) -> None:
    """UsageError for a list flag given but empty (`--modes ''`, `--dtype ,`)."""
    if text is not None and not [part for part in text.split(",") if part.strip()]:
        raise UsageError(f"{flag} is empty; give a comma list of names")


def _probe(flag: str, path: Path, folder: Path) -> None:
    """UsageError unless a file can be created (and is removed again) in `folder`, the one `flag`'s `path` needs."""
    try:
        fd, name = tempfile.mkstemp(prefix=".kernel-ab-probe-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write in {folder} ({exc.strerror or exc})") from None


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a pipe"),
            (stat.S_ISSOCK, "a socket"))


def _special(path: Path) -> str | None:
    """What `path` is when it exists and is neither a regular file nor a folder, else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((name for test, name in _SPECIAL if test(mode)), None)


def output_file(flag: str, path: Path | None) -> None:
    """UsageError unless the report file `path` can be written (its folder exists; it is no folder,
    device or pipe)."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name (or use --out FOLDER)")
    special = _special(path)
    if special:
        raise UsageError(f"{flag} {path} is {special}, not a regular file; give a file name")
    parent = Path(os.path.realpath(path)).parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise UsageError(f"{flag} {path}: {parent} {what}; give a file in an existing folder")
    _probe(flag, path, parent)


def output_folder(flag: str, path: Path | None) -> None:
    """UsageError unless `path` is, or can be made, a folder to write into (nothing is left made)."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} exists and is not a folder; give a folder")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise UsageError(f"{flag} {path}: {existing} is a file, so no folder can be made under it")
    _probe(flag, path, existing)


def _identity(path: Path) -> tuple:
    """What tells two paths to one file apart from two files: the inode where it exists (hard links
    too), else the path with its links resolved."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def _replaceable(label: str, path: Path, force: bool, other: str) -> None:
    """UsageError unless the file at `path`, where it exists, is a regular file kernel-ab wrote (any
    regular file with `force`)."""
    from compare.command_line.output_files import ours
    if not os.path.exists(path):
        return
    special = _special(path) or ("a folder" if path.is_dir() else None)
    if special:
        raise UsageError(f"{label}: {path} is {special}, not a regular file; give another {other}")
    if force:
        return
    try:
        mine = ours(path)
    except OSError as exc:
        raise UsageError(f"{label}: cannot read {path} to tell whether kernel-ab wrote it "
                         f"({exc.strerror or exc}); give another {other}, or --force to replace it") from None
    if not mine:
        raise UsageError(f"{label}: {path} holds a file kernel-ab did not write; give another {other}, "
                         "or --force to replace it")


def outputs(json_path: str | None, markdown_path: str | None, out: str | None, *, force: bool = False,
            modes: tuple[str, ...] = ()) -> None:
    """UsageError unless every output path can take its files: none empty, each writable, no two
    outputs writing one file, and each file already there one that kernel-ab wrote (or `force`).
    `modes`: the timed modes, whose benchmark rows and plots --out also writes."""
    from compare.command_line.output_files import folder_files
    with usable_paths():
        not_blank("--json", json_path, "a file name")
        not_blank("--markdown", markdown_path, "a file name")
        not_blank("--out", out, "a folder")
        singles = single_files(json_path, markdown_path)
        folder = None if out is None else Path(out)
        output_folder("--out", folder)
        for flag, path in singles:
            output_file(flag, path)
        if folder is not None:
            no_file_where_folders_go(singles, folder, [folder])
        files = [(flag, path, "path") for flag, path in singles]
        files += [(f"--out {folder}", p, "folder") for p in (folder_files(folder, modes) if folder else [])]
        replaceable(files, force)


@contextlib.contextmanager
def usable_paths():
    """An OSError of checking an output path (a name too long, a folder that cannot be read) as the user's
    UsageError, naming the path: the path is theirs to change."""
    try:
        yield
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise UsageError(f"an output path cannot be used:{where}: {exc.strerror or exc}; give another") from None


class SingleFile(NamedTuple):
    """--json's or --markdown's file: the flag, and the path it names."""

    flag: str
    path: Path


def single_files(json_path: str | None, markdown_path: str | None) -> list[SingleFile]:
    """--json's and --markdown's files where given; `--json -` is standard output, no file."""
    return [SingleFile(flag, Path(text)) for flag, text in (("--json", json_path), ("--markdown", markdown_path))
            if text is not None and not (flag == "--json" and text == "-")]


def no_file_where_folders_go(singles: list[SingleFile], out: Path, folders: list[Path]) -> None:
    """UsageError for the first of `singles` (`single_files`) that is, or lies above, one of `folders`: --out
    and the folders made in it (compare's and review's outputs refused alike)."""
    for flag, path in singles:
        where = os.path.realpath(path)
        if any(os.path.realpath(f) == where or os.path.realpath(f).startswith(where + os.sep) for f in folders):
            raise UsageError(f"{flag} {path} is where --out {out} needs a folder; give a file elsewhere")


def replaceable(files: list[tuple[str, Path, str]], force: bool) -> None:
    """UsageError unless each (label, path, what to give instead) is written by one output alone and
    holds nothing yet or a file kernel-ab wrote (any regular file with `force`)."""
    seen: dict[tuple, str] = {}
    for label, path, _ in files:
        first = seen.setdefault(_identity(path), label)
        if first != label:
            raise UsageError(f"{first} and {label} both write {path}; give each output a file of its own")
    from compare.command_line.output_files import note_start
    for label, path, other in files:
        _replaceable(label, path, force, other)
        note_start(path)   # what is there now is all the write at the end may replace


def report_text(path: Path) -> str:
    """The text of a saved report (a report.json, or gzipped: reports/ keeps its large ones so); UsageError,
    one line, for a file that is missing, unreadable, not gzip or not text, or that gives nothing to read
    within a time limit (a FIFO no one writes to: variants/waiting.py)."""
    import gzip
    from variants import waiting
    try:
        mode = path.stat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):   # a FIFO or a device: refused before it is opened
            raise UsageError(f"{path} is not a regular file (a FIFO, a device or a socket); give a report.json")
        raw = waiting.within(waiting.limit(waiting.READ_LIMIT_S), path.read_bytes, f"reading {path}")
        return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
    except waiting.TimedOut as exc:
        raise UsageError(f"{exc} (a FIFO no one writes to?); give a report.json") from None
    except (gzip.BadGzipFile, EOFError) as exc:
        raise UsageError(f"{path} is not gzip ({exc}); give a report.json or report.json.gz") from None
    except FileNotFoundError:
        raise UsageError(f"report file {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder; give the report.json in it") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not JSON ({exc}); give a report.json written by compare") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
