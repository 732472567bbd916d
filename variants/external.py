"""Bring your own kernel or op: from a file, a file at a git revision, or an installed package (the
spec's forms: variants/spec.py). A `@triton.jit` function is the family's forward or backward kernel by its
parameters; anything else callable is an op (variants/ops.py). What a revision's file needs is materialized
(variants/git_tree.py) and each load imports in isolation (variants/isolation.py), so revisions load side by side.
Bad input raises `BadSpec`; a file that fails to import is a `FailedLoad`."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from importlib.metadata import packages_distributions, version
from pathlib import Path

from variants.catalog import Registry
from variants.family import Family, UnknownName
from variants.git_tree import Tree, TreeError, materialize, needed_paths
from variants.isolation import _own_names, _package_root, _top_names, import_isolated, import_kept  # noqa: F401 (re-exported)
from variants.kernel_checks import _is_triton_kernel, compile_failures, kernel_role  # noqa: F401 (re-exported)
from variants.ops import op_variant
from variants.spec import BadSpec, Spec, of  # noqa: F401 (BadSpec re-exported)
from variants.torch_modules import import_read_submodules
from variants.variant import Variant


SCRATCH_ENV = "KERNEL_AB_SCRATCH"   # compare/model/scratch.py's: loading imports no comparison code


def _scratch() -> str | None:
    """The run's scratch folder (compare/model/scratch.py: its supervisor empties it), or None."""
    path = os.environ.get(SCRATCH_ENV, "")
    return path if path and os.path.isdir(path) else None


@dataclasses.dataclass(frozen=True)
class MissingImport:
    """A package a variant's import needs that this environment lacks (compare.model.habits.MissingPackage
    is its record in a report)."""

    package: str
    file: str       # relative to the library's tree
    line: int


ERROR_LINES = 3          # lines of an import error kept in the report


@dataclasses.dataclass(frozen=True)
class FailedLoad:
    """A kernel that could not be loaded: its name, where it was to come from, and the first lines of the error."""

    name: str
    family: str
    where: str      # the spec, less the name
    origin: str
    error: str
    crashed: bool = False   # not loaded because an earlier run of it crashed the process (`skip`)
    needs: MissingImport | None = None   # a package its import needs that this environment lacks


def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary, check=False)
    except FileNotFoundError:
        raise BadSpec("git specs need the `git` program, which is not on PATH") from None


def _error_lines(exc: BaseException, roots, replace: dict[str, str]) -> str:
    """The first lines of an import error, with the place in the kernel's tree it was raised and the
    temporary folders' paths replaced by what they stand for."""
    if isinstance(exc, SyntaxError):  # the message first, then where
        lines = [f"{type(exc).__name__}: {exc.msg}", f"{exc.filename}:{exc.lineno}: {(exc.text or '').strip()}"]
    else:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
        lines = [ln for ln in text if ln.strip()][:ERROR_LINES]
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if any(frame.filename.startswith(str(root) + os.sep) for root in roots):
            where = f" (at {frame.filename}:{frame.lineno})"
            break
    out = "\n".join(lines) + where
    for prefix, label in sorted(replace.items(), key=lambda kv: -len(kv[0])):
        out = out.replace(prefix, label)
    return out


