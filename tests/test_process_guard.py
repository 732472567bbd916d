"""Process-wide state (compare/runtime/process_guard.py, process_flags.py, supervisor.py, supervision.py): what a
variant's import or call does to the process it shares with kernel-ab and the other variants (a patched
torch, triton or kernel-ab function, a flag, the environment, the working directory, signals, atexit, a
forged status, a stop it sends itself, a process that leaves the session) is named as what it did with
the failure kind TAMPER, gives it no verdict, fails the gates, moves no other variant's numbers, and
never outlives the report."""
import atexit
import importlib.machinery
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

from compare.runtime import process_guard, supervisor

from compare.processes import supervision
from compare.model.results import Failure

ROOT = Path(__file__).resolve().parent.parent
SHAPE = "1,2,1,4"   # the hostile sweep's group_norm shape: the smallest the family takes

HOSTILE = '''\
import os, sys, signal, json, time, atexit
import torch
import torch.nn.functional as F


def act():
{act}


{at_import}


def op(X, W, B, num_channels, num_groups, eps):
    {at_call}
    return F.group_norm(X, num_groups, W, B, eps)
'''
OK = '''\
import torch.nn.functional as F


def op(X, W, B, num_channels, num_groups, eps):
    return F.group_norm(X, num_groups, W, B, eps)
'''

FORGE_DONE = '''\
    with open(sys.modules["compare.runtime.run_context"]._CHANNEL["status"], "a") as f:
        f.write(json.dumps({"done": 0}) + "\\n")
    os._exit(0)'''
DOUBLE_FORK = '''\
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "600"])
        os._exit(0)
    os.waitpid(pid, 0)'''

# (name, the act, at import or in the call, how the report starts saying it)
ACTS = [
    ("native_group_norm", "torch.native_group_norm = lambda *a, **k: None", "call", "patched torch.native_group_norm"),
    ("tensor_ne", "torch.Tensor.__ne__ = lambda a, b: torch.zeros_like(a, dtype=torch.bool)", "import",
     "patched torch.Tensor.__ne__"),
    ("tl_rsqrt", "import triton.language as tl; tl.rsqrt = tl.sqrt", "import", "patched triton.language.rsqrt"),
    ("reference", 'type(sys.modules["variants.group_norm"].FAMILY).reference = lambda self, inputs, shape: {}', "call",
     "patched variants.group_norm.GroupNorm.reference"),
    ("elapsed_time", "torch.cuda.Event.elapsed_time = lambda self, end: 1e-6", "import",
     "patched torch.cuda.Event.elapsed_time"),
    ("synchronize", "torch.cuda.synchronize = lambda *a: None", "call", "patched torch.cuda.synchronize"),
    ("own_function", 'sys.modules["compare.checks.numerics"].measure = lambda *a, **k: None', "call",
     "patched compare.checks.numerics.measure"),
    ("own_code", 'f = sys.modules["compare.checks.numerics"].verdict; f.__code__ = (lambda *a, **k: None).__code__',
     "call", "patched compare.checks.accuracy.verdict"),   # re-exported by numerics, named where it lives
    ("flush_denormal", "torch.set_flush_denormal(True)", "import", "turned on flush-denormal"),
    ("no_grad", "torch.set_grad_enabled(False)", "call", "disabled grad"),
    ("meta_device", 'torch.set_default_device("meta")', "import", "set the default device to meta"),
    ("recursion_limit", "sys.setrecursionlimit(50)", "call", "set the recursion limit from"),
    ("timeout_env", 'os.environ["KERNEL_AB_VARIANT_TIMEOUT"] = "0.001"', "import",
     "changed os.environ (KERNEL_AB_VARIANT_TIMEOUT)"),
    ("status_env", 'os.environ["KERNEL_AB_STATUS_FILE"] = os.devnull', "call", "changed os.environ (KERNEL_AB_STATUS_FILE)"),
    ("signal_handler", "signal.signal(signal.SIGTERM, signal.SIG_IGN)", "import", "installed signal handlers (SIGTERM)"),
    ("alarm", "signal.alarm(600)", "import", "set an alarm"),
    ("sigterm", "os.kill(os.getpid(), signal.SIGTERM)", "call", "sent the process SIGTERM"),
    ("sigint", "os.kill(os.getpid(), signal.SIGINT)", "import", "sent the process SIGINT"),
    ("atexit_hang", "atexit.register(time.sleep, 3600)", "import", "registered an atexit handler (at bad.py:"),
    ("forged_done", FORGE_DONE, "call", "forged kernel-ab's status (a 'done' without the run's token)"),
    # named by what it runs when the guard sees it: "sleep", or still "python3" between its fork and its exec
    ("setsid_child", DOUBLE_FORK, "call", "started process "),
]
# these stay in the default run (one of each mechanism: a patch at import, the environment, a stop the
# variant sent, a forged status, atexit); the rest are slow
QUICK = {"tensor_ne", "sigterm"}


