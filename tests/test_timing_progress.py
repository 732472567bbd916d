"""A timing process's progress reaches the run's (compare/processes/task_worker.py's Relay, read back by
compare.comparison.timing_run.TimingProcesses): a line at most once a second on its answer pipe, each said
with its dtype while the dtype is timed, and none taken for the task's answer."""
import io
import json

from compare.comparison import plan, timing_run
from compare.processes.task_worker import Relay
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
