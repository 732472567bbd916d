"""Every file a comparison writes (--json, --markdown, --out DIR: report.md, report-full.md, report.json,
benchmark_rows.json when timed, plots), each written atomically (a temporary file renamed into place: a failed
write leaves the old file) and never over a file that appeared, or changed, at its path after the start checked
it (`note_start`; the report is kept beside it). `ours` tells kernel-ab's files from others: compare.command_line.usage
refuses, before any work, to replace another's unless --force is given."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import NamedTuple

from compare.runtime import written
from compare.model.results import MARKER, MARKER_KEY, from_dict

REPORT_MD, FULL_MD, REPORT_JSON, ROWS_JSON = "report.md", "report-full.md", "report.json", "benchmark_rows.json"
REVIEW_MARKER = "review"   # the marker of `review`'s JSON (compare/review/render.py)


def folder_files(folder: Path, modes: tuple[str, ...] = ()) -> list[Path]:
    """The files `write` puts in an --out folder: the reports, and (`modes` timed) the benchmark rows
    and the plots of those modes that are there now (a plot's name also carries its dtype when several
    dtypes are timed: timing_forward.png, timing_forward_float16.png)."""
    paths = [folder / REPORT_MD, folder / FULL_MD, folder / REPORT_JSON] + ([folder / ROWS_JSON] if modes else [])
    if folder.is_dir():
        paths += sorted(p for m in modes for p in folder.glob(f"timing_{m}*.png")
                        if p.name == f"timing_{m}.png" or p.name.startswith(f"timing_{m}_"))
    return paths


def ours(path: Path) -> bool:
    """Whether the file at `path` is one kernel-ab writes. A report.json carries the marker, or (written
    before the marker) loads as a report; a Markdown report opens with its title; benchmark rows name
    kernel_ab_commit in every row; a plot's PNG says Software kernel-ab, or (drawn before that tag)
    Matplotlib next to a report.json of ours."""
    from compare.render import markdown, plots
    data = path.read_bytes()
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        if b"tEXtSoftware\x00" + plots.SOFTWARE.encode() in data:
            return True
        sibling = path.parent / REPORT_JSON
        return b"tEXtSoftware\x00Matplotlib" in data and sibling.is_file() and ours(sibling)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if text.startswith(markdown.TITLE):
        return True
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if isinstance(value, list):
        return bool(value) and all(isinstance(row, dict) and "kernel_ab_commit" in row for row in value)
    if not isinstance(value, dict):
        return False
    if MARKER_KEY in value:
        return value[MARKER_KEY] in (MARKER, REVIEW_MARKER)
    try:
        from_dict(value)
    except Exception:  # noqa: BLE001 - whatever fails to load is not a report of ours
        return False
    return True


def _mode(target: Path) -> int:
    """The permissions the file gets: those of the file it replaces, else the usual ones (umask applied)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS}


def _state(path) -> tuple | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def note_start(path: Path) -> None:
    """Remember what is at an output path before any work (compare.command_line.usage checks it then)."""
    written.AT_START[os.path.realpath(path)] = _state(path)


class Appeared(OSError):
    """A file appeared at an output path, or the one there changed, during the run; `kept`: where the report went."""

    def __init__(self, path, kept: str):
        super().__init__(f"{path} appeared or changed during the run; kernel-ab does not write over it; this "
                         f"file is {kept} instead")
        self.kept = kept


def _keep_beside(tmp: str, target: Path) -> str:
    """The temporary file under a name of its own next to `target` (never over another file)."""
    for n in range(1, 100):
        kept = f"{target}.kernel-ab-{n}"
        try:
            os.link(tmp, kept)
        except FileExistsError:
            continue
        os.unlink(tmp)
        return kept
    return tmp


