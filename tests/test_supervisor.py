"""Variant isolation and interrupted runs (compare/runtime/supervisor.py, main.py): a variant that crashes its
process is reported as failed and the others still come out; Ctrl-C and SIGTERM end a run with one
line, exit 130 / 143, and leave no temporary trees or IR worker files behind."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from compare.runtime import run_context, supervisor
from compare.processes import supervision
from compare.processes.supervision import supervise
from tests.group_norm_text import IMPORTS, forward_def
from tests.sampled import sampled

ROOT = Path(__file__).resolve().parent.parent

SEGFAULTING = IMPORTS + "\n\n" + forward_def("group_norm_forward") + '''\
    far = tl.arange(0, BLOCK_SIZE).to(tl.int64) + (1 << 40)   # far out of bounds: the interpreter's load segfaults
    tl.store(Y_ptr + tl.arange(0, BLOCK_SIZE), tl.load(X_ptr + far))
'''


def _compare_with_segfaulting(tmp_path: Path, timeout: int):
    """explicit_offset against SEGFAULTING loaded as `bad`, numerics on normal inputs: the run and its report."""
    kernel = tmp_path / "bad.py"
    kernel.write_text(SEGFAULTING)
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", "explicit_offset", "--variant",
                        f"bad={kernel}::group_norm_forward", "--shape", "2,8,2,16", "--check", "numerics",
                        "--inputs", "normal", "--trials", "1", "--quiet", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r, json.loads(out.read_text())


def test_a_variant_that_segfaults_is_reported_and_the_others_come_out(tmp_path):
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("the out-of-bounds load segfaults Triton's CPU interpreter; compiled, it is an illegal address")
    r, report = _compare_with_segfaulting(tmp_path, timeout=300)
    assert "kernel-ab: variant bad crashed the process (SIGSEGV) while running numerics forward N2 C8 G2 S16 " \
           "float32 normal seed 0; running again without it" in r.stderr
    assert "Traceback" not in r.stderr
    assert "FAIL variant bad crashed the process (SIGSEGV)" in r.stdout
    bad = next(v for v in report["variants"] if v["name"] == "bad")
    assert bad["status"] == "failed" and "SIGSEGV" in bad["error"]
    (case,) = report["numerics"]["cases"]
    assert {v["variant"]: v["status"] for v in case["variants"]} == {"explicit_offset": "pass", "torch": "pass"}


FAKE_CHILD = '''\
import os, signal, sys, json
sys.path.insert(0, {root!r})
from compare.runtime import run_context, supervisor

done = []
for name in ("a", "b", "c"):
    if name in {{c.name for c in run_context.culprits()}}:
        continue
    with supervisor.running((name,), "case of " + name):
        if name == "b":
            try:
                supervisor.poisoned("b", "poisoned the CUDA context (RuntimeError: CUDA error: an illegal memory access)")
            except supervisor.ContextPoisoned:
                sys.exit(supervisor.POISONED_EXIT)
        if name == "c":
            os.kill(os.getpid(), signal.SIGABRT)
    done.append(name)
print(json.dumps({{"ran": done, "excluded": [[c.name, c.reason] for c in run_context.culprits()]}}))
supervisor.done(0)
'''


def test_the_supervisor_reruns_without_each_variant_that_took_the_process_down(tmp_path, capfd):
    child = tmp_path / "child.py"
    child.write_text(FAKE_CHILD.format(root=str(ROOT)))
    rc = supervise([sys.executable, str(child)])
    out, err = capfd.readouterr()
    assert rc == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["ran"] == ["a"]
    assert result["excluded"] == [
        ["b", "poisoned the CUDA context (RuntimeError: CUDA error: an illegal memory access) while running case of b"],
        ["c", "crashed the process (SIGABRT) while running case of c"]]
    assert err.splitlines() == [
        "kernel-ab: variant b poisoned the CUDA context (RuntimeError: CUDA error: an illegal memory access) "
        "while running case of b; running again without it",
        "kernel-ab: variant c crashed the process (SIGABRT) while running case of c; running again without it"]


def test_a_stop_that_comes_after_the_child_finished_is_said_in_one_line_and_exits_130(tmp_path, capfd):
    """The child wrote its report (done, exit code 0) and the user's Ctrl-C reached the supervisor only then:
    exit 130, and a sentence that says the run had finished (not silence, not 'no report')."""
    child = tmp_path / "child.py"
    child.write_text(f"import os, signal, sys, time\nsys.path.insert(0, {str(ROOT)!r})\n"
                     "from compare.runtime import run_context, supervisor\nsupervisor.done(0)\n"
                     "os.kill(os.getppid(), signal.SIGINT)\ntime.sleep(1)\n")   # its own stops stay blocked
    assert supervise([sys.executable, str(child)]) == 130
    assert capfd.readouterr().err.splitlines() == ["kernel-ab: interrupted (Ctrl-C) after the run had finished (exit "
                                                   "code 0, its output written); exit code 130"]

def _deaf_child(tmp_path, stops: int):
    """A child that ignores SIGINT (as one busy in C code for long does), asks its supervisor to stop `stops`
    times, then sleeps a minute."""
    child = tmp_path / "deaf.py"
    child.write_text("import os, signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                     f"for _ in range({stops}):\n    os.kill(os.getppid(), signal.SIGINT)\n    time.sleep(0.5)\n"
                     "time.sleep(60)\n")
    return child


def test_a_child_that_does_not_unwind_after_a_stop_is_killed_and_says_why(tmp_path, capfd, monkeypatch):
    """The stop is passed on and the child given GRACE_S to write what finished; past it, it is killed and the
    line says so (not a bare 'no report'), exit 130."""
    monkeypatch.setattr(supervision, "GRACE_S", 1.0)
    started = time.monotonic()
    assert supervise([sys.executable, str(_deaf_child(tmp_path, 1))]) == 130
    assert time.monotonic() - started < 30
    assert capfd.readouterr().err.splitlines() == [
        "kernel-ab: interrupted (Ctrl-C); the run was killed (it had not ended 1 s after the stop signal); no report"]


def test_a_second_stop_kills_the_child_without_waiting_for_its_report(tmp_path, capfd):
    """A user who presses Ctrl-C again does not wait out the grace the first one gave (30 s)."""
    started = time.monotonic()
    assert supervise([sys.executable, str(_deaf_child(tmp_path, 2))]) == 130
    assert time.monotonic() - started < supervision.GRACE_S
    assert capfd.readouterr().err.splitlines() == [
        "kernel-ab: interrupted (Ctrl-C); the run was killed (a second stop signal came before the report was "
        "written); no report"]


def test_a_crash_outside_any_variant_is_one_line_and_exit_3_an_internal_error(tmp_path, capfd):
    child = tmp_path / "child.py"
    child.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert supervise([sys.executable, str(child)]) == 3
    assert capfd.readouterr().err.strip() == ("kernel-ab: error: the comparison crashed the process (SIGSEGV) "
                                              "outside any variant's launch; no report")


def test_alone_names_one_variant_inside_a_launch_of_several_and_writes_the_outer_record_back(tmp_path, monkeypatch):
    status = tmp_path / "status"
    monkeypatch.setattr(run_context, "_CHANNEL", {"status": str(status), "token": "t"})
    monkeypatch.setattr(supervisor, "_LIMIT", [10.0])
    with supervisor.running(("a", "b", "c"), "timing s forward", launches=4):
        with pytest.raises(ValueError):   # a variant's error inside: the outer record comes back all the same
            with supervisor.alone("b", "timing s forward graph capture"):
                mark = supervisor.status_mark()
                assert supervisor.last_launch(0).names == ("b",) and supervisor.last_launch(mark) is None
                raise ValueError("its capture failed")
        assert supervisor.last_launch(0).names == ("a", "b", "c")
    records = [json.loads(line) for line in status.read_text().splitlines()]
    assert [(r["variants"], r["what"]) for r in records] == [
        (["a", "b", "c"], "timing s forward"), (["b"], "timing s forward graph capture"),
        (["a", "b", "c"], "timing s forward"), ([], "")]
    assert records[0] == records[2] and (records[1]["since"], records[1]["limit"]) == (records[0]["since"], 40.0)
    assert supervisor.last_launch(0).names == ()   # ended between launches: nobody's


ALONE_CHILD = '''\
import os, signal, sys, json
sys.path.insert(0, {root!r})
from compare.runtime import run_context, supervisor

left_out = {{c.name for c in run_context.culprits()}}
with supervisor.running([n for n in ("a", "b", "c") if n not in left_out], "timing s forward"):
    with supervisor.alone("b", "timing s forward graph capture"):
        if "b" not in left_out:
            os.kill(os.getpid(), signal.SIGABRT)
print(json.dumps([[c.name, c.reason] for c in run_context.culprits()]))
supervisor.done(0)
'''


def test_a_crash_inside_alone_names_that_variant_alone_for_the_supervisor(tmp_path, capfd):
    child = tmp_path / "child.py"
    child.write_text(ALONE_CHILD.format(root=str(ROOT)))
    assert supervise([sys.executable, str(child)]) == 0
    out, _ = capfd.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == [
        ["b", "crashed the process (SIGABRT) while running timing s forward graph capture"]]


@pytest.mark.parametrize("message, fatal", [
    ("CUDA error: an illegal memory access was encountered", True),
    ("CUDA error: unspecified launch failure", True),
    ("Triton Error [CUDA]: misaligned address", True),
    ("CUDA out of memory. Tried to allocate 2.00 GiB", False),
    ("InterpreterError: IndexError('index 3 is out of bounds')", False),
])
def test_fatal_device_errors_are_told_from_a_variants_own_errors(message, fatal):
    assert supervisor.is_fatal(RuntimeError(message)) is fatal


def test_the_launch_guard_reports_a_variants_fault_and_lets_the_run_end_on_what_is_not():
    assert supervisor.variant_fault("a", ValueError("bad block size")) == "ValueError: bad block size"
    assert supervisor.variant_fault("a", SystemExit(3)) == "SystemExit: 3"
    with pytest.raises(supervisor.Stopped):
        supervisor.variant_fault("a", supervisor.Stopped(signal.SIGTERM))
    with pytest.raises(supervisor.ContextPoisoned) as poisoned:
        supervisor.variant_fault("a", RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert (poisoned.value.variant, poisoned.value.error) == (
        "a", "poisoned the CUDA context (RuntimeError: CUDA error: an illegal memory access was encountered)")


def _start(args, tmp, **kwargs):
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "main.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _wait_for(tmp: Path, prefix: str, proc, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        try:   # the run's trees are in a scratch folder of its own (compare/model/scratch.py)
            if any(p.name.startswith(prefix) for p in tmp.rglob("*")):
                return
        except FileNotFoundError:   # a folder removed while it was walked
            pass
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"no {prefix}* appeared under {tmp}: {proc.communicate()[1][-2000:]}")


GIT_VARIANT = ["compare", "--variant", "old=git:HEAD:variants/group_norm/explicit_offset.py::group_norm_forward",
               "--check", "numerics", "--inputs", "all", "--quiet"]


def _kernel_repo(folder: Path) -> Path:
    """A git repository holding a copy of the project's `variants` package (any checkout, .git or not)."""
    from tests.op_package import git
    from tests.planted import variants_tree
    repo = variants_tree(folder / "repo")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "kernel")
    return repo


