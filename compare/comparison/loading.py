"""Loading the --variant kernels: their modules' imports as launches of the variants' code
(compare.runtime.supervisor.running), with their libraries' habits set apart (compare.runtime.import_acts):
what every revision's import of one module did alike is the library's; what one did alone is that variant's
change of the process, which ends the run as tampered with, and the supervisor runs it again without that
variant. And what is raised when a spec cannot be loaded, or nothing can."""
from __future__ import annotations

import contextlib
from pathlib import Path

from compare.model.errors import UsageError
from compare.model.results import VariantInfo
from compare.runtime import import_acts, supervisor


class NothingToCompare(RuntimeError):
    """Every variant asked for failed to load; the message says which and why, one line each; `failed`: their
    records (a package one needs that this environment lacks among them)."""

    def __init__(self, message: str, failed: tuple[VariantInfo, ...] = ()):
        super().__init__(message)
        self.failed = failed


class UnloadableSpec(UsageError):
    """A --variant spec whose code cannot be found or loaded: the user's error, but one op's failure in review."""


@contextlib.contextmanager
def launch(name: str, what: str):
    """The import of variant `name`'s module (`what` says it)."""
    with import_acts.lifted(), supervisor.running((name,), what, importing=True):
        yield


def kept_kernels(repo):
    """The --variant loader a sequence of comparisons shares (a review's ops, a warm timing process's requests):
    each revision's tree materialized and its modules imported once, under the same guard as one comparison's.
    A context manager: the trees are removed at its end."""
    from variants.external import ExternalKernels
    return ExternalKernels(repo, guard=launch, keep=True)


def _module(spec) -> str:
    """What a spec imports, alike at every revision: its path in the repository (or an installed module's
    name); a file outside git is a module of its own."""
    return spec.path if spec.rev is not None or spec.installed else str(Path(spec.path).resolve())


def settle(specs, names) -> None:
    """After the --variant `specs` were loaded (`names`: those that did): a variant whose import did an
    act the others of its module did not is ended as having tampered (supervisor.tampered)."""
    for own in import_acts.decide({s.name: _module(s) for s in specs if s.name in names}):
        supervisor.tampered((own.variant,), own.changes, own.what)
