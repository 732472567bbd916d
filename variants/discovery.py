"""Where families come from, in this order: the packages under variants/; each `--family-path DIR` and the
`family-paths` of the reviewed pyproject's `[tool.kernel-ab]` (a package `DIR/<name>/` setting `FAMILY`);
installed packages' entry points in group `kernel_ab.families`. Two families with one name, or a family
package that fails to import, is a FamilyError (one line).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import pkgutil
from importlib.metadata import entry_points
from pathlib import Path

import variants.waiting as waiting
from variants.catalog import Registry, collect, family_packages
from variants.family import Family
from variants.isolation import isolated

GROUP = "kernel_ab.families"
# the folders of the command line and the pyproject, as JSON [[origin, folder], ...]: set while a command
# runs, so that the processes it starts (timing, compile workers) find the same families
FOLDERS_ENV = "KERNEL_AB_FAMILY_FOLDERS"
BUILT_IN = "built-in"


class FamilyError(ValueError):
    """A family that cannot be registered; the message is one line: which, why, and what to do."""


@dataclasses.dataclass(frozen=True)
class Found:
    family: Family
    variants: dict
    origin: str


def _pyproject(repo: Path) -> Path | None:
    """The nearest pyproject.toml at or above `repo`, not above its git top level."""
    for folder in (repo, *repo.parents):
        if (folder / "pyproject.toml").is_file():
            return folder / "pyproject.toml"
        if (folder / ".git").exists():
            return None
    return None


def kernel_ab_table(text: str) -> dict:
    """The `[tool.kernel-ab]` table of a pyproject.toml's text ({} without one): family folders are read
    from it here, review's kernel mapping (compare/review/mapping.py) too. ValueError, one line, if no TOML."""
    try:
        import tomllib
    except ImportError:   # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise ValueError("reading pyproject.toml needs Python 3.11 or the tomli package (pip install tomli)") from None
    try:
        table = tomllib.loads(text).get("tool", {}).get("kernel-ab", {})
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"pyproject.toml is not TOML: {exc}") from None
    return table if isinstance(table, dict) else {}


