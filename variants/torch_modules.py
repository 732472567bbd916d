"""The torch submodules a library's file reads as attributes (`torch.distributed.tensor.DTensor`) that
`import torch` does not import by itself. A library's users have imported them (through the training code
around the op); kernel-ab imports them before the library's module, and the variant's origin says so."""
from __future__ import annotations

import ast
import importlib
import importlib.util
import sys


def _chains(source: str) -> set[str]:
    """Every dotted name `torch.a.b...` the source reads."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    found = set()
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == "torch" and parts:
            found.add(".".join(["torch", *parts]))
    return found


def _module_prefix(chain: str) -> str | None:
    """The longest prefix of `chain` that names a torch submodule, or None (looked up from the shortest, a
    level deeper only inside a package: looking up `a.b.c` imports `a.b`)."""
    parts, found = chain.split("."), None
    for end in range(2, len(parts) + 1):
        name = ".".join(parts[:end])
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            return found
        if spec is None:
            return found
        found = name
        if spec.submodule_search_locations is None:
            return found
    return found


def import_read_submodules(source: str) -> tuple[str, ...]:
    """Import the torch submodules `source` reads that are not imported yet; the names of those imported
    (one that fails to import is left for the library's own code to fail on, as it would for its users)."""
    before = set(sys.modules)   # looking a name up imports its parents: what is new is counted at the end
    wanted = sorted({m for c in _chains(source) if (m := _module_prefix(c)) is not None})
    for name in wanted:
        try:
            importlib.import_module(name)
        except Exception:   # noqa: BLE001 - torch's own module failing here is the library's problem to meet
            continue
    return tuple(name for name in wanted if name not in before and name in sys.modules)
