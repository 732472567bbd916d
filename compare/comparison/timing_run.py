"""Which passes a comparison times (with no `--modes`: each pass whose compiled code differs, every pass
for ops; the others said, with why), and where: on a GPU each dtype in a worker process of its own that runs
timing cases only (compare/processes/tasks.py; a review's ops one after another), since a process that
ran other cases first can slow kernels leaning on L2 (up to 2.3x after torch's and inductor's float32 cases).
KERNEL_AB_TIMING_IN_PROCESS=1 times here instead.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import tempfile
from pathlib import Path

from compare.checks.check import CheckStopped, Findings
from compare.checks.task import LOAD, TIME, WORKER, Task, progress_of
from compare.comparison import timing_culprit
from compare.runtime import background, device_busy, run_context, supervisor
from compare.model.reruns import Blamed, Culprit, Ran, run_excluding
from compare.model.results import TimingSection, decode
from compare.model.task_answers import TaskAnswer, TaskState
from compare.model.skips import Skip
from compare.model import vocabulary
from compare.model import scratch
from compare.runtime.warm_worker import WarmWorker

IN_PROCESS_ENV = "KERNEL_AB_TIMING_IN_PROCESS"
CULPRITS_AT_MOST = 3   # a dtype is timed again without one variant that ended its process at most this often


def _code(family, variant, mode: str):
    """What compiled code a Triton variant's timed pass runs (the kernels, their launchers)."""
    if mode == "forward":
        return ("forward", id(family.forward_kernel_of(variant)), id(getattr(variant.run, "__code__", variant.run)))
    launch = family.backward_launch_of(variant)
    return ("backward", id(family.backward_kernel_of(variant)), id(getattr(launch, "__func__", launch)))


def plan_modes(family, chosen, asked: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[Skip, ...]]:
    """(passes to time, a Skip for each pass left out and why). `asked`: --modes, () for the plan."""
    if asked:
        return asked, ()
    if not family.grads:
        return ("forward",), (Skip("timing", f"family {family.name} has no backward pass", "backward, full"),)
    unknown = [v.name for v in chosen if v.kind != "triton"]
    if unknown or len(chosen) < 2:
        from variants.variant import MODES   # the family protocol's passes
        return MODES, ()
    differs = {m: len({_code(family, v, m) for v in chosen}) > 1 for m in ("forward", "backward")}
    modes = tuple(m for m in ("forward", "backward") if differs[m])
    left = [Skip("timing", f"every variant runs the same {m} kernel and launcher (identical code; --modes {m} "
                 "times it)", m, short=f"every variant runs the same {m} kernel and launcher")
            for m in ("forward", "backward") if not differs[m]]
    if all(differs.values()):
        modes += ("full",)
    else:
        apart = "the forward and the backward pass are timed apart where they differ"
        left.append(Skip("timing", f"{apart} (--modes full times both together)", "full", short=apart))
    return modes, tuple(left)


def in_fresh_processes(gpu: bool) -> bool:
    return gpu and os.environ.get(IN_PROCESS_ENV) != "1"


def worker_request(plan):
    """The request a worker process loads (a timing process, a task worker): the variants still compared, the --variant specs that load them, the
    planned timing (a worker plans the request again: compare.comparison.plan.build)."""
    names = tuple(v.name for v in plan.variants)
    specs = tuple(s for s in plan.request.loaded_specs if s.name in names)
    return dataclasses.replace(plan.request, variants=names, external=specs, loaded_specs=(), timing=plan.timing,
                               checks=plan.checks, left_out=())


def request_json(request) -> str:
    return json.dumps(dataclasses.asdict(request))


def request_from_json(text: str, request_type, config_type):
    """The Request `request_json` wrote (lists back to tuples, specs back to records: variants/spec.py)."""
    from variants.spec import of
    data = json.loads(text)
    tuples = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    for field in ("external", "loaded_specs"):
        tuples[field] = tuple(of(s) if isinstance(s, dict) else s for s in tuples.get(field, ()))
    timing = {k: tuple(v) if isinstance(v, list) else v for k, v in data["timing"].items()}
    return request_type(**{**tuples, "timing": config_type(**timing)})


@dataclasses.dataclass(frozen=True)
class AskedWorker:
    """A dtype's timing process handed one comparison's `request` (JSON) to load, as the task `key`."""

    dtype: str
    worker: WarmWorker
    key: str
    request: str


