"""A reviewed library's modules imported in the recording and replaying processes (replay_worker.py), each
import that raises kept as a record. Python keeps in sys.modules the submodules a failed package import ran: an
op under a package whose import raised is not taken from them (a fresh interpreter could not import it) but
said to fail as that import did. Runs a library's code: never in kernel-ab's own process."""
from __future__ import annotations

import importlib
from typing import Any


def first_line(exc: BaseException) -> str:
    """The exception in one line; one whose first line only points at a place (Triton's `at 31:19:`) gets its
    last line too, which says what is wrong there."""
    text = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not text:
        return type(exc).__name__
    said = text[0] if not text[0].endswith(":") or len(text) == 1 else f"{text[0]} {text[-1]}"
    return f"{type(exc).__name__}: {said[:300]}"


def running(exc: BaseException) -> list[str]:
    """The modules whose own top-level code was running when `exc` was raised, outermost first: the import
    chain that raised, which Python took out of sys.modules."""
    names, frame = [], exc.__traceback__
    while frame is not None:
        name = frame.tb_frame.f_globals.get("__name__")
        if frame.tb_frame.f_code.co_name == "<module>" and isinstance(name, str) and name != "__main__":
            names.append(name)
        frame = frame.tb_next
    return names


def failure(asked: str, exc: BaseException) -> dict:
    """The record of an import of `asked` that raised `exc`, as the manifest holds it: the module whose own code
    raised (`raised_in`, "" where none ran, as for a syntax error) and the chain it was in."""
    chain = running(exc)
    return {"module": asked, "raised_in": chain[-1] if chain else "", "chain": chain, "error": first_line(exc)}


class ImportFailed(Exception):
    def __init__(self, record: dict):
        super().__init__(record["error"])
        self.record = record   # failure()'s, shared by every op the import kept from loading


class Imports:
    """One process's imports of the library's modules: each that raised, remembered."""

    def __init__(self):
        self.failed: list[dict] = []

    def broken(self, module: str) -> dict | None:
        """The earlier failed import that `module`, or a package above it, was part of (or that asked for it)."""
        parts = module.split(".")
        above = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        return next((f for f in self.failed if f["module"] == module or above & set(f["chain"])), None)

    def resolve(self, module: str, name: str) -> tuple[Any, str, Any]:
        """(owner, attribute, callable) for `module`'s `name` (`f`, or `Cls.apply`); ImportFailed, with the
        failure's record, where `module` could not be imported, now or before."""
        earlier = self.broken(module)
        if earlier is not None:
            raise ImportFailed(earlier)
        try:
            owner: Any = importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - the library's import, whatever it raises
            self.failed.append(failure(module, exc))
            raise ImportFailed(self.failed[-1]) from exc
        *path, attribute = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        return owner, attribute, getattr(owner, attribute)
