"""What a distributed task answers (compare/processes): its check's result, or why it has none. The same record
travels as one JSON line from a task worker process to its runner, and pickled from a Dask worker or as is
through an executor's future to where the run started."""
from __future__ import annotations

import dataclasses
import json
from typing import Optional

from compare.model.jsonform import encode
from compare.model.results import decode
from compare.model.states import Failure, Word


class TaskState(Word):
    """How a task ended."""

    OK = "ok"              # its check's result came back
    ERROR = "error"        # it failed outside any variant: the run ends with its line
    CRASHED = "crashed"    # a variant ended, hung or poisoned its worker process: the run goes again without it
    LOST = "lost"          # its worker process ended outside any variant's launch: it may run again


@dataclasses.dataclass(frozen=True)
class CrashedVariants:
    """The variants a crashed task names (the one running, or those sharing the launch), why and what they ran."""

    variants: tuple[str, ...]
    why: str
    what: str = ""
    failure: Failure = Failure.NONE   # TAMPER where the variant changed what the process shares


@dataclasses.dataclass(frozen=True)
class TaskAnswer:
    """One task's answer: `result` (OK: the JSON form of its check's result_type), `left_behind` (OK: the threads
    its variants left running in the worker), `line` (ERROR: the error; LOST: why) or `crash` (CRASHED)."""

    state: TaskState
    result: Optional[dict] = None
    left_behind: tuple[str, ...] = ()
    line: str = ""
    crash: Optional[CrashedVariants] = None

    @classmethod
    def ok(cls, result: dict, left_behind: tuple[str, ...] = ()) -> "TaskAnswer":
        return cls(TaskState.OK, result, tuple(left_behind))

    @classmethod
    def error(cls, line: str) -> "TaskAnswer":
        return cls(TaskState.ERROR, line=line)

    @classmethod
    def lost(cls, why: str) -> "TaskAnswer":
        return cls(TaskState.LOST, line=why)

    @classmethod
    def crashed(cls, crash: CrashedVariants) -> "TaskAnswer":
        return cls(TaskState.CRASHED, crash=crash)

    def as_json(self) -> str:
        return json.dumps(encode(self))

    @classmethod
    def from_json(cls, text: str) -> "TaskAnswer":
        return decode(cls, json.loads(text))