def pyproject_folders(repo: str | os.PathLike = ".") -> list[tuple[str, Path]]:
    """(origin, folder) of each `family-paths` entry of the `[tool.kernel-ab]` table (none without one)."""
    if not Path(repo).is_dir():
        raise FamilyError(f"--repo {repo}: no such folder")
    path = _pyproject(Path(repo).resolve())
    if path is None:
        return []
    try:
        table = kernel_ab_table(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise FamilyError(f"{path} cannot be read as TOML ({exc}); fix it or give --repo another folder") from None
    except ValueError as exc:
        raise FamilyError(f"{path}: {exc}; fix it or give --repo another folder") from None
    paths = table.get("family-paths", []) if isinstance(table, dict) else []
    if not isinstance(paths, list) or not all(isinstance(p, str) and p.strip() for p in paths):
        raise FamilyError(f"{path}: [tool.kernel-ab] family-paths must be a list of folder names, "
                          f'e.g. family-paths = ["kernels/families"]')
    return [(f"pyproject {p}", _folder(path.parent / p, f"{path}: family-paths entry {p!r}")) for p in paths]


def _folder(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise FamilyError(f"{what}: no such folder {path} (a folder holding family packages)")
    return path.resolve()


def folders(family_paths=(), repo: str | os.PathLike = ".") -> list[tuple[str, Path]]:
    """(origin, folder) of every --family-path DIR, then of the pyproject's family-paths; a folder once."""
    if any(not p.strip() for p in family_paths):
        raise FamilyError("--family-path is empty; give a folder holding family packages")
    found = [(f"--family-path {p}", _folder(Path(p), f"--family-path {p}")) for p in family_paths]
    found += pyproject_folders(repo)
    return list({folder: (origin, folder) for origin, folder in reversed(found)}.values())[::-1]


@contextlib.contextmanager
def configured(family_paths=(), repo: str | os.PathLike = "."):
    """While the block runs, `registry()` (here and in the processes it starts) also finds the families
    of these folders (FamilyError for a folder that is not one)."""
    before = os.environ.get(FOLDERS_ENV)
    os.environ[FOLDERS_ENV] = json.dumps([[o, str(f)] for o, f in folders(family_paths, repo)])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(FOLDERS_ENV, None)
        else:
            os.environ[FOLDERS_ENV] = before


def configured_folders() -> list[tuple[str, Path]]:
    return [(origin, Path(folder)) for origin, folder in json.loads(os.environ.get(FOLDERS_ENV) or "[]")]


def family_folders() -> set[Path]:
    """The family folders of the command that runs (`configured`): their code imports kernel-ab's own."""
    return {folder for _, folder in configured_folders()}


def _family_of(obj, where: str) -> Family | None:
    """The Family an entry point or a package names: an instance, a class, or a module's FAMILY."""
    if isinstance(obj, type) and issubclass(obj, Family):
        obj = obj()
    elif not isinstance(obj, Family) and hasattr(obj, "__spec__") and hasattr(obj, "__name__"):
        obj = getattr(obj, "FAMILY", None)
        if obj is None:
            return None
        if isinstance(obj, type) and issubclass(obj, Family):
            obj = obj()
    if not isinstance(obj, Family):
        raise FamilyError(f"{where}: found a {type(obj).__name__}, not a variants.family.Family (give an instance "
                          "or a subclass)")
    return obj


@contextlib.contextmanager
def _loading(what: str):
    """Any error the family's code raises (a KeyboardInterrupt too: the user's own signals are no
    KeyboardInterrupt, compare.runtime.supervisor.Stopped) as one FamilyError line naming `what`."""
    try:
        yield
    except FamilyError:
        raise
    except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        first = next((line for line in str(exc).splitlines() if line.strip()), "")
        said = f"{type(exc).__name__}: {first}" if first else type(exc).__name__   # sys.exit() says nothing
        raise FamilyError(f"{what} failed to load: {said}"[:400]) from None


def _built_in() -> list[Found]:
    found = []
    for package in family_packages():
        with _loading(f"family package variants/{package} ({BUILT_IN})"):
            family = _family_of(importlib.import_module(f"variants.{package}"), f"variants/{package}")
            if family is not None:
                found.append(Found(family, collect(family), BUILT_IN))
    return found


def _from_folder(origin: str, folder: Path) -> list[Found]:
    """The families of a folder's packages, each imported in isolation (variants/isolation.py) with its
    variants listed in the same window, so that the family's own imports resolve in its folder."""
    found = []
    for package in sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if m.ispkg):
        where = f"family package {package} ({origin})"
        with _loading(where), isolated((folder,), package, share_own=True):
            family, variants = _imported(package, where)
        if family is not None:
            # its kernels are compiled again elsewhere (compare/checks/ir/worker.py) from the same folder
            roots = (str(folder),)
            found.append(Found(family, {n: dataclasses.replace(v, import_roots=roots) if v.own_kernels else v
                                        for n, v in variants.items()}, origin))
    return found


def _imported(package: str, where: str, load_module=None) -> tuple:
    """(the family, its variants) of a package (`load_module`: an entry point's load), imported under a time
    limit (variants/waiting.py): an import that blocks is one FamilyError line, never a hang."""
    def load():
        family = _family_of(load_module() if load_module else importlib.import_module(package), where)
        return family, (collect(family) if family is not None else {})
    seconds = waiting.limit(waiting.IMPORT_LIMIT_S)
    try:
        return waiting.within(seconds, load, f"the import of {where}")
    except waiting.TimedOut as exc:
        raise FamilyError(f"{exc} (does its module code wait on something: a lock, input, the network?); "
                          f"{waiting.LIMIT_ENV}=SECONDS gives it longer") from None


def _from_entry_points() -> list[Found]:
    found = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        dist = getattr(ep.dist, "name", None) or "an unnamed distribution"
        origin = f"entry point {ep.name} from {dist}"
        with _loading(f"family {origin} ({ep.value})"):
            family, variants = _imported(ep.value, f"{origin} ({ep.value})", ep.load)
            if family is None:
                raise FamilyError(f"{origin} ({ep.value}) names a module without FAMILY; point it at a Family")
            found.append(Found(family, variants, origin))
    return found


def discover() -> list[Found]:
    """Every family, in the order above (FamilyError: a name found twice, or a family that fails)."""
    found = _built_in()
    for origin, folder in configured_folders():
        found += _from_folder(origin, folder)
    found += _from_entry_points()
    first: dict[str, Found] = {}
    for f in found:
        if f.family.name in first:
            raise FamilyError(f"two families are named {f.family.name!r}: one from {first[f.family.name].origin}, "
                              f"one from {f.origin}; rename one (its class's `name`) or leave one out")
        first[f.family.name] = f
    return found


def registry() -> Registry:
    reg = Registry({}, {})
    for f in discover():
        reg = reg.with_family(f.family, f.origin, f.variants)
    return reg
