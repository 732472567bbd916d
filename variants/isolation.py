"""Import a module from a tree of its own, isolated from other trees that provide the same package.

A file is imported as a module of its own package (the nearest folder up without `__init__.py` goes
on `sys.path`, and so does the tree's top level). During the import the tree's top-level names are
taken out of `sys.modules` and the previous entries put back after it, so two revisions of one
package load side by side in one process; the loaded functions keep their own modules alive.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

# never hidden from sys.modules while a kernel imports, whatever the kernel's tree holds
_NEVER_HIDE = frozenset({"triton", "torch", "numpy", "variants.external", "variants.kernel_checks",
                         "variants.isolation"})


def _package_root(file: Path, stop: Path | None = None) -> tuple[Path, str]:
    """The folder to put on sys.path and the dotted module name of `file`: walk up while folders are packages."""
    root, parts = file.parent, ([] if file.stem == "__init__" else [file.stem])
    while (root / "__init__.py").is_file() and root != stop and root.parent != root:
        parts.insert(0, root.name)
        root = root.parent
    return root, ".".join(parts)


def _top_names(folder: Path) -> set[str]:
    """Top-level module names a folder on sys.path provides (never the standard library's: a tree
    that shadows one does not get it hidden, so stdlib modules are never imported twice)."""
    names = set()
    try:
        for entry in folder.iterdir():
            if entry.is_dir() and entry.name.isidentifier():
                names.add(entry.name)
            elif entry.suffix == ".py" and entry.stem.isidentifier():
                names.add(entry.stem)
    except OSError:
        pass
    return names - set(getattr(sys, "stdlib_module_names", ())) - set(sys.builtin_module_names)


def import_isolated(module_name: str, roots) -> object:
    """Import `module_name` with `roots` first on sys.path and none of the modules their trees
    provide visible from earlier imports; put sys.path and sys.modules back afterwards."""
    provided = set().union(*(_top_names(r) for r in roots)) | {module_name.split(".")[0]}
    provided -= set(getattr(sys, "stdlib_module_names", ()))
    provided -= _NEVER_HIDE

    def ours(key: str) -> bool:
        return key.split(".")[0] in provided and key not in _NEVER_HIDE

    hidden = {k: sys.modules.pop(k) for k in list(sys.modules) if ours(k)}
    saved_path = list(sys.path)
    sys.path[:0] = [str(r) for r in roots]
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module_name)
    finally:
        for key in [k for k in sys.modules if ours(k)]:
            del sys.modules[key]
        sys.modules.update(hidden)
        sys.path[:] = saved_path
