"""Two runs compared (`compare --baseline`, `diff`): per case and variant, the new run's timing and numerics
against the saved run's, and the setting the runs came from. The runs were not interleaved, so a verdict
across them is never a within-run one: the setting and its caveat travel with every comparison."""
from __future__ import annotations

import dataclasses

from compare.model.results import Environment, RatioVerdict
from compare.model.states import Status, Word

# what makes the setup: a change here may move the numbers without the code changing
SETUP_FIELDS = ("device", "gpu_name", "gpu_count", "driver", "cuda", "torch", "triton", "python", "platform")
# said beside the setup, never part of it: the code compared, and clocks read at one moment
OTHER_FIELDS = ("git_commit", "git_dirty", "clocks")
JSON_MARKER = "runs"   # the value of report.json's marker key in `diff --format json`


class Setting(Word):
    """Where the two runs came from, as their reports' environments say."""

    ONE_SETUP = "two runs on one setup"      # the same GPU model, driver and software (the machine is not recorded)
    TWO_SETUPS = "two setups"                # the GPU, driver or software differ


class NumericsChange(Word):
    """One variant's numerics in one case, the new run against the saved one (errors against the reference)."""

    SAME_ERRORS = "same errors against the reference"   # every measure equal, on the same inputs
    MORE = "more accurate"
    AS = "as accurate"
    LESS = "less accurate"
    LOST = "no numbers now"                  # gave numbers in the saved run, none in the new one
    GAINED = "numbers now"                   # none in the saved run, numbers in the new one
    NEITHER = "no numbers in either run"


@dataclasses.dataclass(frozen=True)
class EnvironmentChange:
    field: str
    old: str
    new: str
    setup: bool              # one of SETUP_FIELDS: the two runs' setups differ


@dataclasses.dataclass(frozen=True, kw_only=True)
class TimingAcross(RatioVerdict):
    """One variant in one timed case: its new samples against its saved ones (ratio new / saved)."""

    old_median_ms: float = 0.0
    new_median_ms: float = 0.0


@dataclasses.dataclass(frozen=True)
class TimingCaseAcross:
    shape: str
    dtype: str
    mode: str
    variants: tuple[TimingAcross, ...]
    note: str = ""           # what differs in how the case was timed (graph replay)


@dataclasses.dataclass(frozen=True)
class NumericsAcross:
    variant: str
    change: NumericsChange
    old_status: Status
    new_status: Status
    differing: tuple[str, ...] = ()   # the outputs whose errors against the reference differ
    detail: tuple[str, ...] = ()      # where it became more or less accurate, by the accuracy rule


@dataclasses.dataclass(frozen=True)
class NumericsCaseAcross:
    shape: str
    dtype: str
    input_kind: str
    direction: str
    same_inputs: bool        # both runs drew the same seeds: the same inputs
    variants: tuple[NumericsAcross, ...]


@dataclasses.dataclass(frozen=True)
class RunsComparison:
    family: str
    old: str                 # how the saved run is named (its file)
    new: str
    old_environment: Environment
    new_environment: Environment
    changes: tuple[EnvironmentChange, ...]
    timing: tuple[TimingCaseAcross, ...]
    numerics: tuple[NumericsCaseAcross, ...]
    only_in_one: tuple[str, ...] = ()   # cases and variants one run has and the other has not, one line each
    noise: float = 0.0

    @property
    def setting(self) -> Setting:
        return Setting.TWO_SETUPS if any(c.setup for c in self.changes) else Setting.ONE_SETUP

    @property
    def caveat(self) -> str:
        """What an across-run verdict can and cannot say, for this setting and what was compared."""
        parts = []
        if self.setting is Setting.TWO_SETUPS:
            said = "; ".join(f"{c.field} {c.old or '-'} -> {c.new or '-'}" for c in self.changes if c.setup)
            parts.append(f"the setups differ ({said}): a difference may be the setup's, not the code's")
        if any(case.variants for case in self.timing):
            parts.append("timing across runs, not within one: the runs were not interleaved, so drift between "
                         "them (clocks, temperature, other work on the GPU) is not cancelled as within a run; the "
                         "margin is the larger of the noise band and each run's own A/A control, beyond the least change "
                         "of the case's other variants (drift moves them all, by unlike amounts)")
        if self.setting is Setting.ONE_SETUP:
            parts.append("the reports name the GPU, driver and software, not the machine")
        return "; ".join(parts)


def environment_changes(old: Environment, new: Environment) -> tuple[EnvironmentChange, ...]:
    """The environment fields whose values differ between the two runs, the setup's first."""
    found = []
    for name in SETUP_FIELDS + OTHER_FIELDS:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            found.append(EnvironmentChange(name, str(a), str(b), name in SETUP_FIELDS))
    return tuple(found)