class TimingWorkers:
    """The timing processes of a sequence of comparisons (a review's ops): one per dtype, kept warm from one
    comparison to the next, so torch, Triton and the variants' libraries are imported once (10-20 s on an H200
    host where those have no cached bytecode); one that ended (a variant's crash) is replaced by the next
    comparison's. `starts`: how many processes were started."""

    def __init__(self, worker: Path = WORKER):
        self.tmp, self.worker = tempfile.TemporaryDirectory(prefix="kernel-ab-timing-", dir=scratch.folder()), worker
        self.by_dtype: dict[str, WarmWorker] = {}
        self.apart: list[WarmWorker] = []   # fresh processes that time one request without a culprit (`ask_apart`)
        self.asked = 0

    def _worker(self, name: str, env: dict | None = None) -> WarmWorker:
        own = {k: v for k, v in os.environ.items() if k not in (run_context.STATUS_ENV, run_context.TOKEN_ENV)}
        # in the user's folder, so relative --variant paths and --repo mean what they meant here
        return WarmWorker([sys.executable, str(self.worker), "--timing", repr(supervisor.limit_s())],
                          Path(self.tmp.name), name, {**own, **(env or {})})

    def ask(self, request, dtype: str) -> AskedWorker:
        """Hand `dtype`'s process one comparison's `request` to load (its timing waits for `TimingProcesses`)."""
        if dtype not in self.by_dtype:
            self.by_dtype[dtype] = self._worker(dtype)
        return self._ask(self.by_dtype[dtype], request, dtype)

    def ask_apart(self, request, dtype: str, excluding: str) -> AskedWorker:
        """Hand `request` to a fresh process of `dtype` whose run_context.EXCLUDED_ENV is `excluding`, for this
        request alone: the dtype's shared process, kept for later comparisons, excludes nothing."""
        self.apart.append(self._worker(f"{dtype}.apart{len(self.apart)}", {run_context.EXCLUDED_ENV: excluding}))
        return self._ask(self.apart[-1], request, dtype)

    def _ask(self, worker: WarmWorker, request, dtype: str) -> AskedWorker:
        self.asked += 1
        asked = AskedWorker(dtype, worker, f"timing {self.asked} {dtype}",
                            request_json(dataclasses.replace(request, dtype=dtype, checks=("timing",))))
        worker.send(dataclasses.asdict(Task(asked.key, LOAD, asked.request, "cuda", limit_s=supervisor.limit_s())))
        return asked

    @property
    def starts(self) -> int:
        return sum(w.starts for w in [*self.by_dtype.values(), *self.apart])

    def close(self) -> None:
        for w in [*self.by_dtype.values(), *self.apart]:
            w.close()
        self.tmp.cleanup()


@dataclasses.dataclass(frozen=True)
class Untimed:
    """Why a dtype's process timed nothing: `why`, and its exit code where it ended (None: it was stopped)."""

    why: str
    exit_code: int | None = None
    short: str = ""   # `why` without its detail: what a gate's line names