def _put(tmp: str, target: Path) -> None:
    """`tmp` into `target`'s place: replacing the file seen at the start, or none where none was."""
    key = str(target)
    if key not in written.AT_START:   # a path not checked at the start: replaced as it is
        os.replace(tmp, target)
        return
    if written.AT_START[key] is None:
        try:
            os.link(tmp, target)   # fails where a file is there by now: never replaced
        except FileExistsError:
            raise Appeared(target, _keep_beside(tmp, target)) from None
        except OSError as exc:   # a file system without hard links: the check, then the rename
            if exc.errno not in _NO_LINKS:
                raise
            if os.path.lexists(target):
                raise Appeared(target, _keep_beside(tmp, target)) from None
            os.replace(tmp, target)
        else:
            os.unlink(tmp)
    elif _state(target) != written.AT_START[key]:
        raise Appeared(target, _keep_beside(tmp, target))
    else:
        os.replace(tmp, target)
    written.AT_START[key] = _state(target)   # this run's own file: its next write replaces it


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` (through a link: to the file it names) via a temporary file in the same
    folder and os.replace; on any failure the temporary file is removed and the old file stays. A stop
    signal waits for it to end (compare.runtime.supervisor): the file is whole and noted as written, or untouched."""
    target, tmp = Path(os.path.realpath(path)), None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".kernel-ab-tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())   # a full disk may only say so here
        os.chmod(tmp, _mode(target))
        _put(tmp, target)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    written.wrote(path)


def _rendered(report, json_path, markdown_path, out) -> tuple[list, list, list[str]]:
    """(path, bytes, note) of every file to write, in order: those of --json and --markdown, those of
    --out; and lines about what is not written."""
    from compare.render import benchmark_rows, json_report, markdown, plots
    cache: dict[str, bytes] = {}

    def text(kind: str) -> bytes:
        if kind not in cache:
            render = {"json": json_report.render, "md": lambda r: markdown.render(r, full_written=bool(out)),
                      "full": markdown.full}[kind]
            cache[kind] = render(report).encode()
        return cache[kind]
    single = [(Path(p), text(kind), "") for kind, p in (("json", json_path), ("md", markdown_path)) if p]
    inside, notes = [], []
    if out:
        folder = Path(out)
        inside += [(folder / REPORT_MD, text("md"), " (the comment)"), (folder / FULL_MD, text("full"), " (nothing cut)"),
                   (folder / REPORT_JSON, text("json"), "")]
        rows = benchmark_rows.rows(report)
        if rows:
            inside.append((folder / ROWS_JSON, (json.dumps(rows, indent=2) + "\n").encode(),
                           " (the seed's benchmark format)"))
        if report.timing is not None:
            if plots.available():
                inside += [(folder / name, png, "") for name, png in plots.pngs(report)]
            else:
                notes.append("plots not written: matplotlib is not installed (pip install 'kernel-ab[plot]')")
    return single, inside, notes


def comment(report, json_path: Path) -> str:
    """The comment (report.md) of the report at `json_path`, as --out wrote it: where report-full.md is beside
    it, that file holds what the comment cuts (`main.py report FILE --format markdown`)."""
    from compare.render import markdown
    beside = json_path.name == REPORT_JSON and (json_path.parent / FULL_MD).is_file()
    return markdown.render(report, full_written=beside)


class Wrote(NamedTuple):
    """What a write said: a line per file (or per thing not written, with why), and how many files could not
    be written (each of those lines starts `kernel-ab: error:`)."""

    lines: list[str]
    unwritten: int


def write(report, json_path: str | Path | None = None, markdown_path: str | Path | None = None,
          out: str | Path | None = None) -> Wrote:
    """Write every output asked for."""
    single, inside, notes = _rendered(report, json_path, markdown_path, out)
    written.planned(path for path, _, _ in single + inside)
    lines, failed = [], 0
    if inside:
        try:
            Path(out).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            lines.append(f"kernel-ab: error: could not make the folder {out} ({exc.strerror or exc}); "
                         "none of --out's files written")
            failed, inside = len(inside), []
    for path, data, note in single + inside:
        try:
            write_atomic(path, data)
        except Appeared as exc:
            failed += 1
            lines.append(f"kernel-ab: error: {exc}")
        except OSError as exc:
            failed += 1
            lines.append(f"kernel-ab: error: could not write {path} ({exc.strerror or exc}); "
                         "a file that was there is left as it was")
        else:
            lines.append(f"wrote {path}{note}")
    return Wrote(lines + notes, failed)
