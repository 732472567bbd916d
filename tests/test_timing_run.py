"""The timing plan (compare/comparison/timing_run.py): with no --modes, every pass whose compiled code differs is
timed and the others are said; the request travels to a timing process and back unchanged."""
import pytest

from compare.comparison import pipeline, timing_run
from compare.checks.timing import TimingConfig
from compare.model.skips import Skip
from variants import registry

REG = registry()


def _plan(family, names, asked=()):
    return timing_run.plan_modes(REG.family(family), [REG.get(n, family) for n in names], asked)


def test_the_seeds_pair_times_the_forward_only_and_says_why_not_the_backward():
    modes, left = _plan("group_norm", ("pointer_mutation", "explicit_offset"))
    assert modes == ("forward",)
    assert any(s.check == "timing" and s.part == "backward"
               and s.why.startswith("every variant runs the same backward kernel") for s in left)
    assert any(s.check == "timing" and s.part == "full" for s in left)


def test_a_variant_with_its_own_backward_times_every_pass():
    assert _plan("group_norm", ("pointer_mutation", "single_read_coop")) == (("forward", "backward", "full"), ())


def test_a_change_of_the_backward_kernel_alone_times_the_backward():
    modes, left = _plan("layer_norm", REG.family("layer_norm").default_pair)
    assert modes == ("backward",) and any(s.part == "forward" and s.why.startswith("every variant runs") for s in left)


def test_ops_and_torch_time_every_pass_and_asked_modes_are_kept():
    assert _plan("group_norm", ("pointer_mutation", "torch"))[0] == ("forward", "backward", "full")
    assert _plan("group_norm", ("pointer_mutation", "explicit_offset"), ("full",)) == (("full",), ())


def test_a_request_travels_to_a_timing_process_unchanged():
    request = pipeline.Request(variants=("a", "b"), shape="2,8,2,16", checks=("timing",), external=("a=x.py::f",),
                               timing=TimingConfig(modes=("forward", "backward"), rounds=12, max_seconds=2.5))
    again = timing_run.request_from_json(timing_run.request_json(request), pipeline.Request, TimingConfig)
    assert again == request


@pytest.mark.parametrize("gpu, env, fresh", [(True, None, True), (True, "1", False), (False, None, False)])
def test_timing_runs_in_fresh_processes_on_a_gpu_unless_told(monkeypatch, gpu, env, fresh):
    if env is None:
        monkeypatch.delenv(timing_run.IN_PROCESS_ENV, raising=False)
    else:
        monkeypatch.setenv(timing_run.IN_PROCESS_ENV, env)
    assert timing_run.in_fresh_processes(gpu) is fresh


