"""The timing comparison (GPU only): interleaved rounds, L2 flushed (by a read) before every timed call.

Each round times every variant in a shuffled order; the variants of a case share one placement of output
buffers, a few placements rotated by round, so placement moves a round alike and shows as spread, never
bias. The baseline is timed again as a hidden A/A control that a verdict must clear (`compare.checks.stats`)."""
from __future__ import annotations

import random
import time
from typing import Callable, Sequence

import torch

from compare.runtime import device_busy, sealing, supervisor
from compare.checks import audit, referee, stats
from compare.checks.case_calls import as_placements, case_calls  # noqa: F401 (re-exported)
from compare.checks.copy_bandwidth import copy_bandwidth_gbs  # noqa: F401 (re-exported)
from compare.checks.harness import REUSED, ReusedOutput
from compare.checks import timing_verdicts as verdicts
from compare.checks.timing_verdicts import same_code as _same_code  # noqa: F401 (re-exported)
from compare.model.results import TimingCase
from compare.model.errors import summarize
from variants.family import NotForThisShape
from variants.variant import NotPlainTensor

from compare.checks.timing_config import (CONTROL, GRAPH_AUTO_BELOW_MS, LAUNCH_BOUND_FRACTION,  # noqa: F401 (re-exported)
                                   TimingConfig, method_text)


class _Timed:
    """One variant's callable for one case, eager or replayed from a CUDA graph."""

    def __init__(self, fn: Callable[[], None]):
        self.fn = fn
        self.graph = None
        self.restore: Callable[[], None] | None = None   # puts back inputs the pass writes into

    def prepare(self) -> None:
        """Before a timed call, and again after it (`settle`), outside its interval: the inputs as the family drew
        them, for the next entry that reads this copy too (compare/checks/case_calls.py passes copies along)."""
        if self.restore is not None:
            self.restore()

    settle = prepare

    def capture(self) -> None:
        own = getattr(self.fn, "capture_graph", None)   # a pass that knows how to capture itself (an op's)
        if own is not None:
            self.graph = own()
            self.settle()
            return
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self.fn()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.fn()
        self.settle()

    def __call__(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.fn()


def flush_l2(buffer: torch.Tensor) -> None:
    """Evict L2 by reading `buffer` (several times its size). A read leaves L2 full of clean lines;
    zeroing the buffer (as triton.testing.do_bench does) leaves it full of dirty ones, whose write-back
    to device memory the next, timed, call then pays for: on the H200 a read-only pass over 42 MB took
    24.7 us after a zeroing flush and 19.5 us after a reading one, a copy of 42 MB 23.9 against 21.5 us
    (reports/l2_flush)."""
    buffer.amax()


def _bracketed(fn, flush) -> tuple:
    """One call of `fn` as a timed one, not waited for: L2 flushed first, inputs put back around it (a `_Timed`),
    CUDA events around the call alone: (start, end)."""
    if isinstance(fn, _Timed):
        fn.prepare()
    flush_l2(flush)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    if isinstance(fn, _Timed):
        fn.settle()
    return start, end


def _one_call_ms(fn, flush) -> float:
    start, end = _bracketed(fn, flush)
    end.synchronize()
    return start.elapsed_time(end)


def _peak_memory(fn) -> int:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    fn.settle()
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - base)


def _launch_cpu_ms(fn, flush, repeats: int = 3) -> tuple[float, float]:
    """(host ms to issue one eager call, its GPU ms), the fastest of a few: an idle queue, so the host
    time is the launch cost alone."""
    cpu, gpu = [], []
    for _ in range(repeats):
        fn.prepare()
        torch.cuda.synchronize()
        flush_l2(flush)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        fn()
        cpu.append((time.perf_counter() - t0) * 1e3)
        end.record()
        fn.settle()
        end.synchronize()
        gpu.append(start.elapsed_time(end))
    return min(cpu), min(gpu)


def _launch_costs(timed: dict, flush, drop, baseline: str, where: str) -> dict[str, tuple[float, float]]:
    """Each entry's `_launch_cpu_ms`, `alone` (a crash names it); one whose call raises is dropped."""
    launch = {}
    for name, ts in list(timed.items()):
        try:
            with supervisor.alone(baseline if name == CONTROL else name, f"{where} launch cost"):
                launch[name] = _launch_cpu_ms(ts[0], flush)
        except BaseException as exc:
            drop(name, exc)
    return launch