class TimingProcesses:
    """One comparison's timing in each dtype's process (`workers`, a review's, or its own), asked at the start
    to load (a LOAD task) so that loading overlaps the numerics. It times nothing until `run` sends its TIME
    task: one dtype at a time, after the numerics, so no two processes use the GPU at once. Until then it
    writes no status (a supervisor sees only the run's own launches); its loading is allowed the launch limit
    (--variant-timeout)."""

    def __init__(self, request, dtypes: tuple[str, ...], worker: Path = WORKER, workers: TimingWorkers | None = None):
        self.own = workers is None
        self.pool = TimingWorkers(worker) if workers is None else workers
        self.request = request
        self.workers = [self.pool.ask(request, dtype) for dtype in dtypes]
        self.timed: set[str] = set()   # the dtypes whose process timed its cases
        self.step = None                # where a process's progress is said while it times (`run`'s)

    def run(self, step) -> Findings:
        """Each dtype timed in turn: the merged section (None: none timed), a Skip for each dtype not timed. A
        stop (a signal, a review's budget) after a dtype was timed: CheckStopped with what was timed."""
        sections, failed, self.step = [], [], step
        step.new_pace()
        try:
            for w in self.workers:
                step(f"timing {w.dtype}: in a process of its own")
                found = self._dtype(w, sections[0].copy_gbs if sections else 0.0, step)
                failed += found.skipped
                if found.timing is not None:
                    sections.append(found.timing)
                    step.advance()
        except supervisor.Stopped as stop:
            if not sections:
                raise
            stopped = tuple(Skip("timing", f"not timed: {stop}", w.dtype, short="not timed: the run stopped")
                            for w in self.workers
                            if w.dtype not in self.timed and not any(s.part == w.dtype for s in failed))
            raise CheckStopped(Findings(timing=merged(sections), skipped=tuple(failed) + stopped), stop) from None
        return Findings(timing=merged(sections), skipped=tuple(failed))

    def _dtype(self, w: AskedWorker, copy_gbs: float, step) -> Findings:
        """`w`'s dtype timed: its section, else a Skip saying why not. A process that ended while one variant ran
        alone is started afresh without it (timing_culprit), at most CULPRITS_AT_MOST times; the section then
        says each such variant was not timed, and why. One that ended while several ran together: each variant
        is timed apart with the baseline (timing_culprit: timed apart)."""
        baseline = self.request.variants[0] if self.request.variants else ""
        together: list = []   # the launch of several variants the last process ended in, if it did

        def attempt(culprits: tuple[Culprit, ...]) -> Ran[Findings] | Blamed[Findings, Culprit]:
            asked = w
            if culprits:
                step(f"timing {w.dtype}: {culprits[-1].name} ended its process; again without it")
                asked = self.pool.ask_apart(self.request, w.dtype, timing_culprit.excluding(list(culprits)))
            section, untimed, launch = self._timed_or_why(asked, copy_gbs)
            if untimed is None:
                return Ran(Findings(timing=timing_culprit.with_culprits(section, list(culprits),
                                                                         self.request.variants)))
            why = timing_culprit.not_timed_why(untimed.why, launch, baseline, list(culprits))
            skip = Findings(skipped=(Skip("timing", why, w.dtype, short=untimed.short),))
            together[:] = [launch] if launch is not None and len(launch.names) > 1 else []
            culprit = timing_culprit.blamed(launch, untimed.exit_code, w.dtype, baseline)
            return Ran(skip) if culprit is None else Blamed(culprit, culprit.name, skip)
        reruns = run_excluding(attempt, CULPRITS_AT_MOST)
        each = timing_culprit.suspects(self.request.variants, baseline, reruns.culprits)
        if reruns.result.timing is None and together and len(each) > 1:
            return self._apart(w, copy_gbs, step, each, reruns.culprits, reruns.result)
        return reruns.result

    def _timed_or_why(self, asked: AskedWorker, copy_gbs: float):
        """`asked` timed: (its section, None, None), else (None, why not, the launch its process ended in)."""
        mark = supervisor.status_mark()
        section, untimed = self._time(asked, copy_gbs)
        if asked.worker in self.pool.apart:   # timed one request without its culprits: never used again
            asked.worker.close()
        if untimed is None:
            return section, None, None
        launch = supervisor.last_launch(mark) if untimed.exit_code is not None else None
        if launch is not None:
            supervisor.none_running()   # the launch it said it ran ended with it
            _tampered(launch, untimed.exit_code, asked.dtype)
        return None, untimed, launch

    def _apart(self, w: AskedWorker, copy_gbs: float, step, each: tuple[str, ...], culprits: tuple[Culprit, ...],
               together: Findings) -> Findings:
        """Each of `each` timed with the baseline in a fresh process of its own (compare.comparison.timing_culprit);
        a pair whose process ends too leaves its variant out, saying why. None timed: `together`, as it was."""
        pairs, failed = {}, list(culprits)
        for name in each:
            step(f"timing {w.dtype}: its process ended while several variants ran; {name} apart")
            asked = self.pool.ask_apart(self.request, w.dtype, timing_culprit.excluding(
                list(culprits) + timing_culprit.others(each, name)))
            section, untimed, launch = self._timed_or_why(asked, copy_gbs)
            if untimed is None:
                pairs[name] = section
                continue
            said = timing_culprit.not_timed_why(untimed.why, launch, "", [])
            failed.append(Culprit(name, f"ended the process that timed it apart with the baseline: {said}"))
        if not pairs:
            return together
        ended = together.skipped[0].why if together.skipped else "its process ended"
        note = f"each variant timed apart with the baseline, in a process of its own: {ended}"
        section = timing_culprit.merged_apart(pairs, self.request.variants, note)
        gone = [c for c in failed if c.name in each]
        section = timing_culprit.without(section, [c.name for c in gone], self.request.variants)
        return Findings(timing=timing_culprit.with_culprits(section, failed, self.request.variants))

    def _time(self, w: AskedWorker, copy_gbs: float) -> tuple[TimingSection | None, Untimed | None]:
        """(`w`'s timing section, None), else (None, why not). `copy_gbs`: the copy bandwidth an earlier
        process measured on this GPU (0: its own)."""
        worker = w.worker
        said = worker.word(supervisor.limit_s())
        if said == "":
            worker.kill()
            late = f"its process had not loaded the variants after {supervisor.limit_s():g} s"
            return None, Untimed(f"{late} (--variant-timeout)", short=late)
        if _answered(said) is not None:
            # none of this process's calls in flight: busy now, the GPU is kept so by a thread or process this
            # process runs (a variant's import here started it), and no timing process would time without it
            device_busy.check(self.request.variants, f"timing {w.dtype}: before its process times")
            channel = run_context.channel()
            worker.tell(dataclasses.asdict(Task(w.key, TIME, w.request, "cuda", limit_s=supervisor.limit_s(),
                                                status=channel.status, token=channel.token, copy_gbs=copy_gbs)))
            timed = _answered(self._relayed(w))
            if timed is not None:
                self.timed.add(w.dtype)
                return decode(TimingSection, timed), None
        end = worker.failure()
        ended = f"its process ended with exit code {end.exit_code}"
        return None, Untimed(f"{ended} ({end.last_line})", end.exit_code, ended)

    def _relayed(self, w: AskedWorker) -> str | None:
        """`w`'s next word that is no progress line; each progress line before it said (its dtype first)."""
        while (said := w.worker.word()) is not None:
            if (text := progress_of(said)) is None:
                return said
            if self.step is not None:
                self.step(f"timing {w.dtype}: {text.removeprefix('timing ')}")
        return None

    def close(self) -> None:
        """Ends the processes asked and not done (the run stopped, or failed: they are replaced for the next
        comparison), and those started afresh without a culprit; its own processes all."""
        for w in self.workers:
            if w.dtype not in self.timed:
                w.worker.kill()
        for worker in self.pool.apart:
            worker.kill()
        if self.own:
            self.pool.close()