# A stand-in for a timing process (compare/processes/tasks.py), speaking its task protocol: it notes its
# start, then for each LOAD task loads (sleeps) and answers on the pipe it is given; for its TIME task it notes the
# status file the task names and answers with a timing section (one case of the variants it was handed less those
# its environment excludes, its method that exclusion). A request naming variant "dies" ends it while timing; with
# FAKE_WORKER "abort:NAMES", a request holding NAMES not excluded writes the run's launch record of every variant,
# then one naming NAMES (and a forged one without the token, naming the last variant), and aborts; with
# "busy:NAME", NAME not excluded is named for keeping the GPU busy, as the timing process's probe names one; with
# "sigterm:NAME", NAME not excluded sends its process SIGTERM while it runs alone.
_FAKE_WORKER = '''
import json, os, resource, sys, time
sys.path.insert(0, {root!r})
from compare.model.results import TimingCase, TimingComparison, TimingSection, TimingVariant, to_dict
from compare.model.states import TimingStatus, TimingVerdict
from compare.model.task_answers import TaskAnswer
words = os.fdopen(int(sys.argv[-1]), "wb", buffering=0)
behaviour = os.environ["FAKE_WORKER"]
excluded = [e[0] for e in json.loads(os.environ.get("KERNEL_AB_EXCLUDED") or "[]")]
with open(os.environ["FAKE_WORKER_STARTS"], "a") as starts:
    starts.write(str(os.getpid()) + chr(10))
while (line := sys.stdin.readline()):
    go = json.loads(line)   # a Task: LOAD, or TIME with the run's status file, token and copy bandwidth
    request = json.loads(go["request"])
    dtype, notes = request["dtype"], os.path.join(os.environ["FAKE_WORKER_NOTES"], go["key"])
    names = [n for n in request["variants"] if n not in excluded]
    if go["kind"] == "load":
        open(notes + ".started", "w").write(repr(time.time()))
        if behaviour == "crash":
            sys.exit("cannot load: " + dtype)
        if behaviour == "never ready":
            time.sleep(60)
        time.sleep(0.2)
        words.write(TaskAnswer.ok({{"variants": names}}).as_json().encode() + bytes([10]))
        continue
    open(notes + ".when", "w").write(repr(time.time()))
    if "dies" in request["variants"]:
        os._exit(9)
    if behaviour.partition("busy:")[2] in names:   # as compare.runtime.device_busy ends it: the variant named
        from compare.runtime import run_context, supervisor
        run_context.set_channel(go["status"], go["token"])
        supervisor.keeps_busy(behaviour[5:], "timing s forward", "a probe copy took 4 times as long")
    if behaviour.partition("sigterm:")[2] in names:   # the variant's own stop signal, while it ran alone
        with open(go["status"], "a") as status:
            status.write(json.dumps({{"variants": [behaviour[8:]], "what": "timing s forward checked run",
                                      "token": go["token"]}}) + chr(10))
        import signal
        os.kill(os.getpid(), signal.SIGTERM)
    ending = behaviour.partition("abort:")[2].split(",") if behaviour.startswith("abort:") else []
    if ending and set(ending) <= set(names):
        with open(go["status"], "a") as status:
            for record in ({{"variants": names, "what": "timing s forward", "since": time.time(), "limit": 60}},
                           {{"variants": ending, "what": "timing s forward graph capture"}}):
                status.write(json.dumps({{**record, "token": go["token"]}}) + chr(10))
            status.write(json.dumps({{"variants": [names[-1]], "what": "forged"}}) + chr(10))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.abort()
    bandwidth = go["copy_gbs"] or 4200.0 + len(dtype)   # measured by the first process only
    case = TimingCase("s", "forward", False, 1.0, tuple(TimingVariant(n, TimingStatus.OK) for n in names),
                      tuple(TimingComparison(n, TimingVerdict.NO_DIFFERENCE, baseline=names[0]) for n in names[1:]),
                      dtype=dtype)
    section = TimingSection(go["status"] + "|" + dtype + "|" + ",".join(names), bandwidth, 0.01, 0.95,
                            os.environ.get("KERNEL_AB_EXCLUDED", ""), (case,) if names else ())
    words.write(json.dumps({{"progress": "timing s forward: round 3"}}).encode() + bytes([10]))   # its progress
    words.write(TaskAnswer.ok(to_dict(section)).as_json().encode() + bytes([10]))
'''


def _fake(tmp_path, monkeypatch, behaviour: str):
    """The stand-in worker's file; the file each of its processes notes its start in."""
    from pathlib import Path
    from compare.runtime import run_context, supervisor
    worker = tmp_path / "worker.py"
    worker.write_text(_FAKE_WORKER.format(root=str(Path(timing_run.__file__).resolve().parents[2])))
    monkeypatch.setenv("FAKE_WORKER", behaviour)
    monkeypatch.setenv("FAKE_WORKER_STARTS", str(tmp_path / "starts"))
    monkeypatch.setenv("FAKE_WORKER_NOTES", str(tmp_path))
    # the run's status file and launch limit, as the supervisor and --variant-timeout gave them (read once)
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(tmp_path / "status"), "token": "the-token"})
    monkeypatch.setattr(supervisor, "_LIMIT", [3.0])
    return worker, tmp_path / "starts"


def _processes(tmp_path, monkeypatch, behaviour: str, dtypes=("float32", "bfloat16")):
    from compare.comparison import plan
    from compare.runtime.progress import Step
    worker, _ = _fake(tmp_path, monkeypatch, behaviour)
    processes = timing_run.TimingProcesses(plan.Request(), dtypes, worker)
    try:
        return processes.run(Step()), processes
    finally:
        processes.close()