def _hostile(folder: Path, act: str, when: str) -> Path:
    body = "\n".join("    " + line if not line.startswith("    ") else line for line in act.splitlines())
    path = folder / "bad.py"
    path.write_text(HOSTILE.format(act=body, at_import="act()" if when == "import" else "",
                                   at_call="act()" if when == "call" else "pass"))
    return path


def _compare(folder: Path, *extra: str, cwd: Path = ROOT, variants=("explicit_offset",)) -> tuple:
    (folder / "ok.py").write_text(OK)
    out = folder / "r.json"
    r = subprocess.run([sys.executable, str(ROOT / "main.py"), "compare", *variants, "--variant",
                        f"ok={folder / 'ok.py'}::op", *extra, "--shape", SHAPE, "--check", "numerics",
                        "--inputs", "normal", "--trials", "1", "--quiet", "--json", str(out), "--fail-on-numerics"],
                       cwd=cwd, capture_output=True, text=True, timeout=180)
    return r, json.loads(out.read_text()) if out.exists() else None


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The run without any culprit: the numbers every other variant must keep."""
    r, report = _compare(tmp_path_factory.mktemp("clean"))
    assert r.returncode == 0, r.stderr
    return report["numerics"]["cases"]


def _bad(report) -> dict:
    return next(v for v in report["variants"] if v["name"] == "bad")


@pytest.mark.parametrize("name, act, when, said", [
    pytest.param(*a, marks=() if a[0] in QUICK else pytest.mark.slow, id=a[0]) for a in ACTS])
def test_a_variant_that_changes_the_shared_process_is_named_and_moves_no_other_verdict(name, act, when, said,
                                                                                      tmp_path, clean):
    bad = _hostile(tmp_path, act, when)
    start = time.monotonic()
    r, report = _compare(tmp_path, "--variant", f"bad={bad}::op")
    assert r.returncode == 1, r.stderr   # the gate fails: it never passes beside a culprit
    assert time.monotonic() - start < 120   # and the run ended (a hanging atexit handler does not hold it)
    info = _bad(report)
    assert (info["status"], info["failure"]) == ("failed", Failure.TAMPER.value), info
    assert info["error"].startswith(said), info["error"]
    assert report["numerics"]["cases"] == clean   # every other variant's numbers, pairs and verdicts as without it
    assert f"variant bad tampered with the process: {said}" in r.stderr
    if name == "setsid_child":   # the process it started is gone with the run
        assert "in a session of its own (setsid)" in info["error"], info["error"]
        pid = int(info["error"].split("(")[1].split(")")[0])
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]


def test_the_layer_norm_op_that_patches_f_layer_norm_at_import_wins_nothing(tmp_path):
    """The issue's worst case: an op whose file replaces F.layer_norm (ignoring eps) at import made the
    float64 reference its own and the correct baseline fail. Now it is excluded, named, and the gates fail."""
    (tmp_path / "ln.py").write_text('''\
import torch.nn.functional as F
_original = F.layer_norm
F.layer_norm = lambda x, shape, w=None, b=None, eps=1e-5: _original(x, shape, w, b, 0.0)


def op(X, W, B, eps):
    return F.layer_norm(X, (X.shape[-1],), W, B, eps)
''')
    args = [sys.executable, "main.py", "compare", "--family", "layer_norm", "bwd_pointer_mutation", "--shape", "2,8",
            "--check", "numerics", "--inputs", "normal", "--trials", "1", "--quiet", "--fail-on-numerics",
            "--fail-if-slower", "2", "--accept-unjudged"]
    r = subprocess.run(args + ["--variant", f"bad={tmp_path / 'ln.py'}::op", "--json", str(tmp_path / "r.json")],
                       cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert r.returncode == 1, r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    info = _bad(report)
    assert info["failure"] == "tamper" and info["error"].startswith("patched torch.nn.functional.layer_norm while "
                                                                     "running import of ")
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["--fail-if-slower"]["outcome"] == "failed"   # even a gate with no timing to judge
    cases = report["numerics"]["cases"]
    assert {v["variant"]: v["status"] for c in cases for v in c["variants"]} == {"bwd_pointer_mutation": "pass",
                                                                                "torch": "pass"}


@pytest.mark.slow
def test_a_relative_out_lands_where_the_user_meant_though_a_variant_changes_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bad = _hostile(tmp_path, f"os.chdir({str(elsewhere)!r})", "call")
    r, _ = _compare(tmp_path, "--variant", f"bad={bad}::op", "--out", "out", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "out" / "report.json").is_file() and not (elsewhere / "out").exists()
    assert f"changed the working directory to {elsewhere} (os.chdir)" in r.stderr


@pytest.mark.slow
def test_a_culprit_in_a_task_worker_is_named_as_in_the_child(tmp_path, clean):
    bad = _hostile(tmp_path, "torch.Tensor.__ne__ = lambda a, b: True", "call")
    r, report = _compare(tmp_path, "--variant", f"bad={bad}::op", "--jobs", "2")
    assert r.returncode == 1, r.stderr
    info = _bad(report)
    assert info["failure"] == "tamper" and info["error"].startswith("patched torch.Tensor.__ne__ while running numerics")
    assert report["numerics"]["cases"] == clean


# ---------------------------------------------------------------- the guard itself, in this process
def _noop_handler():
    pass


PATCHES = {
    "patched torch.nn.functional.layer_norm": lambda: setattr(torch.nn.functional, "layer_norm", len),
    "patched torch.native_group_norm": lambda: setattr(torch, "native_group_norm", len),
    "patched torch.Tensor.__ne__": lambda: setattr(torch.Tensor, "__ne__", lambda a, b: True),
    "patched torch.cuda.Event.elapsed_time": lambda: setattr(torch.cuda.Event, "elapsed_time", len),
    "patched compare.runtime.sealing.writes": lambda: setattr(sys.modules["compare.runtime.sealing"], "writes", len),
    "patched compare.runtime.sealing.merge": lambda: setattr(sys.modules["compare.runtime.sealing"].merge, "__code__",
                                                             (lambda found: ()).__code__),   # the code swapped
    "turned on flush-denormal (torch.set_flush_denormal)": lambda: torch.set_flush_denormal(True),
    "disabled grad (torch.set_grad_enabled)": lambda: torch.set_grad_enabled(False),
    "set the default device to meta (torch.set_default_device)": lambda: torch.set_default_device("meta"),
    # lowered a little: 50, as in the hostile sweep, can end a pytest-xdist worker's own threads before it is put back
    "set the recursion limit from": lambda: sys.setrecursionlimit(sys.getrecursionlimit() - 1),
    "changed os.environ (KERNEL_AB_VARIANT_TIMEOUT)": lambda: os.environ.update(KERNEL_AB_VARIANT_TIMEOUT="0.001"),
    "installed signal handlers (SIGUSR1)": lambda: signal.signal(signal.SIGUSR1, lambda *a: None),
    "registered an atexit handler (at test_process_guard.py:": lambda: atexit.register(_noop_handler),
}


@pytest.mark.parametrize("said", list(PATCHES))
def test_the_guard_names_each_change_and_puts_it_back(said):
    import compare.runtime.sealing  # noqa: F401 (a kernel-ab module the guard watches)
    guard = process_guard.enable()
    before = guard.take()
    PATCHES[said]()
    try:
        found = guard.undo(before)
    finally:
        atexit.unregister(_noop_handler)
    assert len(found) == 1 and found[0].startswith(said), found
    assert guard.undo(guard.take()) == []
    if "atexit" not in said:   # an atexit handler cannot be taken back: the process ends as poisoned
        assert guard.undo(before) == []   # everything as it was
    assert torch.is_grad_enabled() and str(torch.get_default_device()) == "cpu" and sys.getrecursionlimit() > 50
    assert compare.runtime.sealing.merge([]) == () and compare.runtime.sealing.merge.__code__.co_name == "merge"


class _LibraryFinder:
    def find_spec(self, *args, **kwargs):
        return None


def test_what_the_platform_changes_by_itself_is_not_a_variants_doing():
    guard = process_guard.enable()
    before = guard.take()
    limit = sys.getrecursionlimit()
    os.environ["KERNEL_AB_TEST_NEVER_SET"] = "x"
    del os.environ["KERNEL_AB_TEST_NEVER_SET"]
    os.environ["SOME_LIBRARYS_CACHE_DIR"] = "/tmp"   # a library adding its own variable (torch.compile does)
    sys.setrecursionlimit(limit + 1000)               # torch.compile raises the limit
    finder = _LibraryFinder()
    sys.meta_path.append(finder)                      # a library's own finder (transformers adds one on import)
    try:
        assert guard.undo(before) == []
        sys.meta_path.remove(finder)
        taken = sys.meta_path.pop(0)                  # ... but a finder that was there taken away is a change
        try:
            found = guard.undo(before)
        finally:
            sys.meta_path.insert(0, taken)
        assert [f for f in found if "import machinery" in f], found
    finally:
        del os.environ["SOME_LIBRARYS_CACHE_DIR"]
        sys.setrecursionlimit(limit)
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    assert Failure(supervisor.TAMPER) is Failure.TAMPER


def test_copyregs_cache_of_slot_names_is_the_platforms_and_a_forged_one_is_not():
    """torch.compile copies Triton's JITFunction while it captures a graph, and copyreg caches the class's slot
    names on it (`__slotnames__`): the H200 saw every honest torch.compile variant called a tamperer for it."""
    import copyreg
    from triton.runtime.jit import JITFunction
    if "__slotnames__" in vars(JITFunction):
        del JITFunction.__slotnames__
    guard = process_guard.enable()
    before = guard.take()
    copyreg._slotnames(JITFunction)
    assert "__slotnames__" in vars(JITFunction) and guard.undo(before) == []
    del JITFunction.__slotnames__
    JITFunction.__slotnames__ = ["fn"]   # one copyreg would not compute: pickling would lose or forge state
    assert [f for f in guard.undo(before) if "JITFunction.__slotnames__" in f], "a forged slot list passed"
    assert "__slotnames__" not in vars(JITFunction)   # and it was taken back


# ---------------------------------------------------------------- the supervisor decides the outcome
FAKE = '''\
import os, signal, sys, json, time
sys.path.insert(0, {root!r})
from compare.runtime import run_context, supervisor
WORKER = ("import sys; sys.path.insert(0, {root!r}); from compare.runtime import run_context, supervisor\\n"
          "try: supervisor.tampered(['a'], 'patched torch.cuda.Event.elapsed_time', 'timing S forward')\\n"
          "except supervisor.ContextPoisoned: sys.exit(75)")

print(json.dumps({{"excluded": [[c.name, c.reason] for c in run_context.culprits()], "kinds": [c.kind for c in run_context.culprits()]}}))
for name in ("a", "b"):
    if name in {{c.name for c in run_context.culprits()}}:
        continue
    with supervisor.running((name,), "case of " + name):
        if name == "a":
{act}
supervisor.done(0)
{after}
'''


def _fake(tmp_path, act: str, after: str = "") -> list:
    child = tmp_path / "child.py"
    child.write_text(FAKE.format(root=str(ROOT), act="\n".join("            " + a for a in act.splitlines()),
                                 after=after))
    return [sys.executable, str(child)]


@pytest.mark.parametrize("act, said", [
    ('open(run_context._CHANNEL["status"], "a").write(json.dumps({"done": 0}) + "\\n"); os._exit(0)',
     "forged kernel-ab's status (a 'done' without the run's token) while running case of a"),
    ("supervisor.install_stop_handlers()\ntry:\n    os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)\n"
     "except supervisor.Stopped as stop:\n    supervisor.done(stop.exit_code); sys.exit(stop.exit_code)",
     "sent the process SIGTERM while running case of a"),
    # a timing worker (a process the child starts, writing to the same status file) found its process tampered
    ("import subprocess\nsubprocess.run([sys.executable, '-c', WORKER], "
     "env={**os.environ, **dict(zip((run_context.STATUS_ENV, run_context.TOKEN_ENV), run_context.channel()))})",
     "patched torch.cuda.Event.elapsed_time while running timing S forward"),
])
def test_an_outcome_the_variant_decided_is_not_the_runs(act, said, tmp_path, capfd):
    assert supervision.supervise(_fake(tmp_path, act)) == 0
    out, err = capfd.readouterr()
    last = json.loads(out.strip().splitlines()[-1])
    assert last == {"excluded": [["a", said]], "kinds": [supervisor.TAMPER]}
    assert f"kernel-ab: variant a {said}; running again without it" in err


def test_a_child_that_does_not_end_after_its_report_is_stopped(tmp_path, capfd, monkeypatch):
    monkeypatch.setattr(supervision, "AFTER_DONE_S", 0.5)
    start = time.monotonic()
    assert supervision.supervise(_fake(tmp_path, "pass", after="time.sleep(600)")) == 0
    assert time.monotonic() - start < 30
    assert "did not end within 0.5 s after its report" in capfd.readouterr().err


# ---------------------------------------------------------------- on the GPU: timing and torch.compile
def _gpu_compare(tmp_path, *args):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "main.py", "compare", *args, "--shape", "4,64,16,512", "--rounds", "20",
                        "--max-seconds", "5", "--quiet", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    return r, json.loads(out.read_text()) if out.exists() else None


@pytest.mark.gpu
def test_a_variant_that_patches_the_timer_when_timed_is_named_and_the_rest_is_timed(tmp_path):
    """The patch comes in the timing worker's warm-up (only timing runs): the worker's process is found
    tampered, and the supervisor runs again without the variant."""
    bad = _hostile(tmp_path, "torch.cuda.Event.elapsed_time = lambda self, end: 1e-6", "call")
    r, report = _gpu_compare(tmp_path, "explicit_offset", "--variant", f"bad={bad}::op", "--check", "timing",
                             "--fail-if-slower", "50")
    assert r.returncode == 1, r.stderr
    info = _bad(report)
    assert info["failure"] == "tamper" and info["error"].startswith("patched torch.cuda.Event.elapsed_time while "
                                                                     "running timing"), info
    timed = {v["variant"] for c in report["timing"]["cases"] for v in c["variants"]}
    assert timed == {"explicit_offset"}


@pytest.mark.gpu
def test_honest_variants_torch_compile_included_are_never_flagged_on_the_gpu(tmp_path):
    r, report = _gpu_compare(tmp_path, "explicit_offset", "pointer_mutation", "torch", "inductor",
                             "--check", "numerics", "--check", "backward", "--check", "timing")
    assert r.returncode == 0, r.stderr
    assert all(v["status"] == "ok" for v in report["variants"]), report["variants"]
    assert "tampered" not in r.stderr and "running again" not in r.stderr


def _loaded(name: str, path: str):
    """A module as a load of the compiled file `path` under `name` leaves it (no file is read)."""
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, importlib.machinery.ExtensionFileLoader(name, path),
                                                     origin=path)
    return module


def test_a_compiled_launcher_loaded_again_under_its_name_is_the_platforms_and_a_replaced_module_is_not():
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    table = process_guard._module_table()
    first, later = (_loaded("__triton_launcher", f"/cache/{h}/__triton_launcher{suffix}") for h in ("a1", "b2"))
    assert table.say({"__triton_launcher": first}, {"__triton_launcher": later}) == []
    other = _loaded("__triton_launcher", f"/tmp/evil{suffix}")   # another file's build
    assert table.say({"__triton_launcher": first}, {"__triton_launcher": other}) == \
        ["replaced sys.modules['__triton_launcher']"]
    plain = types.ModuleType("json")
    assert table.say({"json": json}, {"json": plain}) == ["replaced sys.modules['json']"]
    assert table.say({"json": json}, {}) == ["removed sys.modules['json']"]
