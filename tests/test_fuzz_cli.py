"""A table of malformed invocations, run in this process through `main.main`: each is one line on
stderr naming what was wrong, exit code 2, no traceback, nothing on stdout, and no work done first
(every case returns within seconds, huge shapes included)."""
import os
import signal
import time
from pathlib import Path

import pytest

import main

ROOT = Path(__file__).resolve().parent.parent


# (argv, a piece of the expected line): options out of range or malformed
OPTION_CASES = [
    (["frobnicate"], "invalid choice"),
    (["compare", "--trials", "x"], "invalid int value"),
    (["compare", "--device", "gpu"], "invalid choice"),
    (["compare", "--seed", "99999999999999999999"], "--seed must be at least 0 and at most 4294967295"),
    (["compare", "--seed", "-1"], "--seed must be at least 0"),
    (["compare", "--trials", "0"], "--trials must be at least 1"),
    (["compare", "--trials", "100000000000"], "--trials must be at least 1 and at most 10000, got 100000000000"),
    (["compare", "--rounds", "1"], "--rounds must be at least 2"),
    (["compare", "--rounds", "100001"], "--rounds must be at least 2 and at most 100000"),
    (["compare", "--calls", "0"], "--calls must be at least 1"),
    (["compare", "--calls", "1001"], "--calls must be at least 1 and at most 1000"),
    (["compare", "--target", "sm_10"], "unknown target 'sm_10'"),
    (["compare", "--target", "sm_999"], "unknown target 'sm_999'"),
    (["ir", "--target", "sm_999"], "unknown target 'sm_999'"),
    (["compare", "--target", "gfx90a"], "unknown target 'gfx90a'"),
    (["compare", "--stage", "bogus", "--check", "numerics"], "unknown stage 'bogus'"),
    (["ir", "--stage", "bogus"], "unknown stage 'bogus'"),
    (["compare", "--shape", "2,8,2,16", "--eps", "inf"], "--eps takes a finite number > 0, got inf"),
    (["compare", "--shape", "2,8,2,16", "--eps", "nan"], "--eps takes a finite number > 0"),
    (["compare", "--shape", "2,8,2,16", "--eps", "-1e-5"], "--eps takes a finite number > 0"),
    (["compare", "--eps", "1e-5"], "--eps applies to --shape only"),
    (["compare", "--preset", "edge", "--eps", "1e-5"], "--eps applies to --shape only"),
    (["compare", "--max-seconds", "-5"], "--max-seconds takes a finite number > 0"),
    (["compare", "--max-seconds", "nan"], "--max-seconds takes a finite number > 0"),
    (["compare", "--noise", "inf"], "--noise takes a finite number >= 0"),
    (["compare", "--modes", ""], "--modes is empty"),
    (["compare", "--modes", " , "], "--modes is empty"),
    (["compare", "--dtype", ""], "--dtype is empty"),
    (["compare", "--inputs", ","], "--inputs is empty"),
    (["compare", "--dtype", "float32,,float16"], "unknown dtype ''"),
    (["compare", "--fail-if-slower", "nan"], "--fail-if-slower takes a percentage >= 0"),
    (["compare", "--fail-if-slower", "inf"], "--fail-if-slower takes a percentage >= 0"),
    (["compare", "--fail-if-slower", "-1"], "--fail-if-slower takes a percentage >= 0"),
]
# shapes and eps the family refuses before anything is allocated, and variant or family names
SHAPE_CASES = [
    (["compare", "--shape", "2,8,2,16", "--eps", "1e39"], "eps must be a finite number from 1.2e-38 to 3.4e+38"),
    (["compare", "--family", "layer_norm", "--shape", "4,8", "--eps", "1e-45"], "got 1e-45"),
    (["compare", "--family", "rms_norm", "--shape", "4,8,nan,gemma"], "offset must be a finite number"),
    (["compare", "--family", "rms_norm", "--shape", "4,8,inf"], "offset must be a finite number"),
    (["compare", "--family", "rms_norm", "--shape", "4,8,-1e39,llama"], "(the kernels take it as a float32)"),
    (["compare", "--shape", "-2,8,2,16"], "batch must be a positive integer, got -2"),
    (["compare", "--shape", "2,8,2,0"], "spatial sizes must be positive"),
    (["compare", "--shape", "2,8,2,16x"], "is not BATCH,CHANNELS,GROUPS,SPATIAL"),
    (["compare", "--shape", ""], "--shape is empty; give BATCH,CHANNELS,GROUPS,SPATIAL"),
    (["compare", "--preset", " "], "--preset is empty"),
    (["compare", "--repo", ""], "--repo is empty"),
    (["compare", "--shape", "2,1000000000001,2,4"], "at most 2,147,483,647"),
    (["compare", "--shape", "100000,100000,1,1000x1000"], "at most 2,147,483,647"),
    (["compare", "--shape", "1,2147483647,7,1"], "must be divisible by num_groups (7); divisors of 2147483647 are 1, 2147483647"),
    (["compare", "--variant", "x"], "expected NAME=PATH::CALLABLE"),
    (["compare", "--variant", "n=git:::f"], "a git spec is git:REV:PATH::"),
    (["compare", "--family", "nosuch"], "unknown family 'nosuch'"),
]