def test_timing_processes_start_at_once_and_time_one_after_another_with_the_status_file(tmp_path, monkeypatch):
    seen = {}
    real_time = timing_run.TimingProcesses._time

    def noting(self, w, copy_gbs):   # when told to go: had the first finished timing, when had this one started?
        first = tmp_path / self.workers[0].key
        if w is not self.workers[0]:
            seen["first timed at"] = float(open(f"{first}.when").read())
            seen["second started at"] = float(open(f"{tmp_path / w.key}.started").read())
        seen[w.dtype] = copy_gbs
        return real_time(self, w, copy_gbs)
    monkeypatch.setattr(timing_run.TimingProcesses, "_time", noting)
    found, processes = _processes(tmp_path, monkeypatch, "ok")
    section = found.timing
    assert found.skipped == ()
    # the second process had started before the first timed: it loaded alongside, not after
    assert seen["second started at"] < seen["first timed at"]
    # the first measured the copy bandwidth; the second was handed it
    assert seen["float32"] == 0.0 and seen["bfloat16"] == 4207.0
    # the status file reaches a process only with its go, and the sections of both are merged
    assert section.gpu == f"{tmp_path / 'status'}|float32|"
    assert all(not w.worker.alive() for w in processes.workers)   # its own processes end with it


def test_a_timing_process_that_fails_to_load_or_never_gets_ready_is_one_line(tmp_path, monkeypatch):
    found, _ = _processes(tmp_path, monkeypatch, "crash", ("float32",))
    section, failed = found.timing, found.skipped
    assert section is None and len(failed) == 1
    assert (failed[0].check, failed[0].part) == ("timing", "float32")
    assert failed[0].why.startswith("its process ended with exit code 1 (cannot load: float32)")
    found, processes = _processes(tmp_path, monkeypatch, "never ready", ("float16",))
    assert found.timing is None and found.skipped == (Skip("timing", "its process had not loaded the variants "
                                                           "after 3 s (--variant-timeout)", "float16"),)
    assert all(not w.worker.alive() for w in processes.workers)


def _comparisons(workers, names: list[tuple[str, ...]], dtypes=("float32", "bfloat16")) -> list:
    """Each comparison's timing Findings in turn, timed in `workers`' processes, as a review's ops are."""
    from compare.comparison import plan
    from compare.runtime.progress import Step
    done = []
    for variants in names:
        processes = timing_run.TimingProcesses(plan.Request(variants=variants), dtypes, workers=workers)
        try:
            done.append(processes.run(Step()))
        finally:
            processes.close()
    return done


def test_a_reviews_comparisons_are_timed_in_one_warm_process_per_dtype(tmp_path, monkeypatch):
    worker, starts = _fake(tmp_path, monkeypatch, "ok")
    workers = timing_run.TimingWorkers(worker)
    try:
        done = _comparisons(workers, [("a.base", "a.head"), ("b.base", "b.head"), ("c.base", "c.head")])
        # each comparison timed in both dtypes, each by the process of its dtype
        assert [found.timing.gpu.split("|")[1:] for found in done] == [["float32", f"{op}.base,{op}.head"]
                                                                       for op in "abc"]
        assert all(found.skipped == () for found in done)
        assert workers.starts == 2 and len(starts.read_text().split()) == 2   # not one per comparison and dtype
    finally:
        workers.close()
    assert not any(w.alive() for w in workers.by_dtype.values())


def test_a_comparison_that_kills_its_timing_process_fails_alone_and_the_next_gets_a_fresh_one(tmp_path, monkeypatch):
    worker, starts = _fake(tmp_path, monkeypatch, "ok")
    workers = timing_run.TimingWorkers(worker)
    try:
        first, killed, after = _comparisons(workers, [("a.base", "a.head"), ("b.base", "dies"),
                                                      ("c.base", "c.head")], dtypes=("float32",))
        assert first.skipped == () and after.skipped == () and after.timing.gpu.endswith("|float32|c.base,c.head")
        assert killed.timing is None and killed.skipped == (Skip("timing", "its process ended with exit code 9 "
                                                                 "(no output)", "float32"),)
        assert workers.starts == 2 and len(starts.read_text().split()) == 2   # the one it killed, and a fresh one
    finally:
        workers.close()


def _status_lines(tmp_path) -> list[dict]:
    import json
    return [json.loads(line) for line in (tmp_path / "status").read_text().splitlines()]


