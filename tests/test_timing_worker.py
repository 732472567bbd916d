"""The timing worker (compare/processes/tasks.py) serves a review's ops one after another: it loads each
op's variants, waits for its go, times and answers, with each revision of the reviewed library imported once
for all of them. Here on the CPU: the worker itself, with the GPU's timing replaced by a stand-in that answers
with the variants it was handed planned."""
from __future__ import annotations

from pathlib import Path

from compare.comparison import plan, timing_run
from compare.runtime import run_context, supervisor
from compare.runtime.progress import Step
from tests import warm_library

_WORKER = '''
import sys
sys.path.insert(0, {root!r})
from compare.comparison import timing_run
from compare.model.results import TimingSection
from compare.runtime import backend
on_cpu = backend.configure
backend.configure = lambda device, probe=False: on_cpu("cpu")   # no GPU here: the variants load for Triton's interpreter


def stand_in(planned, step, copy_gbs=0.0):   # the variants planned, in place of their timing on a GPU
    return TimingSection(",".join(v.name for v in planned.variants), copy_gbs or 1.0, 0.01, 0.95, "m", ())


timing_run.run_timing = stand_in
from compare.processes import task_worker
sys.exit(task_worker.main(*sys.argv[1:]))
'''


def test_the_timing_worker_imports_each_revision_once_for_every_op_it_times(tmp_path, monkeypatch):
    log = tmp_path / "imports.log"
    repo = warm_library.make(tmp_path, log)
    worker = tmp_path / "worker.py"
    worker.write_text(_WORKER.format(root=str(Path(timing_run.__file__).resolve().parents[2])))
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(tmp_path / "status"), "token": None})
    monkeypatch.setattr(supervisor, "_LIMIT", [120.0])
    workers = timing_run.TimingWorkers(worker)
    timed = []
    try:
        for op in ("norm_three", "norm_two", "norm_one"):
            specs = tuple(f"{op}.{side}=git:{rev}:normlib/norms.py::{op}" for side, rev in (("base", "v1"), ("head", "v2")))
            request = plan.Request(family="rms_norm", shape="4,64", repo=str(repo), external=specs)
            processes = timing_run.TimingProcesses(request, ("float32",), workers=workers)
            try:
                found = processes.run(Step())
            finally:
                processes.close()
            assert found.skipped == ()
            timed.append(found.timing.gpu)
        assert workers.starts == 1 and all(w.alive() for w in workers.by_dtype.values())
    finally:
        workers.close()
    assert timed == [f"{op}.base,{op}.head" for op in ("norm_three", "norm_two", "norm_one")]
    [folders] = warm_library.imports(log).values()   # one process, which imported v1 and v2 once each
    assert len(folders) == 2 and len(set(folders)) == 2
    assert not any(w.alive() for w in workers.by_dtype.values())


def test_a_timing_process_plans_without_the_variants_its_environment_excludes(tmp_path, monkeypatch):
    import json
    worker = tmp_path / "worker.py"
    worker.write_text(_WORKER.format(root=str(Path(timing_run.__file__).resolve().parents[2])))
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(tmp_path / "status"), "token": None})
    monkeypatch.setattr(supervisor, "_LIMIT", [120.0])
    # as a fresh process timing a dtype again without a registry variant that ended the first (timing_run)
    monkeypatch.setenv(run_context.EXCLUDED_ENV, json.dumps([["explicit_offset", "crashed the process", ""]]))
    request = plan.Request(variants=("pointer_mutation", "explicit_offset", "single_read_coop"), family="group_norm",
                           shape="2,8,2,16")
    processes = timing_run.TimingProcesses(request, ("float32",), worker)
    try:
        found = processes.run(Step())
    finally:
        processes.close()
    assert found.skipped == () and found.timing.gpu == "pointer_mutation,single_read_coop"