IR = ["ir", "--shape", "2,8,2,16", "--quiet"]
SAY = {signal.SIGTERM: (143, "kernel-ab: terminated (SIGTERM)"),
       signal.SIGINT: (130, "kernel-ab: interrupted (Ctrl-C)"),
       signal.SIGHUP: (129, "kernel-ab: hung up (SIGHUP)")}
# a stop before the checks leaves no report; one during them, the report of what was finished (test_interrupt.py)
ENDS = ("; no report", "; the report holds what was finished before it")


@pytest.mark.parametrize("signum, to_group, args, prefix", sampled([
    (signal.SIGINT, True, GIT_VARIANT, "kernel-ab-byok-"),     # Ctrl-C: to the terminal's whole process group
    (signal.SIGTERM, False, IR, "kernel-ab-ir-"),
    (signal.SIGTERM, False, IR, ""),                          # while the child starts
    (signal.SIGTERM, False, GIT_VARIANT, "kernel-ab-byok-"),   # what a CI timeout does: to the command alone
    (signal.SIGINT, False, GIT_VARIANT, "kernel-ab-byok-"),    # `timeout -s INT`: to the command alone
    (signal.SIGHUP, True, GIT_VARIANT, "kernel-ab-byok-"),     # the terminal closed
    (signal.SIGINT, True, IR, "kernel-ab-ir-"),                # while the IR worker compiles
], fast=3, several=True))
def test_an_interrupted_run_is_one_line_and_leaves_nothing_behind(signum, to_group, args, prefix, tmp_path):
    tmp = tmp_path / "tmp"   # the run's TMPDIR: empty again after it (no status file, tree or worker file)
    tmp.mkdir()
    if args is GIT_VARIANT:
        args = [*args, "--repo", str(_kernel_repo(tmp_path))]
    proc = _start(args, tmp, preexec_fn=os.setsid)   # a process group of its own, as a shell gives a command
    if prefix:
        _wait_for(tmp, prefix, proc)
        time.sleep(0.3)
    else:
        time.sleep(0.3)
    if to_group:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    code, line = SAY[signum]
    assert proc.returncode == code, err
    assert err.strip().splitlines() in ([line + ENDS[0]], [line + ENDS[1]])
    assert list(tmp.iterdir()) == []
    assert not _group_alive(proc.pid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.gpu
def test_a_variant_that_poisons_the_cuda_context_is_reported_and_the_others_come_out(tmp_path):
    """Compiled, the same out-of-bounds load is an illegal address: every later launch in the process
    would fail. The supervisor reruns without the variant; the others' numerics come out."""
    r, report = _compare_with_segfaulting(tmp_path, timeout=600)
    assert "Traceback" not in r.stderr
    bad = next(v for v in report["variants"] if v["name"] == "bad")
    assert bad["status"] == "failed" and bad["error"].startswith(("poisoned the CUDA context", "crashed the process"))
    (case,) = report["numerics"]["cases"]
    statuses = {v["variant"]: v["status"] for v in case["variants"]}
    assert statuses["explicit_offset"] == "pass" and "bad" not in statuses