def test_a_variant_that_ends_the_timing_process_alone_is_named_and_the_others_are_timed_again(tmp_path, monkeypatch):
    from compare.model.states import TimingStatus, TimingVerdict
    # its records carry the run's token; the forged one after them, naming good, counts for nothing
    worker, starts = _fake(tmp_path, monkeypatch, "abort:bad")
    workers = timing_run.TimingWorkers(worker)
    try:
        found, after = _comparisons(workers, [("base", "bad", "good"), ("c.base", "c.head")], dtypes=("float32",))
        assert found.skipped == ()
        [case] = found.timing.cases
        # the honest pair measured in the fresh process, which excluded the culprit (its environment said so)
        assert found.timing.gpu.endswith("|float32|base,good") and '"bad"' in found.timing.method
        assert [(v.variant, v.status) for v in case.variants] == [
            ("base", TimingStatus.OK), ("bad", TimingStatus.ERROR), ("good", TimingStatus.OK)]
        bad = case.variants[1]
        assert bad.reason == ("crashed the process that timed float32 (exit code -6, SIGABRT) while running timing s "
                              "forward graph capture; float32 was timed again without it")
        assert [(c.variant, c.verdict, c.baseline) for c in case.comparisons] == [
            ("bad", TimingVerdict.NA, "base"), ("good", TimingVerdict.NO_DIFFERENCE, "base")]
        assert case.comparisons[0].reason == f"bad {bad.reason}"
        # the launch the dead process left open is closed, so that no supervisor waits on it
        assert _status_lines(tmp_path)[-1]["variants"] == []
        # the next comparison gets the dtype's shared process afresh, excluding nothing
        assert after.skipped == () and after.timing.method.startswith("; ")
        assert workers.starts == 3 and len(starts.read_text().split()) == 3
    finally:
        workers.close()


def test_a_timing_process_ended_by_the_baseline_alone_leaves_the_dtype_untimed(tmp_path, monkeypatch):
    from compare.comparison import plan
    from compare.runtime.progress import Step
    worker, starts = _fake(tmp_path, monkeypatch, "abort:base")
    processes = timing_run.TimingProcesses(plan.Request(variants=("base", "bad", "good")), ("float32",), worker)
    try:
        found = processes.run(Step())
    finally:
        processes.close()
    assert found.timing is None
    [skip] = found.skipped
    assert (skip.check, skip.part) == ("timing", "float32")
    assert skip.why.startswith("its process ended with exit code -6 (") and skip.why.endswith(
        "while the baseline base ran alone (timing s forward graph capture): nothing to time the others against")
    assert len(starts.read_text().split()) == 1   # not started again: no one variant to leave out


@pytest.mark.parametrize("ending, timed", [("bad,good", ("bad", "good", "also")), ("bad,base", ("good", "also"))])
def test_a_process_ended_while_several_ran_times_each_variant_apart_and_names_the_one_that_ends_its_own(
        tmp_path, monkeypatch, ending, timed):
    from compare.comparison import plan
    from compare.model.states import TimingStatus
    from compare.runtime.progress import Step
    # "bad,good": only the two together end a process, so apart each is timed; "bad,base": bad ends its own pair
    worker, starts = _fake(tmp_path, monkeypatch, f"abort:{ending}")
    processes = timing_run.TimingProcesses(plan.Request(variants=("base", "bad", "good", "also")), ("float32",),
                                           worker)
    try:
        found = processes.run(Step())
    finally:
        processes.close()
    assert found.skipped == ()
    [case] = found.timing.cases
    assert [v.variant for v in case.variants] == ["base", "bad", "good", "also"]
    assert {v.variant for v in case.variants if v.status == TimingStatus.OK} == {"base", *timed}
    assert {c.variant for c in case.comparisons} == {"bad", "good", "also"}
    assert case.note.startswith("each variant timed apart with the baseline, in a process of its own: its process "
                                "ended with exit code -6")
    assert len(starts.read_text().split()) == 4   # the one that ended, and one per variant apart
    if "bad" not in timed:
        [bad] = [v for v in case.variants if v.variant == "bad"]
        assert bad.status == TimingStatus.ERROR and bad.reason.startswith(
            "ended the process that timed it apart with the baseline: its process ended with exit code -6")


