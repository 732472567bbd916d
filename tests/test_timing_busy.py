"""Background work is the act of the variant that leaves it (compare/runtime/device_busy.py), on the simulated
device (tests/simulated_device.py): a variant whose import starts a thread that keeps launching work, or whose
calls leave work in flight, is named "keeps the GPU busy between its calls" and its process ends; the dtype is
timed again without it (compare/comparison/timing_culprit.py) and the others' verdicts are those of a run that
never had it. The copy bandwidth is measured before any variant is imported (compare/processes/tasks.py)."""
import pytest

from compare.comparison import timing_culprit
from compare.model.states import Failure, TimingStatus
from compare.runtime import background, device_busy, run_context, supervisor
from tests.exploits_timed import Clocked, audited_case, honest_op, SHAPES
from tests.simulated_device import clock, keeps_launching  # noqa: F401 (the fixture)
from variants import registry
from variants.ops import op_variant
from variants.spec import CallMap

FAMILY = "group_norm"


@pytest.fixture
def channel(tmp_path, monkeypatch):
    """The run's status file, as a supervisor gave it; no thread noted from other tests."""
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(tmp_path / "status"), "token": "the-token"})
    monkeypatch.setattr(background, "STARTED", {})
    monkeypatch.setattr(background, "LEFT_BEHIND", {})
    return tmp_path / "status"


def _op(family, name: str, fn):
    return op_variant(name, fn, CallMap(tuple(family.op_params)), family, "a test's op", "tests", name)


def _setup(clock):
    family = registry().families[FAMILY]
    like = Clocked(family, clock)

    def slower(*args):   # a third more work than the honest op: its verdict is "slower" in any honest run
        clock.work(0.3)
        return like.torch_op(*args)
    return family, like, [honest_op(like), _op(family, "slower", slower)], family.parse_shape(SHAPES[FAMILY]).shapes[0]


def _verdicts(case) -> list:
    return [(c.variant, c.baseline, c.verdict) for c in case.comparisons]


def test_a_variant_whose_imported_thread_keeps_launching_work_is_named_and_the_others_timed_without_it(clock,
                                                                                                        channel):
    family, like, honest, shape = _setup(clock)
    device_busy.at_start()   # the process starts: no variant imported yet
    without = audited_case(family, honest, shape, "forward", "cpu", copy_gbs=1e6)
    with supervisor.running(("busy",), "import of busy.py", importing=True):   # its module starts the thread
        stop = keeps_launching(clock)
    try:
        with pytest.raises(supervisor.ContextPoisoned) as ended:
            audited_case(family, honest + [honest_op(like, "busy")], shape, "forward", "cpu", copy_gbs=1e6)
    finally:
        stop.set()
    assert (ended.value.variant, ended.value.kind) == ("busy", Failure.BUSY)
    assert ended.value.error.startswith(supervisor.KEEPS_BUSY)
    # the record the process that started this one reads: it names the variant, and the dtype goes again without it
    launch = supervisor.last_launch(0)
    assert launch.names == ("busy",) and launch.failure == Failure.BUSY
    culprit = timing_culprit.blamed(launch, 1, "float32", "honest")
    assert culprit.name == "busy" and culprit.reason.startswith("keeps the GPU busy between its calls (")
    assert culprit.reason.endswith("float32 was timed again without it")
    # ... in a fresh process, which never imports it: no thread, nothing queued by one
    clock.launchers.clear()
    clock.side_until = clock.now
    again = audited_case(family, honest, shape, "forward", "cpu", copy_gbs=1e6)
    assert all(v.status is TimingStatus.OK for v in again.variants) and not again.fouls
    assert _verdicts(again) == _verdicts(without) and _verdicts(without)[0][2] == "slower"


