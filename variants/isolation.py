"""Import a module from a tree of its own, isolated from other trees and from kernel-ab itself.

During the import the tree's and kernel-ab's top-level names are out of `sys.modules`, and kernel-ab's
names resolve only in the tree; afterwards `sys.modules` and `sys.path` are as before. An import a function
makes when called is answered by the tree's kept modules (`_tree_import`), so revisions load side by side.
A family folder (variants/discovery.py) imports with `share_own`: apart from other trees, on kernel-ab's own."""
from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

# never hidden from sys.modules while a kernel imports, whatever the kernel's tree holds
_NEVER_HIDE = frozenset({"triton", "torch", "numpy"})


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


@functools.cache
def _own_names() -> frozenset[str]:
    """kernel-ab's top-level names: what the folder holding variants/ provides (a checkout's root, or the
    installed package kernel_ab, which holds nothing else), and kernel_ab itself."""
    return frozenset(_top_names(Path(__file__).resolve().parents[1]) - {"__init__", "__main__"} | {"kernel_ab"})


class _OnlyInTree:
    """First on sys.meta_path during an isolated import: kernel-ab's names resolve in the tree's roots
    or not at all (the editable install's finder and kernel-ab's folder on sys.path come later)."""

    def __init__(self, roots, names: frozenset[str]):
        self.roots, self.names = [str(r) for r in roots], names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.names:
            return None
        spec = PathFinder.find_spec(fullname, self.roots if path is None else path, target)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {fullname!r} in the reviewed tree (a variant never "
                                      "imports kernel-ab's own)", name=fullname)
        return spec


def import_isolated(module_name: str, roots, share_own: bool = False) -> object:
    """Import `module_name` with `roots` first on sys.path, none of the modules their trees provide (nor
    kernel-ab's) visible from earlier imports; put sys.path and sys.modules back afterwards."""
    with isolated(roots, module_name, share_own):
        return importlib.import_module(module_name)


def import_kept(module_name: str, roots, share_own: bool = False) -> object:
    """`import_isolated`, answered from the modules an earlier import from the same `roots` kept: a tree's
    package runs once in a process, whichever of its modules is asked for later (a review's ops, a warm
    worker's requests)."""
    wanted = tuple(str(r) for r in roots)
    tree = next((t for t in reversed(_TREES) if tuple(str(r) for r in t.roots) == wanted
                 and t.share_own == share_own), None)
    if tree is None:
        return import_isolated(module_name, roots, share_own)
    if module_name not in tree.modules:
        with isolated(tree.roots, module_name, share_own, into=tree.modules):
            importlib.import_module(module_name)
    return tree.modules[module_name]


@contextlib.contextmanager
def isolated(roots, module_name: str = "", share_own: bool = False, into: dict | None = None):
    """The isolation of `import_isolated` around a block (a family folder imports its package and lists its
    variants in one). `share_own`: kernel-ab's names stay kernel-ab's (a family builds on its protocol).
    `into`: a tree's modules already loaded, visible in the block and given what it imports."""
    own = frozenset() if share_own else _own_names() - _NEVER_HIDE
    provided = set().union(*(_top_names(r) for r in roots)) | ({module_name.split(".")[0]} if module_name else set())
    provided = (provided | own) - set(getattr(sys, "stdlib_module_names", ())) - _NEVER_HIDE
    if share_own:
        provided -= _own_names()

    def ours(key: str) -> bool:
        return key.split(".")[0] in provided

    hidden = {k: sys.modules.pop(k) for k in list(sys.modules) if ours(k)}
    sys.modules.update(into or {})
    saved_path = list(sys.path)
    sys.path[:0] = [str(r) for r in roots]
    finder = _OnlyInTree(roots, own)
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    _IMPORTING.append(module_name)   # while it imports, the finder alone decides (not `_tree_import`)
    try:
        yield
    finally:
        _IMPORTING.pop()
        sys.meta_path.remove(finder)
        modules = {key: sys.modules.pop(key) for key in [k for k in sys.modules if ours(k)]}
        if into is None:
            _remember(roots, modules, frozenset(provided), share_own)
        else:
            into.update(modules)
        sys.modules.update(hidden)
        sys.path[:] = saved_path


@dataclasses.dataclass(frozen=True)
class _Tree:
    prefixes: tuple[str, ...]   # its roots' folders, each ending in os.sep
    modules: dict               # what it has imported so far
    names: frozenset            # top-level names it answers for: its own, and kernel-ab's unless shared
    roots: tuple
    share_own: bool


# Imports a reviewed tree's code makes when called (a function body's `import variants.x`): each tree's
# modules, kept here, answer for kernel-ab's names and the tree's own (one not imported yet is imported
# then, in the tree's isolation), so such an import never reaches kernel-ab's modules
# (ModuleNotFoundError where the tree has none), as at import time.
_TREES: list[_Tree] = []
_IMPORTING: list[str] = []
_BUILTIN_IMPORT = builtins.__import__


def _remember(roots, modules: dict, names: frozenset, share_own: bool) -> None:
    own_folder = str(Path(__file__).resolve().parents[1])
    prefixes = tuple(str(Path(r).resolve()) + os.sep for r in roots if str(Path(r).resolve()) != own_folder)
    if not prefixes:   # the tree is kernel-ab's own checkout: its imports are kernel-ab's anyway
        return
    _TREES.append(_Tree(prefixes, modules, names, tuple(roots), share_own))
    if builtins.__import__ is _BUILTIN_IMPORT:
        builtins.__import__ = _tree_import


def _tree_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__file__") or ""
    tree = None
    if importer and not _IMPORTING:   # the latest load of a tree answers for it
        tree = next((t for t in reversed(_TREES) if importer.startswith(t.prefixes)), None)
    if tree is not None:
        absolute = importlib.util.resolve_name("." * level + name, globals.get("__package__")) if level else name
        top = absolute.split(".")[0]
        if absolute in tree.modules or top in tree.names:
            if absolute not in tree.modules:   # ModuleNotFoundError where the tree has none
                with isolated(tree.roots, absolute, tree.share_own, into=tree.modules):
                    importlib.import_module(absolute)
            return tree.modules[absolute] if fromlist else tree.modules.get(top, tree.modules[absolute])
    return _BUILTIN_IMPORT(name, globals, locals, fromlist, level)