def test_a_variant_that_sends_its_timing_process_a_stop_signal_tampered_as_in_the_runs_own_process(tmp_path,
                                                                                                   monkeypatch):
    from compare.comparison import plan
    from compare.runtime import supervisor
    from compare.runtime.progress import Step
    worker, _ = _fake(tmp_path, monkeypatch, "sigterm:bad")
    monkeypatch.setattr(supervisor, "STOP_REQUESTED", [])   # no stop came to this process (the run)
    monkeypatch.setattr(supervisor, "_DEFERRED", {})
    processes = timing_run.TimingProcesses(plan.Request(variants=("base", "bad", "good")), ("float32",), worker)
    with pytest.raises(supervisor.ContextPoisoned) as ended:
        try:
            processes.run(Step())
        finally:
            processes.close()
    assert (ended.value.variant, ended.value.kind) == ("bad", supervisor.TAMPER)
    assert ended.value.error == "sent the process that timed float32 SIGTERM"


def test_a_timing_process_ended_by_the_runs_own_stop_is_no_variants_act(tmp_path, monkeypatch):
    from compare.comparison import plan
    from compare.runtime import supervisor
    from compare.runtime.progress import Step
    worker, _ = _fake(tmp_path, monkeypatch, "sigterm:bad")
    monkeypatch.setattr(supervisor, "STOP_REQUESTED", [15])   # the run got the stop too: it is no variant's
    processes = timing_run.TimingProcesses(plan.Request(variants=("base", "bad", "good")), ("float32",), worker)
    try:
        found = processes.run(Step())
    finally:
        processes.close()
    [bad] = [v for v in found.timing.cases[0].variants if v.variant == "bad"]   # timed again without it, as a crash
    assert "SIGTERM" in bad.reason and "sent the process" not in bad.reason, bad.reason


def test_a_stop_after_one_dtype_was_timed_keeps_its_timing_and_says_the_rest_were_not(tmp_path, monkeypatch):
    from compare.checks.check import CheckStopped
    from compare.comparison import plan
    from compare.runtime import supervisor
    from compare.runtime.progress import Step
    real_time = timing_run.TimingProcesses._time

    def budget_ends_at_bfloat16(self, w, copy_gbs):   # as a review's budget running out while bfloat16 is timed
        if w.dtype == "bfloat16":
            raise supervisor.OutOfTime("the review's time budget (50 s) ran out")
        return real_time(self, w, copy_gbs)
    monkeypatch.setattr(timing_run.TimingProcesses, "_time", budget_ends_at_bfloat16)
    worker, _ = _fake(tmp_path, monkeypatch, "ok")
    processes = timing_run.TimingProcesses(plan.Request(variants=("a", "b")), ("float32", "bfloat16", "float16"),
                                           worker)
    with pytest.raises(CheckStopped) as stopped:
        try:
            processes.run(Step())
        finally:
            processes.close()
    found = stopped.value.findings
    assert [c.dtype for c in found.timing.cases] == ["float32"]
    assert [(s.part, s.why) for s in found.skipped] == [
        (d, "not timed: the review's time budget (50 s) ran out") for d in ("bfloat16", "float16")]
    assert isinstance(stopped.value.stop, supervisor.OutOfTime)


def test_a_stop_keeps_the_passes_the_plan_left_out_beside_the_dtypes_timed():
    from compare.checks.check import CheckStopped, Findings
    from compare.comparison import plan, timing_check
    from compare.model.skips import Skip
    from compare.runtime import supervisor
    from compare.runtime.progress import Step
    the_plan = plan.build(plan.Request(checks=("timing",)), REG)   # the seed pair: backward and full left out
    timed = Findings(skipped=(Skip("timing", "not timed: interrupted (Ctrl-C)", "bfloat16"),))

    class Stopped:   # timing processes that timed float32, then got a stop
        def run(self, step):
            raise CheckStopped(timed, supervisor.Stopped(2))
    with pytest.raises(CheckStopped) as stopped:
        timing_check._timing(the_plan, None, Step(), Stopped())
    assert [s.part for s in stopped.value.findings.skipped] == ["backward", "full", "bfloat16"]
