"""The timed calls audited after a case's rounds, with calls made exactly as the timed ones: on fresh inputs
written into the tensors it was timed on (their outputs against its checked run; their times against its
rounds'), with threads watched, with a device-wide synchronisation, and against the roofline. What each
catches: docs/threat-model.md ("What a variant cannot fake in a call")."""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, Optional

from compare.model.fouls import Finding, Foul
from compare.runtime import supervisor

FRESH_CALLS = 5           # calls on fresh inputs per entry
SLOWER_FACTOR = 1.5       # every one of them beyond this times the median on its timed inputs, and
SLOWER_FLOOR_MS = 0.005   # ... beyond it by at least this much: FRESH_SLOWER
STREAM_PROBES = 5
OFF_STREAM_FLOOR_MS = 0.02   # past the timed stream, beyond an empty call's, at least this much, and
OFF_STREAM_FRACTION = 0.25   # ... at least this fraction of the call's own time: OFF_STREAM


@dataclasses.dataclass(frozen=True)
class Tools:
    """What the audit times with, handed over by compare/checks/timing.py (so a simulated device is the
    audit's too): torch, `call_ms(fn, flush)` (one call bracketed like a timed one) and `flush_l2(buffer)`."""

    torch: Any
    call_ms: Callable[[Callable[[], None], Any], float]
    flush_l2: Callable[[Any], None]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def _paired_calls(name: str, t, checked, flush, tools: Tools, judge: bool = True):
    """FRESH_CALLS calls of `t` on fresh inputs, each after one on the inputs it was timed on (put back first),
    each call timed alone: (the timed inputs' times, the fresh ones', the fouls their threads and outputs
    show). Alternated, and judged only after the last call, so that both kinds run on a GPU in one state: the
    H200 ran fresh calls 8 times slower than timed ones when each was judged (host work, an idle GPU) in
    between. `judge` False: fresh outputs are neither poisoned nor judged."""
    own = getattr(t.fn, "sealed_inputs", None)
    outputs_of = getattr(t.fn, "timed_outputs", None)
    judged = judge and checked is not None and own is not None and outputs_of is not None
    timed_inputs = checked.snapshot(own) if judged else None
    same, times, found, made = [], [], [], []
    for k in range(FRESH_CALLS):
        if judged:
            checked.put_back(own, timed_inputs)
        t.prepare()
        same.append(tools.call_ms(lambda: t(), flush))
        tools.torch.cuda.synchronize()
        if judged:
            checked.poison(outputs_of(t.graph is not None))
        t.prepare()
        fresh = checked.fresh(name, own, k) if judged else None
        before = set(threading.enumerate())
        times.append(tools.call_ms(lambda: t(), flush))   # no restore: the inputs as set above
        left = [th for th in threading.enumerate() if th not in before and th.is_alive()]
        if left and not any(f.foul == Foul.THREAD for f in found):
            found.append(Finding(name, Foul.THREAD, f"thread {left[0].name!r}, after a call of {times[-1]:.3g} ms"))
        tools.torch.cuda.synchronize()
        if judged:
            made.append((fresh, checked.kept(outputs_of(t.graph is not None))))
    if judged:
        checked.put_back(own, timed_inputs)
    for fresh, outputs in made:
        if not any(f.foul in (Foul.TIMED_MISMATCH, Foul.SUBCLASS) for f in found):
            found += checked.judge(name, fresh, outputs)
    return same, times, found


def _off_stream(name: str, t, flush, tools: Tools) -> list[Finding]:
    """Calls timed to the end of the timed stream and again to a device-wide synchronisation: the median
    time past the stream's end, less an empty call's, says how much work ran elsewhere."""
    torch = tools.torch

    def probe(fn) -> tuple[float, float]:
        if hasattr(fn, "prepare"):
            fn.prepare()
        tools.flush_l2(flush)
        torch.cuda.synchronize()
        start, end, after = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        after.record()
        after.synchronize()
        return start.elapsed_time(end), start.elapsed_time(after)
    def past_and_timed() -> tuple[float, float]:
        own = [probe(t) for _ in range(STREAM_PROBES)]
        empty = [probe(lambda: None) for _ in range(STREAM_PROBES)]
        return _median([d - e for e, d in own]) - _median([d - e for e, d in empty]), _median([e for e, _ in own])

    # a suspicion is probed again and stands only if it holds twice: work hidden on another stream is there
    # in every call, while the host's wake-up after a wait is late now and then (the H200 once showed 24 us
    # past an honest graph replay of 68 us, one of 28 audited pairs)
    found = []
    for _ in range(2):
        past, timed = past_and_timed()
        if past <= max(OFF_STREAM_FLOOR_MS, OFF_STREAM_FRACTION * timed):
            return []
        found.append((past, timed))
    past, timed = min(found)
    return [Finding(name, Foul.OFF_STREAM, f"{past:.3g} ms past the timed stream's end against a timed "
                                           f"{timed:.3g} ms")]