def _malformed_files(tmp: Path) -> tuple[str, str, str]:
    """The files the path cases name, in `tmp`: a file, a folder, broken reports, notes and a pipe."""
    a_file = tmp / "a_file.txt"
    a_file.write_text("not a folder\n")
    (tmp / "a_folder").mkdir()
    (tmp / "list.json").write_text("[]")
    (tmp / "empty.json").write_text("{}")
    (tmp / "cut.json").write_text('{"family": "group_norm", ')
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (tmp / "notes.md").write_text("# my notes\n")
    os.mkfifo(tmp / "a_fifo")
    return str(a_file), str(tmp / "a_folder"), str(tmp / "notes.md")


def _path_cases(tmp: Path) -> list:
    """Output and report paths kernel-ab refuses to write or read (files made by _malformed_files)."""
    f, d, notes = _malformed_files(tmp)
    return [
        (["compare", "--out", "/proc/kernel-ab-out"], "--out /proc/kernel-ab-out: cannot write in /proc"),
        (["compare", "--out", f], "exists and is not a folder"),
        (["compare", "--out", f + "/sub"], "is a file, so no folder can be made under it"),
        (["compare", "--json", "/proc/r.json"], "cannot write in /proc"),
        (["compare", "--json", f + "/r.json"], "is not a folder"),
        (["compare", "--json", str(tmp / "no" / "such" / "r.json")], "does not exist"),
        (["compare", "--json", d], "is a folder; give a file name"),
        (["compare", "--markdown", d], "is a folder; give a file name"),
        (["ir", "--markdown", "/proc/ir.md"], "cannot write in /proc"),
        (["compare", "--json", ""], "--json is empty; give a file name"),
        (["compare", "--markdown", " "], "--markdown is empty"),
        (["compare", "--out", ""], "--out is empty; give a folder"),
        (["compare", "--json", "/dev/full"], "/dev/full is a character device, not a regular file"),
        (["compare", "--markdown", str(tmp / "a_fifo")], "is a pipe, not a regular file"),
        (["compare", "--json", notes], "holds a file kernel-ab did not write; give another path, or --force"),
        (["ir", "--markdown", notes], "holds a file kernel-ab did not write"),
        (["compare", "--json", str(tmp / "a_fifo"), "--force"], "is a pipe, not a regular file"),
        (["compare", "--json", str(tmp / "r.x"), "--markdown", str(tmp / "r.x")], "--json and --markdown both write"),
        (["compare", "--markdown", d + "/report.md", "--out", d], f"--markdown and --out {d} both write"),
        (["report", d], "is a folder; give the report.json in it"),
        (["report", str(tmp / "missing.json")], "does not exist"),
        (["report", str(tmp / "list.json")], "a report is a JSON object, got a list"),
        (["report", str(tmp / "empty.json")], "schema version None"),
        (["report", str(tmp / "cut.json")], "is not JSON"),
        (["report", str(tmp / "deep.json")], "is not JSON"),
        (["report", str(tmp / "binary.json")], "is not JSON"),
    ]


def _cases(tmp: Path):
    return OPTION_CASES + SHAPE_CASES + _path_cases(tmp)


def test_every_malformed_invocation_is_one_line_exit_2_no_traceback(tmp_path, capsys):
    failures = []
    for argv, expected in _cases(tmp_path):
        start = time.monotonic()
        rc = main.main(argv, prog="main.py")
        seconds = time.monotonic() - start
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        ok = (rc == 2 and len(lines) == 1 and lines[0].startswith("kernel-ab: error: ") and expected in lines[0]
              and "Traceback" not in err and out == "" and seconds < 30)
        if not ok:
            failures.append(f"{argv}: rc {rc}, {seconds:.1f} s, stderr {err!r}, stdout {out[:200]!r}")
    assert not failures, "\n".join(failures)
    # nothing was written where the refused paths point (/proc refuses writes itself, so only tmp_path can tell)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["a_file.txt", "a_folder", "list.json", "empty.json", "cut.json", "deep.json", "binary.json", "notes.md",
         "a_fifo"])
    assert (tmp_path / "notes.md").read_text() == "# my notes\n" and not list((tmp_path / "a_folder").iterdir())


def test_a_case_that_cannot_fit_is_refused_with_its_estimate_before_anything_is_allocated(monkeypatch, capsys):
    from compare.comparison import memory
    monkeypatch.setattr(memory, "host_available", lambda: 8 * 10**9)   # the same on any machine
    for argv, label in ((["--family", "layer_norm", "--shape", "1,2147450880"], "R1 H2147450880 float32"),
                        (["--shape", "1,65535,1,32768"], "N1 C65535 G1 S32768 float32")):
        start = time.monotonic()
        rc = main.main(["compare", *argv, "--check", "numerics", "--trials", "1"], prog="main.py")
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and time.monotonic() - start < 30, err
        assert err.startswith(f"kernel-ab: error: the case {label} needs about ") and len(err.splitlines()) == 1
        assert "GB of host memory" in err and "8.0 GB is free" in err


