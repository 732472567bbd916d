"""What a library's import does to the process that is its own, not a variant's tampering, and a package
it needs that the environment lacks: typed records, each with the line that says it. An act that cannot
reach a measurement (its own environment variable, a stream replaced by a filter, a warnings filter for its
own warnings) done alike by every revision's import of one module is the library's habit
(compare.runtime.import_acts decides it); done by one revision only, it is that revision's change."""
from __future__ import annotations

import dataclasses

from compare.model.states import Word


class Act(Word):
    """A kind of process-wide act an import may do that does not reach a measurement."""

    ENVIRON = "environ"     # set an environment variable of its own (none torch, Triton, CUDA or kernel-ab read)
    STREAM = "stream"       # replaced sys.stdout or sys.stderr (put back: kernel-ab writes through its own)
    WARNINGS = "warnings"   # made warnings of its own modules errors


@dataclasses.dataclass(frozen=True)
class ImportAct:
    act: Act
    name: str               # the variable, the stream (sys.stderr), or the warnings filter's module pattern

    def text(self) -> str:
        return {Act.ENVIRON: f"set the environment variable {self.name}",
                Act.STREAM: f"replaced {self.name} (put back after the import)",
                Act.WARNINGS: f"made warnings of {self.name} errors"}[self.act]

    def fault(self) -> str:
        """The act said as a variant's change of the process (as the launch guard says it)."""
        return {Act.ENVIRON: f"changed os.environ ({self.name})", Act.STREAM: f"patched {self.name}",
                Act.WARNINGS: "made warnings errors (warnings.simplefilter('error'))"}[self.act]


@dataclasses.dataclass(frozen=True)
class LibraryImport:
    """What the import of `module` did alike at every revision loaded: the library's own habits."""

    module: str                         # the path imported (mylib/rms.py), or an installed module's name
    acts: tuple[ImportAct, ...] = ()

    def line(self) -> str:
        return (f"the library's import ({self.module}) {'; '.join(a.text() for a in self.acts)} at every revision: "
                "its own habit, no variant's change")


@dataclasses.dataclass(frozen=True)
class MissingPackage:
    """A package the library imports that this environment lacks (from the ModuleNotFoundError's `name`
    and the innermost frame of the library's tree in its traceback)."""

    package: str
    file: str       # relative to the library's tree
    line: int

    @classmethod
    def of(cls, found) -> "MissingPackage | None":
        """The record of what loading found (variants.external.MissingImport: package, file, line), or None."""
        return None if found is None else cls(found.package, found.file, found.line)

    def text(self) -> str:
        return f"needs package {self.package} (imported by {self.file}:{self.line}), which this environment lacks"