# A copy reads as many bytes as it writes; a kernel that reads more than it writes can beat it by a few
# percent (on the H200 a forward reading twice what it writes moved 4.34 TB/s against a measured copy of 4.2).
# The floor allows a quarter more than the copy: on the H200 that is 5.25 TB/s, above its HBM's 4.8 TB/s
# peak, so what is still under the floor no memory system moved.
COPY_HEADROOM = 1.25


def beyond_copy(name: str, median_ms: float, bytes_moved: int, copy_gbs: float) -> list[Finding]:
    """BEYOND_COPY when `median_ms` is under `bytes_moved` at COPY_HEADROOM times `copy_gbs` (nothing is
    judged without either)."""
    if not (bytes_moved > 0 and copy_gbs > 0 and median_ms >= 0):
        return []
    floor_ms = bytes_moved / (copy_gbs * COPY_HEADROOM * 1e9) * 1e3
    if median_ms >= floor_ms:
        return []
    rate = f"{bytes_moved / median_ms / 1e9:.3g} TB/s" if median_ms > 0 else "no time"
    return [Finding(name, Foul.BEYOND_COPY, f"{median_ms:.3g} ms for {_size(bytes_moved)}, "
                                            f"{rate} against a copy's "
                                            f"{copy_gbs / 1e3:.2g} TB/s (at least {floor_ms:.3g} ms, with "
                                            f"{COPY_HEADROOM - 1:.0%} headroom)")]


def _size(n: int) -> str:
    return f"{n / 1e9:.3g} GB" if n >= 1e8 else f"{n / 1e6:.3g} MB" if n >= 1e5 else f"{n} bytes"


@dataclasses.dataclass(frozen=True)
class Audited:
    """What the audit found: entry -> its fouls; entry -> how its audited calls crashed (it has no timing)."""

    fouls: dict
    crashed: dict


def audit_case(timed: dict, samples: dict, checked: Optional["Checked"], flush, bytes_moved: int, copy_gbs: float,
               tools: Tools, skip: tuple[str, ...] = (), unjudged: tuple[str, ...] = (),
               where: str = "timing") -> Audited:
    """Every timed entry but `skip` (the A/A control) audited (see the module docstring), each `alone` (a crash
    names it); `unjudged`: entries whose outputs on fresh inputs are not judged (their state between calls is
    not their own; see time_case)."""
    found: dict[str, list[Finding]] = {}
    crashed: dict[str, str] = {}
    for name, ts in timed.items():
        if name in skip:
            continue
        try:
            with supervisor.alone(name, f"{where} audit"):
                fouls = _entry_fouls(name, ts[0], samples, checked, flush, bytes_moved, copy_gbs, tools,
                                     name not in unjudged)
        except BaseException as exc:   # the variant's own crash in a call like its timed ones: reported
            crashed[name] = f"crashed in the audit's calls: {supervisor.variant_fault(name, exc)}"
            tools.torch.cuda.synchronize()
            continue
        if fouls:
            found[name] = fouls
    return Audited(found, crashed)


def _entry_fouls(name: str, t, samples: dict, checked, flush, bytes_moved: int, copy_gbs: float, tools: Tools,
                 judge: bool) -> list[Finding]:
    rounds = _median([s for r in samples.get(name, ()) for s in r])
    # the yardstick is calls on the timed inputs measured as the fresh ones are (one call at a time, alternated
    # with them): the rounds may be replayed from a CUDA graph, whose calls carry no launch cost
    same_times, times, fouls = _paired_calls(name, t, checked, flush, tools, judge)
    # every fresh call slower, not their median: an answer looked up by its inputs is slow on each fresh one,
    # while an honest op's calls vary (an A/A of Liger's cross entropy on the H200 had 3 of 5 at 1.6x)
    same, fresh = _median(same_times), min(times, default=0.0)
    if fresh > SLOWER_FACTOR * same and fresh - same > SLOWER_FLOOR_MS:
        fouls.append(Finding(name, Foul.FRESH_SLOWER, f"at least {fresh:.3g} ms on fresh inputs against {same:.3g} "
                                                      "ms on its timed inputs, each call timed alone"))
    fouls += _off_stream(name, t, flush, tools)
    return fouls + beyond_copy(name, rounds, bytes_moved, copy_gbs)


from compare.checks.audit_checked import Checked, draw_unseen  # noqa: E402,F401 (the family's side, re-exported)
