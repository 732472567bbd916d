"""Sweeps spread over worker processes (--jobs) and a Dask cluster (--scheduler): the report is the one a
single process makes, whatever ran where; a variant that crashes a worker is reported and the rest comes
out; --scheduler without Dask is one line and exit 2; --dry-run says where each task would run."""
import json
import os
import sys
from pathlib import Path

import pytest

import main
from compare.model.task_answers import TaskAnswer
from compare.processes.executors import LocalExecutor
from compare.processes.tasks import Task
from tests.extras import need
from tests.test_supervisor import SEGFAULTING

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--shape", "2,8,2,4", "--trials", "1", "--quiet"]


def _compare(tmp_path, name: str, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    assert main.main(["compare", *SMALL, "--json", str(out), *args]) == 0
    report = json.loads(out.read_text())
    report.pop("environment")   # the host, the command line and the time: the rest must not depend on where it ran
    return report


def _same(a: dict, b: dict) -> None:
    assert [k for k in a if a[k] != b.get(k)] == []
    assert a == b


@pytest.mark.slow
def test_jobs_2_gives_the_report_of_jobs_1_on_every_input_kind_and_dtype(tmp_path):
    one = _compare(tmp_path, "one", "--inputs", "all", "--dtype", "all", "--jobs", "1")
    two = _compare(tmp_path, "two", "--inputs", "all", "--dtype", "all", "--jobs", "2")
    assert len(one["numerics"]["cases"]) >= 2 * 3 * 2 and one["ir"]   # both directions, three dtypes, input kinds; IR
    _same(one, two)


def test_jobs_2_gives_the_report_of_one_process(tmp_path):
    plain = _compare(tmp_path, "plain", "--inputs", "normal,large_mean", "--dtype", "float32,float16",
                     "--check", "numerics")
    two = _compare(tmp_path, "two", "--inputs", "normal,large_mean", "--dtype", "float32,float16",
                   "--check", "numerics", "--jobs", "2")
    assert len(plain["numerics"]["cases"]) == 4
    _same(plain, two)


@pytest.mark.slow
def test_a_local_dask_cluster_gives_the_report_of_jobs_1_with_a_shipped_git_variant(tmp_path, capsys):
    distributed = need("distributed")
    spec = "head=git:HEAD:variants/group_norm/explicit_offset.py::group_norm_forward"
    args = ["--inputs", "all", "--dtype", "all", "--check", "numerics", "--check", "backward", "--check", "ir",
            "--variant", spec, "--repo", str(ROOT)]
    one = _compare(tmp_path, "one", *args, "--jobs", "1")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        on_dask = _compare(tmp_path, "dask", *args, "--scheduler", c.scheduler_address)
        assert main.main(["compare", *SMALL, "--scheduler", c.scheduler_address, "--dry-run", "--plan-gpus", "1"]) == 0
    planned = capsys.readouterr().out
    assert "numerics forward float32 normal N2 C8 G2 S4: any of 2 Dask workers" in planned
    assert "a worker with resources GPU=1 (none connected now: it waits for one), after every case task" in planned
    assert "head" in {v["variant"] for v in one["numerics"]["cases"][0]["variants"]}
    assert "head" in {v["variant"] for v in one["ir"]["variants"]}   # compiled from the shipped tree on a worker
    _same(one, on_dask)


def test_scheduler_without_dask_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)   # import distributed raises ImportError
    assert main.main(["compare", *SMALL, "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kernel-ab: error: --scheduler needs Dask's distributed package")


@pytest.mark.parametrize("args, said", [
    (["--jobs", "0"], "--jobs must be at least 1 and at most 1024, got 0"),
    (["--jobs", "2", "--scheduler", "tcp://x:1"], "give --jobs or --scheduler, not both"),
    (["--plan-gpus", "2"], "--plan-gpus applies to --dry-run only"),
])
def test_bad_spread_options_are_one_line_and_exit_2(args, said, capsys):
    assert main.main(["compare", *SMALL, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0]


@pytest.mark.slow
def test_a_variant_that_crashes_its_worker_is_reported_and_the_rest_comes_out(tmp_path, capfd):
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the out-of-bounds load segfaults Triton's CPU interpreter; compiled, it is an illegal address")
    kernel = tmp_path / "bad.py"
    kernel.write_text(SEGFAULTING)
    out = tmp_path / "r.json"
    code = main.main(["compare", "explicit_offset", "--variant", f"bad={kernel}::group_norm_forward", *SMALL,
                      "--check", "numerics", "--inputs", "normal,large_mean", "--jobs", "2", "--json", str(out)])
    err = capfd.readouterr().err
    assert code == 0, err
    assert "kernel-ab: variant bad crashed the process (SIGSEGV) while running numerics forward" in err
    report = json.loads(out.read_text())
    bad = next(v for v in report["variants"] if v["name"] == "bad")
    assert bad["status"] == "failed" and "SIGSEGV" in bad["error"]
    assert len(report["numerics"]["cases"]) == 2
    for case in report["numerics"]["cases"]:
        assert [v["variant"] for v in case["variants"]] == ["explicit_offset", "torch"]
        assert case["variants"][0]["status"] in ("pass", "fail")   # it ran (large_mean may fail the tolerance)


def test_dry_run_places_timing_one_case_at_a_time_per_gpu(capsys):
    assert main.main(["compare", *SMALL, "--dtype", "float32,bfloat16", "--jobs", "3", "--dry-run",
                      "--plan-gpus", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("plan: ") and "nothing was run" in lines[0]
    timing = [line for line in lines if line.startswith("  timing ")]
    assert timing and all("after every case task" in line for line in timing)
    gpus = {line.split(" on GPU ")[1].split(",")[0] for line in timing}
    assert gpus == {"0", "1"}   # two GPUs, and the third worker (on GPU 0 again) never times
    assert not any("worker 3 on GPU" in line for line in timing)


def test_a_worker_lost_outside_any_launch_is_run_again_and_said():
    ex = LocalExecutor(2)
    try:
        answers = iter([TaskAnswer.lost("its worker process crashed the process (SIGKILL)"), TaskAnswer.ok({"n": 1})])
        for runner in ex._runners:
            runner.run = lambda task: next(answers)
        task = Task("numerics forward float32 normal S", "numerics", "{}", "cpu", ("forward", "float32", "normal", 0, (0,)))
        assert ex.submit(task).result(timeout=30) == TaskAnswer.ok({"n": 1})
        (said,) = ex.incidents()
        assert said.startswith("task numerics forward float32 normal S: worker ") and "SIGKILL" in said
        assert "ran again on worker" in said
    finally:
        ex.close()


def test_timing_cases_merge_in_plan_order_each_saying_its_gpu():
    import concurrent.futures
    from types import SimpleNamespace

    from compare.model.results import TimingCase, to_dict
    from compare.comparison.timing_check import TimingCheck
    from compare.processes.distributed import Started

    def answer(dtype, gpu):
        case = TimingCase("S", "forward", False, 1.0, (), (), dtype=dtype, ran_on=f"H200 GPU-{gpu}, copy 4000 GB/s")
        return TaskAnswer.ok({"case": to_dict(case), "gpu": "H200", "method": "interleaved rounds",
                              "compile_seconds": [["inductor", 2.0]], "place": {"copy_gbs": 4000.0 + gpu}})

    answers = {"timing float32 S forward": answer("float32", 0), "timing bfloat16 S forward": answer("bfloat16", 1),
               "timing bfloat16 S backward": answer("bfloat16", 0)}

    class Fixed:
        def submit(self, task):
            future = concurrent.futures.Future()
            future.set_result(answers[task.key])
            return future

    tasks = [Task(key, "timing", "{}", "cuda", (key.split()[1], 0, key.split()[3])) for key in answers]
    plan = SimpleNamespace(timing=SimpleNamespace(noise=0.01), timing_left_out=("left out",))
    started = Started(Fixed(), tasks, plan, SimpleNamespace(gpu="H200"), None)
    found = started.pending(TimingCheck()).result()
    section, skipped = found.timing, found.skipped
    assert [c.ran_on.split(",")[0] for c in section.cases] == ["H200 GPU-0", "H200 GPU-1", "H200 GPU-0"]
    assert [c.dtype for c in section.cases] == ["float32", "bfloat16", "bfloat16"]
    assert section.compile_seconds == (("inductor", 2.0), ("inductor", 2.0))   # one compile per dtype
    assert "2 GPUs" in section.method and skipped == ("left out",)


@pytest.mark.slow
def test_every_way_out_of_a_variant_in_a_worker_is_its_result(tmp_path, capfd):
    from tests.test_sealed_variants import HOSTILE
    (tmp_path / "hostile.py").write_text(HOSTILE.format(at_import=""))
    names = ("exits", "raises_system_exit", "sleeps", "is_killed", "leaves_a_thread")
    specs = [f"--variant={n}={tmp_path / 'hostile.py'}::{n}" for n in names]
    out = tmp_path / "r.json"
    code = main.main(["compare", "pointer_mutation", *specs, *SMALL, "--check", "numerics", "--inputs", "normal",
                      "--variant-timeout", "3", "--jobs", "2", "--json", str(out)])
    assert code == 0, capfd.readouterr().err
    report = json.loads(out.read_text())
    failed = {v["name"]: v["error"] for v in report["variants"] if v["status"] == "failed"}
    assert failed["exits"].startswith("ended the process (exit code 0, no report) while running numerics forward")
    assert failed["sleeps"].startswith("did not return within 3 s (--variant-timeout)")
    assert failed["is_killed"].startswith("crashed the process (SIGKILL")
    (case,) = report["numerics"]["cases"]
    status = {v["variant"]: (v["status"], v["reasons"]) for v in case["variants"]}
    assert status["pointer_mutation"][0] == status["leaves_a_thread"][0] == "pass"
    assert status["raises_system_exit"] == ("error", ["SystemExit: 3"])
    assert any(line.startswith("leaves_a_thread left thread 'stray' running") for line in report["incidents"])


def test_variant_sources_are_shipped_and_load_from_where_they_are_unpacked(tmp_path):
    import subprocess

    from compare.processes import shipping
    from compare.runtime import process_keep
    from variants.spec import of
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "kern.py").write_text("OLD = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "old"], check=True)
    (repo / "pkg" / "kern.py").write_text("NEW = 2\n")   # the working tree moved on: the revision must not
    request = json.dumps({"external": ["old=git:HEAD:pkg/kern.py::OLD", f"new={repo / 'pkg' / 'kern.py'}::NEW"],
                          "repo": str(repo)})
    try:
        shipped = json.loads(shipping.unpacked(shipping.bundle(request), "t"))
        old, new = (of(s) for s in shipped["external"])
        assert old.rev and old.rev != "HEAD" and old.function == "OLD" and new.function == "NEW"
        at_rev = subprocess.run(["git", "-C", shipped["repo"], "show", f"{old.rev}:pkg/kern.py"],
                                capture_output=True, text=True, check=True).stdout
        assert at_rev == "OLD = 1\n"
        assert Path(new.path).read_text() == "NEW = 2\n" and (Path(new.path).parent / "__init__.py").is_file()
        assert not Path(new.path).is_relative_to(repo)
    finally:
        process_keep.release()
    assert not Path(new.path).exists()   # the unpacked trees go with the worker


@pytest.mark.slow
def test_each_variants_kernels_are_compiled_by_a_task_and_not_again_where_the_run_started(tmp_path, monkeypatch):
    from compare.checks.ir import compile as ir_compile
    here = []
    monkeypatch.setattr(ir_compile, "run_worker", lambda request, warm=None: here.append(request) or [])
    report = _compare(tmp_path, "ir", "--check", "ir", "--jobs", "2")
    assert here == []   # every kernel came compiled from the tasks
    assert [v["variant"] for v in report["ir"]["variants"]] == ["pointer_mutation", "explicit_offset"]
    assert all(v["status"] == "ok" for v in report["ir"]["variants"]) and report["ir"]["pairs"]