def _missing_package(exc: BaseException, roots) -> MissingImport | None:
    """The package a ModuleNotFoundError (its `name`) says the library imports and this environment lacks: a top
    level name none of the library's trees nor kernel-ab provides, and not installed; with the innermost frame
    of the library's trees in its traceback, the line importing it. None for any other error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    if top in _own_names() or any(top in _top_names(Path(r)) for r in roots):
        return None
    try:
        if importlib.util.find_spec(top) is not None:   # installed: a module of it is missing, not the package
            return None
    except (ImportError, ValueError):
        pass
    def holding(filename: str) -> list[str]:
        return [str(r) for r in roots if filename.startswith(str(r) + os.sep)]
    inside = [f for f in traceback.extract_tb(exc.__traceback__) if holding(f.filename)]
    if not inside:
        return None
    frame, root = inside[-1], min(holding(inside[-1].filename), key=len)   # the path from the library's top
    return MissingImport(top, os.path.relpath(frame.filename, root), frame.lineno or 0)


def _working_tree_note(file: Path) -> str:
    """' (working tree of abc1234)', with ', modified' when the file differs from that commit; '' outside git."""
    try:
        head = subprocess.run(["git", "-C", str(file.parent), "rev-parse", "--short=7", "HEAD"],
                              capture_output=True, text=True, check=False)
        if head.returncode:
            return ""
        status = subprocess.run(["git", "-C", str(file.parent), "status", "--porcelain", "--", file.name],
                                capture_output=True, text=True, check=False)
    except OSError:
        return ""
    modified = ", modified" if status.returncode or status.stdout.strip() else ""
    return f" (working tree of {head.stdout.strip()}{modified})"


class ExternalKernels:
    """Loads --variant kernels for the length of a `with` block; removes what it materialized at exit.

    `load(spec_text, family)` returns a Variant of `family` or a FailedLoad; bad input raises BadSpec."""

    def __init__(self, repo: str | os.PathLike = ".", guard=None, keep: bool = False):
        self.repo = Path(repo)
        # keep: a module imported from a tree answers every later spec of it (variants.isolation.import_kept):
        # a review's ops share each revision's import, as the library's users do
        self.keep = keep
        # guard(name, what): a context manager around each import (a supervisor's status record)
        self.guard = guard or (lambda name, what: contextlib.nullcontext())
        self._tmp: Path | None = None
        self._trees: dict[tuple, Tree] = {}    # (commit, paths in it) -> materialized tree
        self._modules: list = []               # loaded modules, kept alive for the run
        self._toplevel: Path | None = None

    def __enter__(self) -> "ExternalKernels":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._modules.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self._trees.clear()
        linecache.checkcache()   # forget the source lines of files that are gone

    # ------------------------------------------------------------ git
    def _repo_top(self) -> Path:
        if self._toplevel is None:
            if not self.repo.is_dir():
                raise BadSpec(f"--repo {self.repo}: no such folder")
            r = _git(self.repo, "rev-parse", "--show-toplevel")
            if r.returncode:
                raise BadSpec(f"--repo {self.repo}: not a git repository")
            self._toplevel = Path(r.stdout.strip())
        return self._toplevel

    def _commit(self, rev: str) -> str:
        top = self._repo_top()
        if rev.startswith("-"):
            raise BadSpec(f"revision {rev!r} not found in {top}")
        r = _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if r.returncode:
            raise BadSpec(f"revision {rev!r} not found in {top}")
        return r.stdout.strip()

    def _materialize(self, commit: str, path: str, label: str) -> Tree:
        """What `path` needs of `commit` (variants/git_tree.py), once per commit and set of paths."""
        paths = needed_paths(self._repo_top(), commit, path, label)
        if (commit, paths) not in self._trees:
            if self._tmp is None:
                self._tmp = Path(tempfile.mkdtemp(prefix="kernel-ab-byok-", dir=_scratch()))
            dest = self._tmp / f"{commit[:12]}-{len(self._trees)}"
            dest.mkdir()
            self._trees[commit, paths] = materialize(self._repo_top(), commit, paths, dest, label)
        return self._trees[commit, paths]

    # ------------------------------------------------------------ loading
    def load(self, spec: Spec | str, family: Family) -> Variant | FailedLoad:
        spec = of(spec)
        if spec.installed:
            return self._load_installed(spec, family)
        if spec.rev is None:
            file = Path(spec.path)
            if not file.is_file():
                raise BadSpec(f"--variant {spec.name}: no such file {spec.path}")
            file = file.resolve()
            root, module_name = _package_root(file)
            roots = (root,)
            origin = spec.where + _working_tree_note(file)
            labels = {}
        else:
            commit = self._commit(spec.rev)
            short = commit[:7]
            rel = Path(spec.path)
            if rel.is_absolute() or ".." in rel.parts:
                raise BadSpec(f"--variant {spec.name}: PATH {spec.path} must be relative to the repository's top level")
            if _git(self._repo_top(), "cat-file", "-e", f"{commit}:{rel.as_posix()}").returncode:
                raise BadSpec(f"--variant {spec.name}: {spec.path} does not exist at {spec.rev} ({short})")
            origin = f"git:{spec.rev} ({short}) {spec.path}::{spec.callable_text}"
            try:
                made = self._materialize(commit, rel.as_posix(), f"{spec.rev} ({short})")
            except TreeError as exc:   # the repository's fault (a missing object, say), not the spec's
                return FailedLoad(spec.name, family.name, spec.where, origin, str(exc))
            tree = made.folder
            file = tree / rel
            if not file.is_file():
                raise BadSpec(f"--variant {spec.name}: {spec.path} at {spec.rev} ({short}) is not a file")
            root, module_name = _package_root(file, stop=tree)
            roots = tuple(dict.fromkeys((root, tree)))
            if made.skipped:
                origin += f"; unsafe members left out: {', '.join(made.skipped)}"
            labels = {str(tree) + os.sep: f"git:{spec.rev}:"}
        read = import_read_submodules(_text(file))
        if read:
            origin += f"; {', '.join(read)} imported first (its code reads {'them' if len(read) > 1 else 'it'}, " \
                      "and torch does not import it by itself)"
        try:
            with self.guard(spec.name, f"import of {spec.path}"):
                module = (import_kept if self.keep else import_isolated)(module_name, roots)
        # a kernel file that does not import is reported, the others still run (a KeyboardInterrupt its
        # code raises too; the user's own signals are no KeyboardInterrupt: compare.runtime.supervisor.Stopped)
        except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
            return FailedLoad(spec.name, family.name, spec.where, origin,
                              f"import of {spec.path} failed: {_error_lines(exc, roots, labels)}",
                              needs=_missing_package(exc, roots))
        return self._from_module(spec, family, module, origin, tuple(str(r) for r in roots))

    def _load_installed(self, spec: Spec, family: Family) -> Variant | FailedLoad:
        """package.module:CALLABLE: the module as installed (say, a released version), imported as usual."""
        top = spec.path.split(".")[0]
        found = importlib.util.find_spec(top)
        if found is None:
            raise BadSpec(f"--variant {spec.name}: no module {top} is installed (pip install its package, or give "
                          "PATH::CALLABLE for a file)")
        folder = Path(found.origin or next(iter(found.submodule_search_locations or ()), ".")).parent
        dists = packages_distributions().get(top, [])
        origin = f"{spec.where} (installed {dists[0]} {version(dists[0])})" if dists else f"{spec.where} ({folder})"
        try:
            with self.guard(spec.name, f"import of {spec.path}"):
                module = importlib.import_module(spec.path)
        except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:   # as for a file, above
            missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
            if missing and (spec.path + ".").startswith(missing + "."):   # the spec's module, not one it imports
                raise BadSpec(f"--variant {spec.name}: no module {missing} in the installed {top}") from None
            return FailedLoad(spec.name, family.name, spec.where, origin,
                              f"import of {spec.path} failed: {_error_lines(exc, (folder,), {})}",
                              needs=_missing_package(exc, (folder,)))
        return self._from_module(spec, family, module, origin, ())

    def _from_module(self, spec: Spec, family: Family, module, origin: str, roots_text: tuple) -> Variant:
        """The variant (kernel or op) that `spec`'s CALLABLE names in the imported `module`."""
        self._modules.append(module)
        where = f"--variant {spec.name}"
        target = _resolve(module, spec, spec.functions[0]) if len(spec.functions) == 1 else None
        if target is not None and not _is_triton_kernel(target):
            return dataclasses.replace(self._op(spec, target, family, origin, where), import_roots=roots_text)
        if spec.call is not None:
            raise BadSpec(f"{where}: {spec.function} is a @triton.jit kernel, run by the family's launcher; "
                          "an argument list is for ops only")
        kernels = {}
        for function in spec.functions:
            kernel = self._kernel(module, spec, function)
            role = kernel_role(kernel, family, where + (f": {function}" if "," in spec.function else ""))
            if role in kernels:
                raise BadSpec(f"{where}: {spec.function} are both {role} kernels; give one forward "
                              "and one backward kernel")
            kernels[role] = kernel
        variant = family.triton_variant(spec.name, f"{spec.function}, loaded with --variant", origin,
                                        forward=kernels.get("forward"), backward=kernels.get("backward"))
        return dataclasses.replace(variant, import_roots=roots_text)

    @staticmethod
    def _op(spec: Spec, target, family: Family, origin: str, where: str) -> Variant:
        """The op variant of a loaded object that is not a @triton.jit kernel (BadSpec if it is no op either)."""
        if _is_tuned_kernel(target):
            raise BadSpec(f"{where}: {spec.function} is a Triton kernel behind @triton.autotune or "
                          "@triton.heuristics, which the family's launcher cannot configure; name the op that "
                          "launches it instead")
        if not callable(target):
            raise BadSpec(f"{where}: {spec.path}{spec.sep}{spec.function} is neither a @triton.jit kernel nor a "
                          f"callable op (it is {type(target).__name__})")
        return op_variant(spec.name, target, spec.call, family, f"op {spec.callable_text}, loaded with --variant",
                          origin, where)

    @staticmethod
    def _kernel(module, spec: Spec, function: str):
        kernel = _resolve(module, spec, function)
        if not _is_triton_kernel(kernel):
            raise BadSpec(f"--variant {spec.name}: {spec.path}{spec.sep}{function} is not a @triton.jit kernel "
                          f"(it is {type(kernel).__name__})")
        return kernel


