"""The check protocol: what a check plans (`Case` records), how one case runs in any process, and what it adds to
the report (`Findings`: its section, its verdicts of each variant against the baseline, what it left out). The
pipeline, the distributed tasks and review run every check through it and name none (docs/architecture.md:
adding a check)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from compare.model.check_sections import CheckSection
from compare.model.results import IRSection, NumericsSection, TimingSection
from compare.model.skips import Interruption, Skip
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
    ir: Optional[IRSection] = None             # the compiled code's first section (the first kernel compared)
    ir_kernels: tuple[IRSection, ...] = ()     # the sections of further kernels (the backward's)
    sections: tuple[CheckSection, ...] = ()    # checks outside the built-in four (compare/model/check_sections.py)
    skipped: tuple[Skip, ...] = ()

    def __add__(self, other: "Findings") -> "Findings":
        return Findings(numerics=other.numerics or self.numerics, timing=other.timing or self.timing,
                        ir=other.ir or self.ir, ir_kernels=self.ir_kernels + other.ir_kernels,
                        sections=self.sections + other.sections, skipped=self.skipped + other.skipped)


class CheckStopped(BaseException):
    """A stop signal during a check whose finished cases are reported (`findings`); `stop`: the supervisor's."""

    def __init__(self, findings: Findings, stop: BaseException):
        super().__init__(str(stop))
        self.findings, self.stop = findings, stop


class Done:
    """The results of a check's cases, as its records in the plan's order: `all` (waiting for every one where they
    run elsewhere) and `finished` (those done when a stop came). These ran here, in turn."""

    def __init__(self, results: list):
        self.results = results

    def all(self) -> list:
        return self.results

    finished = all


@dataclasses.dataclass(frozen=True)
class Warm:
    """What a caller comparing many pairs (a review's ops) keeps for its later runs, handed to each check's
    `begin`: compiled kernels and their worker (compare.checks.ir.CompileCache), the timing processes
    (compare.comparison.timing_run.TimingWorkers). None: the run starts its own and ends them with it."""

    ir: Any = None
    timing: Any = None


class Ready:
    """A check begun in this process: `result` runs or waits for its findings; `cancel` ends it early (the run
    failed or was stopped); `close` frees what it started (always, last)."""

    def __init__(self, work: Callable[[], Findings], cancel: Callable[[], None] = lambda: None,
                 close: Callable[[], None] = lambda: None):
        self.result, self.cancel, self.close = work, cancel, close


class Check:
    """A check: a subclass gives `name`, `result_type` (the model record `run` returns: a task answers with its
    JSON form), `cases`, `run` and `collect`; the rest has defaults. `answers`: the --check words it runs for;
    `partial`: a stop keeps its finished cases; `exclusive`: a case needs a GPU of its own; `collect_steps`:
    progress units its `collect` adds where the run started."""

    name, result_type = "", None
    partial, exclusive, collect_steps = False, False, 0

    @property
    def answers(self) -> tuple[str, ...]:
        return (self.name,)

    def cases(self, plan, backend) -> tuple[Case, ...]:
        raise NotImplementedError

    def run(self, case: Case, plan, backend, step: Step) -> Any:
        """One case, in whichever process runs it."""
        raise NotImplementedError

    def collect(self, plan, backend, step: Step, results: Done) -> Findings:
        """Its findings from its cases' results (`Done`, or their like for tasks run elsewhere)."""
        raise NotImplementedError

    def begin(self, plan, backend, step: Step, warm: Warm = Warm()) -> Ready:
        """Begun in this process (by default its cases run in turn when the result is asked for); `warm`: what
        the caller keeps across runs."""
        def work() -> Findings:
            results = []
            for case in self.cases(plan, backend):
                results.append(self.run(case, plan, backend, step))
                step.advance()
            return self.collect(plan, backend, step, Done(results))
        return Ready(work)

    def steps(self, plan, backend) -> int:
        """Progress units of `begin`."""
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

    def interruption(self, stop: str, plan, backend, found: Findings, asked: tuple[str, ...]) -> Interruption:
        """How far a stop let the run get, where this is the `partial` check: the cases it finished, of those
        planned, and the checks `asked` for that never started."""
        return Interruption(stop, 0, 0, asked)
