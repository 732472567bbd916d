"""A timing process's progress reaches the run's (compare/processes/tasks.py's Relay, read back by
compare.comparison.timing_run.TimingProcesses): a line at most once a second on its answer pipe, each said
with its dtype while the dtype is timed, and none taken for the task's answer."""
import io
import json

from compare.comparison import plan, timing_run
from compare.processes.tasks import Relay
from compare.runtime.progress import Step
from tests.test_timing_run import _fake


class Said(Step):
    def __init__(self):
        self.texts = []

    def __call__(self, text: str) -> None:
        self.texts.append(text)


def test_a_timing_process_relays_its_progress_at_most_once_a_second(monkeypatch):
    out, clock = io.StringIO(), iter([10.0, 10.0, 10.4, 11.2, 11.2])
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    relay = Relay(out)
    for text in ("timing s forward: warm-up a", "timing s forward: round 1", "timing s forward: round 2"):
        relay(text)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"progress": "timing s forward: warm-up a"}, {"progress": "timing s forward: round 2"}]


def test_the_progress_of_each_dtypes_process_is_said_with_its_dtype(tmp_path, monkeypatch):
    worker, _ = _fake(tmp_path, monkeypatch, "ok")
    said = Said()
    processes = timing_run.TimingProcesses(plan.Request(variants=("a", "b")), ("float32", "bfloat16"), worker)
    try:
        found = processes.run(said)
    finally:
        processes.close()
    assert found.skipped == () and [c.dtype for c in found.timing.cases] == ["float32", "bfloat16"]
    assert said.texts == ["timing float32: in a process of its own", "timing float32: s forward: round 3",
                          "timing bfloat16: in a process of its own", "timing bfloat16: s forward: round 3"]


_WORKER = '''
import sys
sys.path.insert(0, {root!r})
from compare.comparison import timing_run
from compare.model.results import TimingSection
from compare.runtime import backend
on_cpu = backend.configure
backend.configure = lambda device, probe=False: on_cpu("cpu")   # no GPU here: the variants load for the interpreter


def stand_in(planned, step, copy_gbs=0.0):   # says its rounds as timing_run.run_timing does, in place of timing
    step("timing 2,8,2,16 forward: round 10")
    step("timing 2,8,2,16 forward: round 20")   # within the second: not relayed
    return TimingSection(",".join(v.name for v in planned.variants), copy_gbs or 1.0, 0.01, 0.95, "m", ())


timing_run.run_timing = stand_in
from compare.processes import task_worker
sys.exit(task_worker.main(*sys.argv[1:]))
'''


def test_the_task_worker_relays_what_the_timing_run_says(tmp_path, monkeypatch):
    from pathlib import Path
    from compare.runtime import run_context, supervisor
    worker = tmp_path / "worker.py"
    worker.write_text(_WORKER.format(root=str(Path(timing_run.__file__).resolve().parents[2])))
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(tmp_path / "status"), "token": None})
    monkeypatch.setattr(supervisor, "_LIMIT", [120.0])
    request = plan.Request(variants=("pointer_mutation", "explicit_offset"), family="group_norm", shape="2,8,2,16")
    said = Said()
    processes = timing_run.TimingProcesses(request, ("float32",), worker)
    try:
        found = processes.run(said)
    finally:
        processes.close()
    assert found.skipped == () and found.timing.gpu == "pointer_mutation,explicit_offset"
    assert said.texts == ["timing float32: in a process of its own", "timing float32: 2,8,2,16 forward: round 10"]
