"""The check protocol: what a check plans (`Case` records), how one case runs in any process, and what it adds to
the report (`Findings`: its section, its verdicts of each variant against the baseline, what it left out). The
pipeline, the distributed tasks and review run every check through it and name none (docs/architecture.md:
adding a check)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional, Protocol

from compare.model.check_sections import CheckSection
from compare.model.results import IRSection, NumericsSection, TimingSection
from compare.model.skips import Skip
from compare.runtime.progress import Step


@dataclasses.dataclass(frozen=True)
class Case:
    """One unit of a check's work, named so that any process can plan it again and run it: a shape, a dtype and
    an input kind, in trial mode (`seeds`) or timing mode; `mode` is the pass (forward, backward, full)."""

    check: str                        # the name of the check that planned it (Check.name)
    key: str                          # unique in a run, e.g. "numerics forward float32 normal 16,64,8,4x4"
    family: str = ""
    shape: int = 0                    # the index of the plan's shape
    dtype: str = ""                   # the family's name of the dtype
    input_kind: str = ""
    seeds: tuple[int, ...] = ()       # trial mode: a trial per seed
    mode: str = ""
    variants: tuple[str, ...] = ()    # the variants it runs (empty: every variant of the plan)

    @classmethod
    def from_dict(cls, data: dict) -> "Case":
        """The case of its `dataclasses.asdict` form read back from JSON (lists back to tuples)."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclasses.dataclass(frozen=True)
class Findings:
    """What checks add to a report; `+` joins them in the order the checks ran (a later section of a kind
    replaces none: each kind comes from one check)."""

    numerics: Optional[NumericsSection] = None
    timing: Optional[TimingSection] = None
    ir: tuple[Optional[IRSection], ...] = ()   # the forward kernel's section (None: none), then further kernels
    sections: tuple[CheckSection, ...] = ()    # checks outside the built-in four (compare/model/check_sections.py)
    skipped: tuple[Skip, ...] = ()

    def __add__(self, other: "Findings") -> "Findings":
        return Findings(other.numerics or self.numerics, other.timing or self.timing, self.ir + other.ir,
                        self.sections + other.sections, self.skipped + other.skipped)


class CheckStopped(BaseException):
    """A stop signal during a check whose finished cases are reported (`findings`); `stop`: the supervisor's."""

    def __init__(self, findings: Findings, done: int, stop: BaseException):
        super().__init__(str(stop))
        self.findings, self.done, self.stop = findings, done, stop


class Results(Protocol):
    """A check's case results, as its records, in the plan's order: `all` waits for every one; `finished` gives
    those done (a stop came: the rest never will be)."""

    def all(self) -> list: ...
    def finished(self) -> list: ...


class Done:
    """Results of cases run here, in turn."""

    def __init__(self, results: list):
        self.results = results

    def all(self) -> list:
        return self.results

    def finished(self) -> list:
        return self.results


class Pending(Protocol):
    """A check begun in this process: `result` runs or waits for it; `cancel` ends it early (the run failed or
    was stopped); `close` frees what it started (every time, last)."""

    def result(self) -> Findings: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...


class Check(Protocol):
    """A check. `answers`: the --check words it runs for; `partial`: a stop keeps its finished cases;
    `exclusive`: each case needs a GPU of its own; `collect_steps`: progress units its `collect` adds."""

    name: str
    answers: tuple[str, ...]
    result_type: Any          # the model record `run` returns (a task's answer is its JSON form)
    partial: bool
    exclusive: bool
    collect_steps: int

    def cases(self, plan, backend) -> tuple[Case, ...]: ...
    def run(self, case: Case, plan, backend, step: Step) -> Any: ...
    def collect(self, plan, backend, step: Step, results: Results) -> Findings: ...
    def begin(self, plan, backend, step: Step, cache=None) -> Pending: ...
    def steps(self, plan, backend) -> int: ...
    def left_out(self, plan) -> tuple[Skip, ...]: ...
    def asked(self, plan) -> tuple[str, ...]: ...
    def group(self, case: Case) -> str: ...


class Ready:
    """A Pending whose work runs when its result is asked for (`work`: a function of no arguments)."""

    def __init__(self, work):
        self.work = work

    def result(self) -> Findings:
        return self.work()

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


class CaseCheck:
    """The defaults of a check that runs its cases in turn in this process and collects them: a new check
    subclasses it and gives `name`, `result_type`, `cases`, `run` and `collect`."""

    name = ""
    result_type: Any = None
    partial, exclusive, collect_steps = False, False, 0

    @property
    def answers(self) -> tuple[str, ...]:
        return (self.name,)

    def begin(self, plan, backend, step: Step, cache=None) -> Pending:
        def work() -> Findings:
            results = []
            for case in self.cases(plan, backend):
                results.append(self.run(case, plan, backend, step))
                step.advance()
            return self.collect(plan, backend, step, Done(results))
        return Ready(work)

    def steps(self, plan, backend) -> int:
        return len(self.cases(plan, backend))

    def left_out(self, plan) -> tuple[Skip, ...]:
        """What of the check the plan leaves out, said before it runs."""
        return ()

    def asked(self, plan) -> tuple[str, ...]:
        """The --check words the plan runs it for (a stop names those that never started)."""
        return (self.name,)

    def group(self, case: Case) -> str:
        """Cases of another group never share a worker process."""
        return "cases"