def _tampered(launch, exit_code: int, dtype: str) -> None:
    """A timing process ended while one variant ran alone (`launch`, its record) that tampered, as in the run's own
    process: it kept the GPU busy from a thread or process running here too (no process of this run times without
    it), or it sent the stop signal that came to no other process of the run. This process ends so (supervisor.
    tampered), and the supervisor runs the comparison again without it."""
    if len(launch.names) != 1:
        return
    if launch.failure == supervisor.BUSY and background.starters(launch.names):
        supervisor.tampered(launch.names, f"{launch.error}; its thread or process started here runs on", launch.what)
    if sent := supervisor.own_stop(exit_code):
        supervisor.tampered(launch.names, f"sent the process that timed {dtype} {sent}", launch.what)


def merged(sections: list[TimingSection]) -> TimingSection | None:
    """One section holding every dtype's cases (each timed by a process of its own)."""
    if not sections:
        return None
    first = sections[0]
    method = first.method + "; each dtype timed in a process of its own that runs timing cases only"
    return dataclasses.replace(first, method=method, cases=tuple(c for s in sections for c in s.cases),
                               compile_seconds=tuple(x for s in sections for x in s.compile_seconds))


def _answered(said: str | None) -> dict | None:
    """The result a timing process answered its task with; None where it ended first (it answers nothing else:
    its own failure ends it, as the run's would)."""
    try:
        answer = TaskAnswer.from_json(said) if said else None
    except (ValueError, TypeError, KeyError):   # not an answer: what the process wrote there is no result
        return None
    return answer.result if answer is not None and answer.state is TaskState.OK else None


def run_timing(plan, step, copy_gbs: float = 0.0) -> TimingSection:
    """Every (dtype, shape, mode) case of the plan (compare.comparison.plan.Plan), timed on the GPU in this process
    (`copy_gbs`: the copy bandwidth measured already, 0 to measure it here)."""
    import torch
    from compare.checks import audit, harness, timing
    family, chosen, preset, request, config = plan.family, plan.variants, plan.preset, plan.request, plan.timing
    if not copy_gbs:
        step("timing: measuring device-to-device copy bandwidth")
        copy_gbs = timing.copy_bandwidth_gbs()
    cases = []
    step.new_pace()
    for dtype in plan.dtypes:
        dtype_name = vocabulary.dtype_name(dtype)
        for shape in preset.shapes:
            inputs = family.make_inputs(shape, dtype, "cuda", request.seed, request.input_kind)
            unseen = audit.draw_unseen(family, shape, inputs)   # the audit's inputs (drawn once: a draw is slow)
            for mode in config.modes:
                what = f"timing {shape.label} {mode} {dtype_name}"
                # each variant's checked run comes before any timed call (compare/checks/audit.py)
                checked = audit.Checked(family, {v.name: v for v in chosen}, inputs, shape, mode, unseen)
                checked.run_checked()
                with supervisor.running(tuple(v.name for v in chosen), what, launches=len(chosen) + 1,
                                        extra_s=config.max_seconds):
                    calls, control = timing.case_calls(functools.partial(harness.bench_call, family), chosen, inputs,
                                                       shape, mode, config.placements)
                    cases.append(timing.time_case(calls, family.bytes_moved(shape, dtype, mode), copy_gbs,
                                                  shape.label, mode, config, step, dtype=dtype_name, control=control,
                                                  inputs=inputs, checked=checked))
                del calls, control, checked
                step.advance()
            del inputs, unseen
            torch.cuda.empty_cache()
    compile_seconds = tuple((v.name, float(v.run.compile_seconds)) for v in chosen
                            if getattr(v.run, "compile_seconds", None) is not None)
    return TimingSection(torch.cuda.get_device_name(), copy_gbs, config.noise, vocabulary.CONFIDENCE, timing.method_text(config),
                         tuple(cases), compile_seconds)
