"""A comparison split into independent tasks, and what a worker process does with one: a numerics task is one
(direction, dtype, input kind, shape) case with every variant; a timing task one (dtype, shape, pass) case
with every variant and the A/A control, on one GPU; an IR task one variant's own kernels (with ops: the
whole IR). Each carries the request as JSON and answers with its result's JSON form, merged into the one
report a single process makes (distributed.py)."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os

from compare.comparison import timing_run
from compare.model.results import to_dict


@dataclasses.dataclass(frozen=True)
class Task:
    key: str                  # unique in a run, e.g. "numerics forward float32 normal 16,64,8,4x4"
    kind: str                 # "numerics", "timing" or "ir"
    request: str              # the worker's request as JSON (compare.comparison.timing_run.request_json)
    device: str               # "cuda" or "cpu": the coordinator's backend, which every worker must have
    case: tuple = ()          # numerics: (direction, dtype, input kind, shape index, seeds); timing: (dtype, shape index, mode)
    limit_s: float = 300.0    # one launch at most this long (--variant-timeout)
    threads: int = 0          # torch's CPU threads where the run started, and its thread settings (THREAD_ENV):
    env: tuple = ()           # CPU reductions (torch's backward) sum in an order that depends on them, and Dask
                              # starts its workers with OMP_NUM_THREADS=1


    @property
    def gpu(self) -> bool:
        """Whether the task needs a GPU of its own (timing: never two at once on one GPU)."""
        return self.kind == "timing"

    @property
    def fresh(self) -> tuple:
        """Tasks with another value here never share a worker process (each dtype is timed in a fresh one)."""
        return (f"timing {self.case[0]}" if self.kind == "timing" else "cases", self.env)

    def as_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Task":
        data = json.loads(text)
        return cls(**{**data, "case": _tuples(data["case"]), "env": _tuples(data["env"])})


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def plan_tasks(plan, backend) -> list[Task]:
    """Every task of the comparison, numerics first (in the report's order), then the IR, then timing."""
    import torch
    from compare.runtime import supervisor
    from compare.comparison.pipeline import numerics_plan
    text = timing_run.request_json(timing_run.worker_request(plan))
    limit, threads = supervisor.limit_s(), torch.get_num_threads()
    env = tuple((k, os.environ.get(k, "")) for k in THREAD_ENV)
    index = {s.label: i for i, s in enumerate(plan.preset.shapes)}
    tasks = []
    for direction, dtype, kind, shape, seeds in numerics_plan(plan):
        name = str(dtype).removeprefix("torch.")
        tasks.append(Task(f"numerics {direction} {name} {kind} {shape.label}", "numerics", text, backend.device,
                          (direction, name, kind, index[shape.label], tuple(seeds)), limit, threads, env))
    if "ir" in plan.checks and any(v.kind == "op" for v in plan.variants):   # ops are run to find their kernels
        tasks.append(Task("ir", "ir", text, backend.device, (), limit, threads, env))
    elif "ir" in plan.checks:   # each variant's own kernels compiled apart; summaries and diffs where the run started
        tasks += [Task(f"ir compile {v.name}", "ir", text, backend.device, (v.name,), limit, threads, env)
                  for v in plan.variants if v.kind == "triton" and v.own_kernels]
    if "timing" in plan.checks and backend.gpu:
        for name in plan.dtype_names:
            for i, shape in enumerate(plan.preset.shapes):
                for mode in plan.timing.modes:
                    tasks.append(Task(f"timing {name} {shape.label} {mode}", "timing", text, backend.device,
                                      (name, i, mode), limit, threads, env))
    return tasks


# ---------------------------------------------------------------- in the worker
_LOADED: dict = {}          # request JSON -> what `_context` loaded (kept for the worker's life)
_STACK = contextlib.ExitStack()
_PLACE: dict = {}           # this worker's GPU: name, UUID, copy bandwidth (measured once)


def _context(text: str):
    """The plan of a task's request, its variants loaded (once per worker)."""
    if text not in _LOADED:
        from compare.comparison import pipeline, plan
        from compare.runtime import supervisor
        from compare.checks.timing import TimingConfig
        from variants import registry
        request = timing_run.request_from_json(text, plan.Request, TimingConfig)
        _LOADED[text], _ = _STACK.enter_context(pipeline.planned(request, registry(), excluded=supervisor.excluded()))
    return _LOADED[text]


def close() -> None:
    """Unload what `_context` loaded (the --variant trees materialized for it are removed)."""
    _LOADED.clear()
    _STACK.close()


def place() -> dict:
    """Where timing runs in this worker: the GPU's name and UUID and its measured copy bandwidth."""
    if not _PLACE:
        import torch
        from compare.checks import timing
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        _PLACE.update(gpu=torch.cuda.get_device_name(), uuid=f"GPU-{props.uuid}" if getattr(props, "uuid", None)
                      else "", copy_gbs=timing.copy_bandwidth_gbs(nbytes=1 << 28))
    return dict(_PLACE)


def execute(task: Task) -> dict:
    """The task's result in JSON form: {"case": ...} (numerics, timing), {"ir": [...], "skipped": [...]}."""
    from compare.checks import numerics
    from compare.comparison import pipeline
    from compare.runtime.backend import configure
    from compare.runtime import supervisor
    supervisor.set_limit(task.limit_s)
    if task.threads:
        import torch
        torch.set_num_threads(task.threads)
    backend = configure(task.device)
    plan = _context(task.request)
    if task.kind == "numerics":
        direction, dtype, kind, shape, seeds = task.case
        variants, _, reference = pipeline.numerics_variants(plan)
        case = numerics.run_case(plan.family, variants, plan.preset.shapes[shape], plan.family.dtypes[dtype], backend,
                                 seeds, kind, pipeline.Step(), direction, reference)
        return {"case": to_dict(case)}
    if task.kind == "ir" and task.case:
        return {"compiled": compile_variant(plan, task.case[0], backend)}
    if task.kind == "ir":
        sections, skipped = pipeline._ir(plan, backend, pipeline.Step())
        return {"ir": [to_dict(s) if s is not None else None for s in sections], "skipped": [to_dict(s) for s in skipped]}
    dtype, shape, mode = task.case
    where = place()
    one = dataclasses.replace(plan, preset=dataclasses.replace(plan.preset, shapes=(plan.preset.shapes[shape],)),
                              dtypes=(plan.family.dtypes[dtype],), timing=dataclasses.replace(plan.timing, modes=(mode,)))
    section = timing_run.run_timing(one, pipeline.Step(), copy_gbs=where["copy_gbs"])
    ran_on = f"{where['gpu']} {where['uuid']}".strip() + f", copy {where['copy_gbs']:.0f} GB/s"
    case = dataclasses.replace(section.cases[0], ran_on=ran_on)
    return {"case": to_dict(case), "gpu": section.gpu, "method": section.method,
            "compile_seconds": [list(x) for x in section.compile_seconds], "place": where}


def _entries(plan, name: str) -> list[tuple[str, tuple]]:
    """(pass, the compile entry) of each kernel variant `name` brings itself (compare.checks.ir._entry)."""
    from compare.checks import ir
    variant = next(v for v in plan.variants if v.name == name)
    entries = [(role, ir._entry(plan.family, variant, role)) for role in ("forward", "backward")
               if role in variant.own_kernels and (role == "forward" or plan.family.grads)]
    return [(role, e) for role, e in entries if isinstance(e, tuple)]


def compile_variant(plan, name: str, backend) -> list:
    """In the worker: [pass, Compiled as a dict] of the kernels variant `name` brings, as the IR compiles them."""
    from compare.checks.ir.compile import CompileCache
    entries = _entries(plan, name)
    try:
        done = CompileCache().compile_passes(plan.family, [(role, [e]) for role, e in entries], plan.preset.shapes[0],
                                             plan.dtype_names[0], plan.request.target, launched=backend.gpu)
    except Exception:  # noqa: BLE001 - nothing compiled here: the run compiles it again and says the error as it does
        return []
    return [[role, dataclasses.asdict(c[0])] for (role, _), c in zip(entries, done)]


def compiled_cache(plan, answers: list[list], backend):
    """Where the run started: a CompileCache holding what the workers compiled (compare.comparison.pipeline._ir reads it)."""
    from compare.checks.ir.compile import CompileCache, Compiled
    cache = CompileCache()
    for name, compiled in answers:
        entries = dict(_entries(plan, name))
        for role, c in compiled:
            cache.add(plan.family, entries[role], plan.preset.shapes[0], plan.dtype_names[0], plan.request.target,
                      backend.gpu, role, Compiled(**c))
    return cache
