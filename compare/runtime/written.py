"""The output files of the running command: what was at each when it began, those it is to write and those
put in place so far (compare/command_line/output_files.py notes them). A stop signal's line (main.py) says from
them what came out, never "no report" after a report was written. The process's state, so at the process
boundary; forgotten when a command begins."""
from __future__ import annotations

_PLANNED: list[str] = []
_WRITTEN: list[str] = []
AT_START: dict[str, tuple | None] = {}   # an output's real path -> the file there when the command checked it


def start() -> None:
    """A command begins: nothing seen, planned or written yet."""
    _PLANNED.clear()
    _WRITTEN.clear()
    AT_START.clear()


def planned(paths) -> None:
    _PLANNED.extend(p for p in map(str, paths) if p not in _PLANNED)


def wrote(path) -> None:
    _WRITTEN.append(str(path))


def after_stop() -> str:
    """What a stop's line says of the outputs: none came out, some (and which did not), or all of them."""
    if not _WRITTEN:
        return "no report"
    left = [p for p in _PLANNED if p not in _WRITTEN]
    if not left:
        return f"the report was written ({', '.join(_WRITTEN)})"
    return f"wrote {', '.join(_WRITTEN)}; not written: {', '.join(left)}"