def test_a_variant_whose_calls_leave_work_in_flight_is_named_after_its_warm_up_not_the_one_before(clock, channel):
    family, like, honest, shape = _setup(clock)
    device_busy.at_start()

    def leaves_work(*args):   # returns with work still queued on a stream of its own
        y = like.torch_op(*args)
        clock.launch_side(50.0)
        return y
    with pytest.raises(supervisor.ContextPoisoned) as ended:
        audited_case(family, honest + [_op(family, "leaves_work", leaves_work)], shape, "forward", "cpu",
                     copy_gbs=1e6)
    assert (ended.value.variant, ended.value.kind) == ("leaves_work", Failure.BUSY)
    assert ended.value.what.endswith("warm-up")


def test_a_device_busy_before_the_case_with_no_variant_to_blame_is_timed_as_before(clock, channel):
    family, like, honest, shape = _setup(clock)
    device_busy.at_start()
    clock.launchers.append(type("Other", (), {"is_alive": lambda self: True})())   # another process's work
    case = audited_case(family, honest, shape, "forward", "cpu", copy_gbs=1e6)
    assert all(v.status is TimingStatus.OK for v in case.variants)


def test_nothing_is_checked_where_no_idle_probe_was_taken(clock, channel):
    family, like, honest, shape = _setup(clock)
    with supervisor.running(("busy",), "import of busy.py", importing=True):
        stop = keeps_launching(clock)
    try:
        case = audited_case(family, honest + [honest_op(like, "busy")], shape, "forward", "cpu", copy_gbs=1e6)
    finally:
        stop.set()
    assert [v.status for v in case.variants] == [TimingStatus.OK] * 3


def test_threads_an_import_starts_are_noted_daemon_included_and_only_while_alive(channel):
    import threading
    stop = threading.Event()
    with supervisor.running(("imports",), "import of x.py", importing=True):
        threading.Thread(target=stop.wait, daemon=True).start()
    with supervisor.running(("a", "b"), "timed together"):
        threading.Thread(target=stop.wait, daemon=True).start()
    try:
        assert background.starters(("imports", "a", "b")) == ["imports"]   # one variant's launch alone
    finally:
        stop.set()
    for t in background.STARTED["imports"][0]:
        t.join()
    assert background.starters(("imports",)) == []


def _timed(tmp_path, monkeypatch, behaviour: str, variants: tuple[str, ...]):
    """The float32 timing of `variants` by the stand-in timing process of tests/test_timing_run.py."""
    from compare.comparison import plan, timing_run
    from compare.runtime.progress import Step
    from tests.test_timing_run import _fake
    worker, starts = _fake(tmp_path, monkeypatch, behaviour)
    processes = timing_run.TimingProcesses(plan.Request(variants=variants), ("float32",), worker)
    try:
        return processes.run(Step()), starts
    finally:
        processes.close()


def test_a_timing_process_that_named_a_busy_variant_is_started_again_without_it(tmp_path, monkeypatch, channel):
    found, starts = _timed(tmp_path, monkeypatch, "busy:bad", ("base", "bad", "good"))
    assert found.skipped == ()
    [case] = found.timing.cases
    assert [(v.variant, v.status) for v in case.variants] == [
        ("base", TimingStatus.OK), ("bad", TimingStatus.ERROR), ("good", TimingStatus.OK)]
    assert case.variants[1].reason == ("keeps the GPU busy between its calls (a probe copy took 4 times as long), "
                                       "seen in the process that timed float32 at timing s forward; float32 was "
                                       "timed again without it")
    assert len(starts.read_text().split()) == 2   # the one that named it, and one that never imported it
    (tmp_path / "alone").mkdir()
    alone, _ = _timed(tmp_path / "alone", monkeypatch, "ok", ("base", "good"))   # a run that never had it
    assert [c for c in case.comparisons if c.variant == "good"] == list(alone.timing.cases[0].comparisons)


