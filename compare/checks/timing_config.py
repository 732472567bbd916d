"""How a timing comparison is set up: its settings (the command line's timing flags), the constants of
graph replay, and the one line of method every report prints."""
from __future__ import annotations

import dataclasses

from compare.model import vocabulary


GRAPH_AUTO_BELOW_MS = 0.1   # in graph mode "auto", a case whose fastest eager call is under this is replayed from graphs
LAUNCH_BOUND_FRACTION = 0.5  # host time per eager call at least this fraction of its GPU time: launch-bound
CONTROL = "\0A/A"          # the hidden second entry of the baseline (no variant name can hold a NUL)


@dataclasses.dataclass(frozen=True)
class TimingConfig:
    modes: tuple[str, ...] = ()   # (): the passes whose code differs (compare.comparison.timing_run.plan_modes)
    rounds: int = 60              # at most this many rounds per case
    min_rounds: int = 10
    calls_per_round: int = 5
    warmup_ms: float = 25.0
    max_seconds: float = 10.0     # per case (one shape and mode, all variants), after warm-up
    noise: float = vocabulary.DEFAULT_NOISE
    graph: str = "auto"           # "auto", "on" or "off"
    flush_bytes: int = 256 * 1024 * 1024
    seed: int = 0
    placements: int = 3           # output-buffer sets; each entry pairs each with every input copy once a cycle

    def __post_init__(self):
        if self.modes:   # (no modes: the family protocol, and the families with it, are not imported)
            from variants.variant import MODES
            bad = [m for m in self.modes if m not in MODES]
            if bad:
                raise ValueError(f"unknown mode {bad[0]!r}; known modes: {', '.join(MODES)}")
        if self.graph not in ("auto", "on", "off"):
            raise ValueError(f"--graph must be auto, on or off, got {self.graph!r}")
        if self.min_rounds < 2 or self.rounds < self.min_rounds or self.calls_per_round < 1:
            raise ValueError("need rounds >= 2 and calls per round >= 1")
        if self.placements < 1:
            raise ValueError(f"placements must be at least 1, got {self.placements}")
        if not 0 <= self.noise < 1:
            raise ValueError(f"--noise is a fraction in [0, 1), got {self.noise}")


def method_text(config: TimingConfig) -> str:
    """How the cases were timed and the verdict decided, for the report."""
    return (f"interleaved rounds (order shuffled each round), {config.calls_per_round} calls per variant per "
            f"round, {config.min_rounds}-{config.rounds} rounds or {config.max_seconds:g} s per case, "
            f"{config.flush_bytes >> 20} MiB L2 flush before every call (a read, so that the timed call "
            "writes back no dirty lines of the flush's), CUDA events around each call; "
            f"the variants of a case write into one shared set of output buffers, {config.placements} such sets "
            "rotated (placement moves every variant of a round alike), and read one of as many sealed copies of "
            "the inputs as there are entries, each entry pairing every copy with every set once a cycle; "
            "the baseline is "
            "timed again as a hidden A/A control entry; graph mode auto replays a case from CUDA graphs when "
            f"its fastest call is under {GRAPH_AUTO_BELOW_MS:g} ms or a variant's host time per eager call "
            f"is at least {LAUNCH_BOUND_FRACTION:.0%} of its GPU time (launch-bound); "
            f"{vocabulary.CONFIDENCE:.0%} paired bootstrap "
            "interval over rounds; sign-flip permutation p-value; faster/slower only when p < 0.05 and the "
            "whole interval lies outside 1 ± the larger of the noise band and the A/A control's farthest "
            "reach from 1; variants whose timed pass runs identical compiled code: measurement noise, never "
            "faster or slower; after the rounds each variant's calls are audited (on fresh inputs against its "
            "checked run, for threads left running, to a device-wide synchronisation, against the bytes at a copy's "
            "bandwidth and a quarter): a foul withholds its verdict")