def test_the_estimate_grows_with_the_variants_and_names_the_gpu_there(monkeypatch):
    import torch
    from compare.comparison import memory, pipeline, plan
    from compare.runtime.backend import Backend
    from variants import registry
    family = registry().family("layer_norm")
    shape = family.parse_shape("4096,4096").shapes[0]
    two, three = (memory.case_need(family, shape, torch.float16, n, True, False, True) for n in (2, 3))
    assert three.device - two.device == 4096 * 4096 * 2 + 2 * 4096 * 2   # one more set of y, mean, rstd
    assert two.host == three.host == 8 * (2 * 4096 * 4096 + 2 * 4096)   # x, dy, W, B drawn in float64
    monkeypatch.setattr(memory, "device_available", lambda: two.device // 2)
    request = pipeline.Request(variants=(), family="layer_norm", shape="4096,4096", dtype="float16",
                               checks=("numerics",))
    with pytest.raises(memory.UsageError, match=r"R4096 H4096 float16 needs about .* GB of GPU memory"):
        memory.refuse_what_cannot_fit(plan.build(request, registry()), Backend("cuda", False, "test"))
    memory.refuse_what_cannot_fit(plan.build(request, registry()), Backend("cpu", True, "test"))   # the host has room


@pytest.mark.parametrize("prog, hint", [("main.py", "(see `python main.py --help`)"),
                                        ("kernel-ab", "(see `kernel-ab --help`)")])
def test_the_hint_names_the_program_the_user_ran(prog, hint, capsys):
    assert main.main(["frobnicate"], prog=prog) == 2
    assert capsys.readouterr().err.strip().endswith(hint)
    assert main.main(["compare", "--trials", "x"], prog=prog) == 2
    assert capsys.readouterr().err.strip().endswith(hint.replace(" --help", " compare --help"))


def test_the_kernel_ab_command_runs_the_same_cli(monkeypatch, capsys):
    text = (ROOT / "pyproject.toml").read_text()
    assert 'kernel-ab = "kernel_ab:cli"' in text and '"numpy' in text   # kernel_ab.cli runs main.cli
    monkeypatch.setattr("sys.argv", ["/venv/bin/kernel-ab", "frobnicate"])
    with pytest.raises(SystemExit) as exit_:
        main.cli()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith("(see `kernel-ab --help`)")


def test_interrupt_while_importing_a_variant_file_is_one_line_and_130(tmp_path, capsys):
    kernel = tmp_path / "slow_kernel.py"
    kernel.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while this file imports\n")
    before = signal.getsignal(signal.SIGINT)
    rc = main.main(["compare", "--variant", f"k={kernel}::fwd", "--check", "numerics"], prog="main.py")
    err = capsys.readouterr().err
    assert rc == 130 and err.strip() == "kernel-ab: interrupted (Ctrl-C); no report"
    assert signal.getsignal(signal.SIGINT) is before   # main() leaves the caller's handlers as it found them


def test_a_keyboard_interrupt_raised_by_a_variant_file_is_that_variants_failure(tmp_path, capsys):
    kernel = tmp_path / "raises.py"
    kernel.write_text("raise KeyboardInterrupt  # the file's own doing, not the user's\n")
    rc = main.main(["compare", "explicit_offset", "--variant", f"k={kernel}::fwd", "--check", "numerics",
                    "--shape", "2,8,2,16", "--inputs", "normal", "--trials", "1", "--quiet"], prog="main.py")
    out = capsys.readouterr().out
    assert rc == 0 and "variant k could not be loaded: import of" in out and "KeyboardInterrupt" in out


def test_readme_first_commands_are_what_ci_runs_in_a_fresh_venv():
    import importlib.util
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    first, second = module.commands((ROOT / "README.md").read_text())
    assert first.startswith("python3 -m pip install torch==") and first.endswith("&& python3 main.py compare")
    assert "pip install -e ." in first and "[test" not in first   # the main job installs no extras
    assert second.endswith('&& python3 -m pytest -q -rs -n 2 -m "not slow"')
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m venv" in ci and "readme_commands.py" in ci and "set -euo pipefail" in ci
    assert "python3 -m pytest -q -rs -n 2 -m slow" in ci   # what the README's command leaves out still runs


def test_the_installed_kernel_ab_command_names_itself():
    import shutil
    import subprocess
    exe = shutil.which("kernel-ab")
    if exe is None:
        pytest.skip("kernel-ab is not installed here (pip install -e . puts it on PATH; CI's fresh venv has it)")
    r = subprocess.run([exe, "compare", "--trials", "x"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "kernel-ab: error: argument --trials: invalid int value: 'x' (see `kernel-ab compare --help`)"]