def _text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _is_tuned_kernel(obj) -> bool:
    from triton.runtime.jit import KernelInterface
    return isinstance(obj, KernelInterface) and not _is_triton_kernel(obj)


def _resolve(module, spec: Spec, function: str):
    """The object `function` (a name or a dotted path) names in `module`; BadSpec if there is none."""
    target = module
    parts = function.split(".")
    for depth, part in enumerate(parts):
        if not hasattr(target, part):
            if depth:
                raise BadSpec(f"--variant {spec.name}: {spec.path}{spec.sep}{'.'.join(parts[:depth])} has no attribute {part}")
            kernels = sorted(n for n, v in vars(module).items()
                             if _is_triton_kernel(v) and getattr(v.fn, "__module__", None) == module.__name__)
            hint = f"; Triton kernels it defines: {', '.join(kernels)}" if kernels else "; it defines no Triton kernel"
            raise BadSpec(f"--variant {spec.name}: {spec.path} has no function {function}{hint}")
        target = getattr(target, part)
    return target


def add_to(registry: Registry, kernels: ExternalKernels, texts, family_name: str, skip=None):
    """(registry with the loaded kernels, their names in order, failed loads) for the specs (records or texts).

    BadSpec for bad input, including a name already taken or given twice; every spec is parsed
    before any is loaded. `skip` maps names not to load (say, one whose import ended the process) to why."""
    try:
        family = registry.family(family_name)
    except UnknownName as exc:
        raise BadSpec(f"--family: {exc}") from None
    specs = [of(given) for given in texts]
    seen: set[str] = set()
    for spec in specs:
        if registry.has(spec.name, family.name) or spec.name in seen:
            raise BadSpec(f"--variant {spec.name}: the name is already taken; pick another")
        seen.add(spec.name)
    names, failed = [], []
    for spec in specs:
        if spec.name in (skip or {}):
            result = FailedLoad(spec.name, family.name, spec.where, spec.where, skip[spec.name], crashed=True)
        else:
            result = kernels.load(spec, family)
        if isinstance(result, FailedLoad):
            failed.append(result)
        else:
            registry = registry.with_variant(result)
            names.append(result.name)
    return registry, tuple(names), tuple(failed)