def _dropping(warmed, baseline: str) -> Callable[[str, BaseException], None]:
    """What a phase after the warm-up does with an entry whose call raised (its graph freed by an earlier
    call, say): the entry's failure, said why, and no longer timed; the others go on without it."""
    def drop(name: str, exc: BaseException) -> None:
        warmed.failed[name] = supervisor.variant_fault(baseline if name == CONTROL else name, exc)
        warmed.timed.pop(name, None)
        torch.cuda.synchronize()
    return drop


def time_case(calls: dict[str, Callable[[], None] | Sequence[Callable[[], None]]], bytes_moved: int, copy_gbs: float,
              shape_label: str, mode: str, config: TimingConfig, step: Callable[[str], None] = lambda _: None,
              dtype: str = "", control: Callable[[], None] | Sequence[Callable[[], None]] | None = None,
              inputs=None, checked: audit.Checked | None = None) -> TimingCase:
    """Time every entry (first = baseline) in interleaved rounds and compare each with the baseline.

    An entry is one callable, or one per placement (all entries the same number); round r runs
    placement r mod n of every entry. `control` is the baseline's call(s) again: the hidden A/A entry.
    `inputs`: the inputs as drawn; an entry whose `sealed_inputs` its first call changed gets them
    restored before each timed call, outside the interval, and its TimingVariant says what it wrote."""
    # then each entry is audited (compare/checks/audit.py, `checked`: the family's side); a foul withholds
    # the entry's verdict, and the case's `fouls` say why
    placements = len(calls[next(iter(calls))]) if isinstance(calls[next(iter(calls))], (tuple, list)) else 1
    entries = {name: as_placements(fn, placements) for name, fn in calls.items()}
    if control is not None:
        entries[CONTROL] = as_placements(control, placements)
    flush = torch.empty(config.flush_bytes // 4, dtype=torch.int32, device="cuda")
    baseline, where = next(iter(calls)), f"timing {shape_label} {mode}"
    busy = device_busy.check(tuple(calls), where)   # before any call of the case (busy: no warm-up is to blame)
    warmed = _warm_up(entries, baseline, inputs, config, flush, where, step, probe=not busy)
    timed, drop = warmed.timed, _dropping(warmed, baseline)
    launch = _launch_costs(timed, flush, drop, baseline, where)
    launch_bound = tuple(n for n, (cpu, gpu) in launch.items() if n != CONTROL and cpu >= LAUNCH_BOUND_FRACTION * gpu)
    # op-level passes (prefers_graph) are replayed from graphs in "auto" whatever their time: their Python,
    # autograd and allocation overhead can exceed a small kernel's time and spreads their samples
    prefer = any(getattr(t.fn, "prefers_graph", False) for ts in timed.values() for t in ts)
    use_graph = config.graph == "on" or (config.graph == "auto" and bool(launch) and (
        min(gpu for _, gpu in launch.values()) < GRAPH_AUTO_BELOW_MS or bool(launch_bound) or prefer))
    note = ""
    if use_graph:
        note = _capture(timed, warmed.failed, config.graph == "on", flush, baseline, where)
        use_graph = any(t.graph is not None for ts in timed.values() for t in ts)
    samples, seconds = _rounds(timed, placements, config, step, flush, shape_label, mode, drop)
    launch = {n: v for n, v in launch.items() if n in timed}
    audit_start = time.perf_counter()
    # a backward that wrote into its inputs runs, after the restore, on state its forward did not leave (Liger's
    # cross entropy scales the gradient its forward stored in the logits): its fresh outputs are not judged
    unjudged = tuple(warmed.written) if mode == "backward" else ()
    audited = audit.audit_case(timed, samples, checked, flush, bytes_moved, copy_gbs,
                               audit.Tools(torch, _one_call_ms, flush_l2), skip=(CONTROL,), unjudged=unjudged,
                               where=where)
    warmed.fouls.update(audited.fouls)
    warmed.failed.update(audited.crashed)
    audit_seconds = time.perf_counter() - audit_start
    names = list(calls)
    control_est, control_cmp = verdicts.control(names[0], warmed, samples, config) if control is not None \
        else (None, None)
    writers = [n for n in calls if warmed.written.get(n)]
    if writers:
        note = "; ".join(filter(None, (note, f"{', '.join(writers)} wrote into its inputs: they were restored "
                                              "before every timed call, outside the timed interval")))
        if mode == "backward":
            note += ("; so its outputs on fresh upstream gradients are not judged by the audit (its backward reads "
                     "what the restore put back, not what its forward left)")
    return TimingCase(
        shape=shape_label, mode=mode, graph=bool(use_graph), seconds=round(seconds, 3),
        variants=tuple(verdicts.variants(names, warmed, samples, launch, config, bytes_moved, copy_gbs)),
        comparisons=tuple(verdicts.comparisons(names, entries, warmed, samples, config, control_est)),
        note=note, dtype=dtype, control=control_cmp, placements=placements, launch_bound=launch_bound,
        fouls=tuple(f for n in calls for f in warmed.fouls.get(n, ())), audit_seconds=round(audit_seconds, 3))


def _warm_up(entries: dict[str, tuple], baseline: str, inputs, config: TimingConfig, flush, where: str,
             step: Callable[[str], None], probe: bool = False) -> verdicts.Warmed:
    """Call every entry until warm (its first call compiles, not a sample); one that fails is not timed. Each
    warms up `alone` (compare.runtime.supervisor): a crash there names it, and so does the GPU left busy after
    it (`probe`: compare.runtime.device_busy), not every variant of the case."""
    warmed = verdicts.Warmed()
    for name, fns in entries.items():
        step(f"{where}: warm-up {'A/A control' if name == CONTROL else name}")
        culprit = baseline if name == CONTROL else name
        with supervisor.alone(culprit, f"{where} warm-up"):
            before = supervisor.snapshot()   # what its warm-up changes in the process names it alone (process_guard)
            _warm_entry(warmed, name, fns, culprit, inputs, config, flush)
            supervisor.check(before, (culprit,), f"{where} warm-up")
            if probe:
                probe = not device_busy.check(tuple(n for n in entries if n != CONTROL), f"{where} warm-up", culprit)
    return warmed


def _warm_entry(warmed: verdicts.Warmed, name: str, fns: tuple, culprit: str, inputs, config: TimingConfig,
                flush) -> None:
    """One entry's warm-up into `warmed`: its timed callables, or why it failed."""
    try:
        ts = [_Timed(fn) for fn in fns]
        if name != CONTROL and getattr(ts[0].fn, "reused_output", lambda: False)():   # before a call's graph
            raise ReusedOutput(REUSED)                                                # is lost to the next
        for t in ts:
            _one_call_ms(t, flush)   # the first call compiles; not a sample
            _seal(t, inputs, warmed.written, name)
        warmed.memory[name] = _peak_memory(ts[0])
        deadline = time.perf_counter() + config.warmup_ms / 1e3
        while time.perf_counter() < deadline:
            _one_call_ms(ts[0], flush)
        warmed.timed[name] = ts
    except NotForThisShape as exc:   # a limit the variant documents, not a fault
        warmed.failed[name] = f"not for this shape: {exc}"
        warmed.not_run.add(name)
    except ReusedOutput as exc:   # said as it is: the why, not an error's type
        warmed.failed[name] = str(exc)
    except BaseException as exc:  # a variant that crashes is reported; the rest are still timed
        warmed.failed[name] = supervisor.variant_fault(culprit, exc)
        if isinstance(exc, NotPlainTensor):
            warmed.fouls[name] = [referee.subclass_finding(name, str(exc))]
        torch.cuda.synchronize()


def _seal(t: _Timed, inputs, written: dict, name: str) -> None:
    """After a call of `t`: if it changed its sealed inputs, note what and restore them before every call."""
    own = getattr(t.fn, "sealed_inputs", None)
    if inputs is None or own is None:
        return
    found = sealing.writes(inputs, own)
    if found:
        written[name] = found
        changed = {w.input for w in found}
        t.restore = lambda: sealing.restore(own, inputs, changed)
        t.restore()


def _capture_fault(name: str, exc: BaseException) -> str:
    """Why `name`'s capture failed. An op that synchronizes or copies to the host while captured invalidates
    the capture with a device error ("operation failed due to a previous error during capture"), yet the
    context survives it: the context is judged by whether it still synchronizes, and only one that does not
    is poisoned by `name` (supervisor.variant_fault)."""
    try:
        torch.cuda.synchronize()
    except BaseException:
        return supervisor.variant_fault(name, exc)
    return summarize(exc)


def _capture(timed: dict[str, list[_Timed]], failed: dict[str, str], demanded: bool, flush, baseline: str,
             where: str) -> str:
    """Capture every placement of every entry in a CUDA graph, each `alone` (a crash names it). If one cannot
    be captured: with graphs demanded it fails; otherwise (auto) every entry is timed eagerly, like with like.
    Returns the note."""
    broken = {}
    stream = torch.cuda.current_stream()
    for name, ts in list(timed.items()):
        try:
            with supervisor.alone(baseline if name == CONTROL else name, f"{where} graph capture"):
                for t in ts:
                    t.capture()
                    _one_call_ms(t, flush)
        except BaseException as exc:
            if not supervisor.is_variant_fault(exc):
                raise
            # torch.cuda.graph's __exit__ does not restore the stream when capture_end raises: left alone,
            # every later case of the process would run on the capture stream (and capture where it failed)
            torch.cuda.set_stream(stream)
            for t in ts:
                t.graph = None
            broken[name] = _capture_fault(baseline if name == CONTROL else name, exc)
    if not broken:
        return ""
    shown = ["A/A control" if n == CONTROL else n for n in broken]
    if demanded:
        for name, reason in broken.items():
            failed[name] = f"CUDA graph capture failed: {reason}"
            del timed[name]
        return ""
    cost = _eager_cost(timed, flush, where)
    for ts in timed.values():
        for t in ts:
            t.graph = None
    return (f"CUDA graph capture failed for {', '.join(shown)} ({next(iter(broken.values()))}); "
            "every variant of this case was timed from eager launches instead" + cost)


def _spread(samples: list[float]) -> float:
    """Half the p20-p80 range over the median: the relative spread of a variant's samples."""
    p20, p50, p80 = stats.quantiles(samples)
    return (p80 - p20) / 2 / p50 if p50 > 0 else 0.0


def _eager_cost(timed: dict[str, list[_Timed]], flush, where: str, calls: int = 20) -> str:
    """What timing eagerly costs the interval, measured on the entries whose graphs were captured: their
    samples' median and spread eager against replayed."""
    parts = []
    for name, ts in timed.items():
        t = ts[0]
        if name == CONTROL or t.graph is None:
            continue
        with supervisor.alone(name, f"{where} eager cost"):
            replayed = [_one_call_ms(t, flush) for _ in range(calls)]
            graph, t.graph = t.graph, None
            eager = [_one_call_ms(t, flush) for _ in range(calls)]
            t.graph = graph
        parts.append(f"{name}: eager median {stats.quantiles(eager)[1] * 1e3:.1f} us spread +/-{_spread(eager):.0%} "
                     f"against {stats.quantiles(replayed)[1] * 1e3:.1f} us +/-{_spread(replayed):.0%} from a graph")
    if not parts:
        return ("; each sample holds the host's launch overhead (for an op: Python, autograd and allocation), "
                "which widens the interval")
    return ("; each sample holds the host's launch overhead, which widens the interval: on "
            f"{calls} calls of those that could be captured, " + "; ".join(parts))


def _rounds(timed: dict[str, list[_Timed]], placements: int, config: TimingConfig, step, flush,
            shape_label: str, mode: str, drop=None) -> tuple[dict[str, list[list[float]]], float]:
    """Interleaved rounds: every entry's calls in a shuffled order, all on placement (round mod n). An
    entry whose call raises is `drop`ped (its samples too); the rounds go on without it."""
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
            try:
                t = timed[name][rounds % placements]
                events += [(name, *_bracketed(t, flush)) for _ in range(config.calls_per_round)]
            except BaseException as exc:
                if drop is None:
                    raise
                drop(name, exc)
        order = [n for n in order if n in timed]
        events = [e for e in events if e[0] in timed]
        for name in [n for n in samples if n not in timed]:
            del samples[name]
        torch.cuda.synchronize()
        per_round: dict[str, list[float]] = {name: [] for name in timed}
        for name, start, end in events:
            per_round[name].append(start.elapsed_time(end))
        for name, values in per_round.items():
            samples[name].append(values)
        rounds += 1
        if rounds % 10 == 0:
            step(f"timing {shape_label} {mode}: round {rounds}")
    return samples, time.perf_counter() - start_time