def test_a_busy_variant_whose_thread_runs_here_too_ends_this_process_as_tampered(tmp_path, monkeypatch, channel):
    import threading
    stop = threading.Event()
    with supervisor.running(("bad",), "import of bad.py", importing=True):   # imported here too, for its numerics
        threading.Thread(target=stop.wait, daemon=True).start()
    try:
        with pytest.raises(supervisor.ContextPoisoned) as ended:
            _timed(tmp_path, monkeypatch, "busy:bad", ("base", "bad", "good"))
    finally:
        stop.set()
    # no process of this run would time the others without its thread: the supervisor runs it again without it
    assert (ended.value.variant, ended.value.kind) == ("bad", supervisor.TAMPER)
    assert ended.value.error.startswith(supervisor.KEEPS_BUSY)


def test_a_gpu_kept_busy_here_by_a_variant_is_named_before_any_timing_process_times(clock, tmp_path, monkeypatch,
                                                                                     channel):
    from compare.checks.task import TIME
    from compare.comparison import timing_run
    told, tell = [], timing_run.WarmWorker.tell
    monkeypatch.setattr(timing_run.WarmWorker, "tell", lambda self, line: told.append(line) or tell(self, line))
    device_busy.at_start()
    with supervisor.running(("bad",), "import of bad.py", importing=True):
        stop = keeps_launching(clock)
    try:
        with pytest.raises(supervisor.ContextPoisoned) as ended:
            _timed(tmp_path, monkeypatch, "ok", ("base", "bad", "good"))
    finally:
        stop.set()
    assert (ended.value.variant, ended.value.kind) == ("bad", Failure.BUSY)
    assert not [line for line in told if line["kind"] == TIME]   # no timing process was told to time


_WORKER = '''
import sys, threading
sys.path.insert(0, {root!r})
from compare.checks import copy_bandwidth
from compare.comparison import timing_run
from compare.model.results import TimingSection
from compare.runtime import backend
on_cpu = backend.configure
backend.configure = lambda device, probe=False: backend.Backend("cuda", False, str(on_cpu("cpu")))   # a "GPU"
# a neighbour's thread on the device lowers the copy bandwidth read while it runs
copy_bandwidth.copy_bandwidth_gbs = lambda: 400.0 if any(t.name == "busy" for t in threading.enumerate()) else 4200.0


def stand_in(planned, step, copy_gbs=0.0):   # what it would time with: the variants, and the copy bandwidth
    alive = any(t.name == "busy" for t in threading.enumerate())
    return TimingSection(",".join(v.name for v in planned.variants) + f"|busy thread: {{alive}}", copy_gbs, 0.01,
                         0.95, "m", ())


timing_run.run_timing = stand_in
from compare.processes import task_worker
sys.exit(task_worker.main(*sys.argv[1:]))
'''

_BUSY_OP = '''
import threading, time
import torch

threading.Thread(target=lambda: time.sleep(60), name="busy", daemon=True).start()   # as it would launch work


def op(X, W, B, num_channels, num_groups, eps):
    return torch.nn.functional.group_norm(X, num_groups, W, B, eps)
'''


def test_the_timing_process_measures_copy_bandwidth_before_any_variant_is_imported(tmp_path, monkeypatch):
    from pathlib import Path
    from compare.comparison import plan, timing_run
    from compare.runtime.progress import Step
    worker = tmp_path / "worker.py"
    worker.write_text(_WORKER.format(root=str(Path(timing_run.__file__).resolve().parents[2])))
    (tmp_path / "busy.py").write_text(_BUSY_OP)
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(tmp_path / "status"), "token": None})
    monkeypatch.setattr(supervisor, "_LIMIT", [120.0])
    request = plan.Request(variants=("pointer_mutation", "busy"), family="group_norm", shape="2,8,2,16",
                           external=(f"busy={tmp_path / 'busy.py'}::op",))
    processes = timing_run.TimingProcesses(request, ("float32",), worker)
    try:
        found = processes.run(Step())
    finally:
        processes.close()
    assert found.skipped == ()
    # the variant's import had started its thread by the time it timed, but not when the bandwidth was measured
    assert found.timing.gpu == "pointer_mutation,busy|busy thread: True"
    assert found.timing.copy_gbs == 4200.0
