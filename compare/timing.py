"""The timing comparison (GPU only): interleaved rounds, L2 flushed before every timed call.

Each round times every variant once (a short batch of calls each) in an order shuffled from round to
round, on the same inputs; device events bracket each call and nothing else (the flush is outside).
Every sample is kept; `compare.stats` turns paired rounds into a ratio, an interval and a verdict.
"""
from __future__ import annotations

import dataclasses
import random
import time
from typing import Callable

import torch

from compare import stats
from compare.errors import summarize
from compare.results import TimingCase, TimingComparison, TimingVariant

MODES = ("forward", "backward", "full")
GRAPH_AUTO_BELOW_MS = 0.1   # in graph mode "auto", a case whose fastest eager call is under this is replayed from graphs


@dataclasses.dataclass(frozen=True)
class TimingConfig:
    modes: tuple[str, ...] = ("forward",)
    rounds: int = 60              # at most this many rounds per case
    min_rounds: int = 10
    calls_per_round: int = 5
    warmup_ms: float = 25.0
    max_seconds: float = 10.0     # per case (one shape and mode, all variants), after warm-up
    noise: float = stats.DEFAULT_NOISE
    graph: str = "auto"           # "auto", "on" or "off"
    flush_bytes: int = 256 * 1024 * 1024
    seed: int = 0

    def __post_init__(self):
        bad = [m for m in self.modes if m not in MODES]
        if bad:
            raise ValueError(f"unknown mode {bad[0]!r}; known modes: {', '.join(MODES)}")
        if self.graph not in ("auto", "on", "off"):
            raise ValueError(f"--graph must be auto, on or off, got {self.graph!r}")
        if self.min_rounds < 2 or self.rounds < self.min_rounds or self.calls_per_round < 1:
            raise ValueError("need rounds >= 2 and calls per round >= 1")
        if not 0 <= self.noise < 1:
            raise ValueError(f"--noise is a fraction in [0, 1), got {self.noise}")


def copy_bandwidth_gbs(nbytes: int = 1 << 30, repeats: int = 10) -> float:
    """A large device-to-device copy, in GB/s counting bytes read plus written: the memory ceiling."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    del src, dst
    return 2 * nbytes / (sorted(times)[len(times) // 2] * 1e-3) / 1e9


class _Timed:
    """One variant's callable for one case, eager or replayed from a CUDA graph."""

    def __init__(self, fn: Callable[[], None]):
        self.fn = fn
        self.graph = None

    def capture(self) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self.fn()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.fn()

    def __call__(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.fn()


def _one_call_ms(fn, flush) -> float:
    flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _peak_memory(fn) -> int:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - base)




def time_case(calls: dict[str, Callable[[], None]], bytes_moved: int, copy_gbs: float, shape_label: str,
              mode: str, config: TimingConfig, step: Callable[[str], None] = lambda _: None,
              dtype: str = "") -> TimingCase:
    """Time every callable (first = baseline) in interleaved rounds and compare each with the baseline."""
    flush = torch.empty(config.flush_bytes // 4, dtype=torch.int32, device="cuda")
    timed: dict[str, _Timed] = {}
    failed: dict[str, str] = {}
    memory: dict[str, int] = {}
    for name, fn in calls.items():
        step(f"timing {shape_label} {mode}: warm-up {name}")
        try:
            t = _Timed(fn)
            _one_call_ms(t, flush)   # the first call compiles; not a sample
            memory[name] = _peak_memory(t)
            deadline = time.perf_counter() + config.warmup_ms / 1e3
            while time.perf_counter() < deadline:
                _one_call_ms(t, flush)
            timed[name] = t
        except Exception as exc:  # a variant that crashes is reported; the rest are still timed
            failed[name] = summarize(exc)
            torch.cuda.synchronize()
    eager_ms = {name: _one_call_ms(t, flush) for name, t in timed.items()}
    use_graph = config.graph == "on" or (config.graph == "auto" and eager_ms and
                                         min(eager_ms.values()) < GRAPH_AUTO_BELOW_MS)
    note = ""
    if use_graph:
        broken = {}
        for name, t in list(timed.items()):
            try:
                t.capture()
                _one_call_ms(t, flush)
            except Exception as exc:
                broken[name] = summarize(exc)
                t.graph = None
                torch.cuda.synchronize()
        if broken and config.graph == "on":   # graphs were demanded: a variant that cannot be captured fails
            for name, reason in broken.items():
                failed[name] = f"CUDA graph capture failed: {reason}"
                del timed[name]
        elif broken:   # auto: compare like with like, so every variant of the case is timed eagerly
            for t in timed.values():
                t.graph = None
            use_graph = False
            note = (f"CUDA graph capture failed for {', '.join(broken)} ({next(iter(broken.values()))}); "
                    "every variant of this case was timed from eager launches instead")
    rng = random.Random(config.seed)
    samples: dict[str, list[list[float]]] = {name: [] for name in timed}
    order = list(timed)
    start_time = time.perf_counter()
    rounds = 0
    while rounds < config.rounds and (rounds < config.min_rounds or
                                      time.perf_counter() - start_time < config.max_seconds):
        rng.shuffle(order)
        events = []
        for name in order:
            for _ in range(config.calls_per_round):
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                timed[name]()
                end.record()
                events.append((name, start, end))
        torch.cuda.synchronize()
        per_round: dict[str, list[float]] = {name: [] for name in timed}
        for name, start, end in events:
            per_round[name].append(start.elapsed_time(end))
        for name, values in per_round.items():
            samples[name].append(values)
        rounds += 1
        if rounds % 10 == 0:
            step(f"timing {shape_label} {mode}: round {rounds}")
    seconds = time.perf_counter() - start_time
    variants = []
    for name in calls:
        if name in failed:
            variants.append(TimingVariant(name, "error", failed[name]))
            continue
        flat = [s for r in samples[name] for s in r]
        p20, p50, p80 = stats.quantiles(flat)
        gbs = bytes_moved / (p50 * 1e-3) / 1e9
        variants.append(TimingVariant(name, "ok", "", tuple(flat), len(samples[name]), config.calls_per_round,
                                      p20, p50, p80, memory[name], bytes_moved, gbs,
                                      gbs / copy_gbs if copy_gbs else 0.0))
    comparisons = []
    names = list(calls)
    baseline = names[0]
    for name in names[1:]:
        if baseline in failed or name in failed:
            comparisons.append(TimingComparison(baseline, name, "n/a", reason=f"{baseline if baseline in failed else name} failed"))
            continue
        est = stats.ratio_with_interval(samples[baseline], samples[name], seed=config.seed)
        comparisons.append(TimingComparison(baseline, name, stats.verdict(est, config.noise), est.ratio,
                                            est.ci_low, est.ci_high, est.p_value, est.rounds))
    return TimingCase(shape_label, mode, bool(use_graph), round(seconds, 3), tuple(variants), tuple(comparisons),
                      note, dtype)
