"""Background work is the act of the variant that leaves it (compare/runtime/device_busy.py), on the simulated
device (tests/simulated_device.py): a variant whose import starts a thread that keeps launching work, or whose
calls leave work in flight, is named "keeps the GPU busy between its calls" and its process ends; the dtype is
timed again without it (compare/comparison/timing_culprit.py) and the others' verdicts are those of a run that
never had it. The copy bandwidth is measured before any variant is imported (compare/processes/timing_worker.py)."""
import pytest

from compare.comparison import timing_culprit
from compare.model.states import Failure, TimingStatus
from compare.runtime import background, device_busy, supervisor
from tests.exploits_timed import Clocked, audited_case, honest_op, SHAPES
from tests.simulated_device import clock, keeps_launching  # noqa: F401 (the fixture)
from variants import registry
from variants.ops import op_variant
from variants.spec import CallMap

FAMILY = "group_norm"


@pytest.fixture
def channel(tmp_path, monkeypatch):
    """The run's status file, as a supervisor gave it; no thread noted from other tests."""
    monkeypatch.setattr(supervisor, "_CHANNEL", {"status": str(tmp_path / "status"), "token": "the-token"})
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
    culprit = timing_culprit.blamed(launch, 1, "float32", "honest", [])
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
