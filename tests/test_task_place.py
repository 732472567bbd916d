"""A task needing a GPU of its own (a timing case, under --jobs or Dask) has its worker's copy bandwidth
measured before the request's variants are loaded (compare/processes/tasks.py), as a timing process does: a
variant's import may start work that slows copies, and the floor would then be another's, not the GPU's."""
import dataclasses

import pytest

from compare.comparison import timing_check
from compare.processes import tasks
from compare.processes.tasks import Task
from compare.runtime import backend, process_keep


@dataclasses.dataclass(frozen=True)
class _Ran:
    key: str


@pytest.mark.parametrize("gpu, order", [(True, ["place", "load", "run"]), (False, ["load", "run"])])
def test_a_gpu_task_measures_its_place_before_loading_the_variants(monkeypatch, gpu, order):
    done = []

    class Timed:
        name = "timing"

        def run(self, case, plan, backend, step):
            done.append("run")
            return _Ran("timed")

    def load(text):
        done.append("load")
        return type("Plan", (), {"runs": (Timed(),)})()
    monkeypatch.setattr(backend, "configure", lambda device, probe=False: backend.Backend("cuda", False, "a GPU"))
    monkeypatch.setattr(timing_check, "_measured_place", lambda: done.append("place") or "the place")
    monkeypatch.setattr(tasks, "_context", load)
    process_keep.release()
    try:
        assert tasks.execute(Task("timing float32 s forward", "timing", "{}", "cuda", gpu=gpu)) == {"key": "timed"}
    finally:
        process_keep.release()
    assert done == order
